package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/status"
)

// Stage is the stage child workflow: it runs one stage's execution steps (and its rollback
// steps when a failure strategy asks for them) and returns the stage's node tree and data.
func Stage(ctx workflow.Context, in StageInput) (*StageResult, error) {
	backfillTraits([]*plan.Node{in.Stage})
	if in.Batch != nil {
		backfillTraits([]*plan.Node{in.Batch.Node})
		return runBatch(ctx, in)
	}
	s := newStageRun(ctx, in)
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	s.run(ctx)
	s.recordLedger(ctx)
	s.finalCommitStatus(ctx)
	res := &StageResult{Tree: s.tree, Data: s.data, PipelineRollback: s.pipelineRollback, Aborted: s.aborted, Locks: s.constraint.releaseLocks(ctx),
		OutputBytes: s.outputs.total}
	// Before settle, which may block and let flushWaiting send the owed report.
	if s.decisions.owed != nil {
		s.decisions.owed, res.WaitingCleared = nil, true
	}
	s.settle(ctx)
	if err := closing(ctx, s.tree.Status, s.tree, *res); err != nil {
		return nil, err
	}
	return res, nil
}

// signal sends a signal to another workflow of the execution and keeps its future for settle.
func (s *stageRun) signal(ctx workflow.Context, workflowID, name string, arg any) {
	s.signals = append(s.signals, workflow.SignalExternalWorkflow(ctx, workflowID, "", name, arg))
}

// settle waits until every signal the stage sent is recorded as delivered before the stage
// completes. Otherwise the delivery event can arrive while the stage's last workflow task is
// being completed, most often on a loaded machine; Temporal then fails that task
// (UNHANDLED_COMMAND) and drops the update it carried, such as the decision that ended the
// stage. The starter sends such an update again, but it should not have to.
func (s *stageRun) settle(ctx workflow.Context) {
	if workflow.GetVersion(ctx, changeSettleSignals, workflow.DefaultVersion, 1) < 1 {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, f := range s.signals {
		_ = f.Get(dctx, nil) // a failed delivery (the pipeline closed) settles too
	}
}

// listen installs the stage's query, update and signal handlers.
func (s *stageRun) listen(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return s.tree, nil }); err != nil {
		return err
	}
	if err := s.decisions.registerIntervene(ctx); err != nil {
		return err
	}
	if err := s.decisions.registerApprove(ctx); err != nil {
		return err
	}
	if err := s.decisions.registerInput(ctx); err != nil {
		return err
	}
	s.listenPause(ctx)
	workflow.Go(ctx, s.decisions.flushWaiting)
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, signalExpire).Receive(ctx, nil)
		s.expire()
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, signalBarrierResult)
		for {
			var r BarrierResult
			if !ch.Receive(ctx, &r) {
				return
			}
			s.barriers[r.Ref] = r.Result
			// Iterations running in loop batches wait at barriers too.
			if len(s.batchRuns) > 0 && workflow.GetVersion(ctx, changeBatchBarriers, workflow.DefaultVersion, 1) == 1 {
				for _, id := range sortedIDs(s.batchRuns) {
					s.batchRuns[id].SignalChildWorkflow(ctx, signalBarrierResult, r)
				}
			}
		}
	})
	return nil
}

// stageRun is one stage's interpreter state.
type stageRun struct {
	in       StageInput
	root     map[string]any // {"pipeline": ...}: what expressions read
	data     map[string]any // this stage's node in root
	tree     *Node
	details  treeRenderer // renders tree for publish
	fqn      string       // pipeline.stages.<id>
	terminal []ended      // terminal nodes so far, for currentStatus (spec 4.3)

	forward          *frame // the execution steps; halted when progression must stop
	cancelBody       workflow.CancelFunc
	aborted          bool // an abort: nothing new starts, running steps are cancelled
	expired          bool // the stage or pipeline timer fired: running nodes end EXPIRED
	stageRollback    bool // a StageRollback action fired
	pipelineRollback bool // a PipelineRollback action fired
	running          map[string]*runningStep
	loopPaths        map[string]bool                         // paths of loop iterations: not part of currentStatus
	activeSteps      int                                     // step activities running now (MaxRunningSteps)
	barriers         map[string]string                       // barrier ref → outcome, as the pipeline reported it
	fastVersion      *workflow.Version                       // changeFastPath, read at the first eligible step
	stopVersion      *workflow.Version                       // changeStopConfirmed, read at the first heartbeating step
	fastUnflushed    time.Duration                           // fast-path step time not yet persisted in history
	fastTask         int                                     // history length when those steps ran
	signals          []workflow.Future                       // signals sent to other workflows, for settle
	paused           bool                                    // the execution is paused: no node starts
	stepInfo         map[string]stepNote                     // steps' base paths and scopes, for their events
	batchRuns        map[string]workflow.ChildWorkflowFuture // running loop batches by workflow ID
	statusSent       func() bool                             // the last commit status report is done (nil: none)
	chainStarts      int                                     // chained executions started (a Pipeline stage's retries)

	// The concerns, each holding the state it owns (their methods are in the file named).
	dep        *deployment   // deploy.go: the service, environment and infrastructure of a Deployment stage
	constraint *constraints  // constraint.go: resource constraints and Queue steps
	pods       *pods         // pod.go: containerized groups' and Container steps' pods
	build      *buildMachine // machine.go: a CI stage's session on a build machine
	ticketing  *ticketing    // tickets.go: Jira, ServiceNow and custom approvals
	notices    *notices      // notify.go: the notification events the stage raises
	decisions  *decisions    // intervene.go, approval.go, inputs.go: what waits for people
	verifier   *verifier     // verify.go: Verify steps' analyses
	outputs    *outputBudget // outputs.go: the output variables the stage keeps, against its limit
}

// frame is one list being run: the stage's execution steps, a step group's steps or a
// rollback section. A halted frame visits no further nodes.
type frame struct {
	parent   *frame
	halted   bool
	rollback bool               // a rollback section: an unhandled failure stops it (spec 5.10.4)
	group    *plan.Node         // the group this frame runs, nil otherwise
	retries  int                // RetryStepGroup re-runs done
	retry    bool               // a step asked for the group to run again
	interval string             // the wait before that run
	undo     bool               // a step asked for StepGroupRollback
	root     map[string]any     // a loop iteration's expression roots (strategy, matrix, repeat)
	pod      *contract.PodInput // a containerized group's pod
}

// rootFor returns the expression roots in effect in a frame.
func (s *stageRun) rootFor(fr *frame) map[string]any {
	for x := fr; x != nil; x = x.parent {
		if x.root != nil {
			return x.root
		}
	}
	return s.root
}

func (f *frame) stopped() bool {
	for x := f; x != nil; x = x.parent {
		if x.halted {
			return true
		}
	}
	return false
}

// groupFrame returns the frame running group id (the innermost group when id is "").
func (f *frame) groupFrame(id string) *frame {
	for x := f; x != nil; x = x.parent {
		if x.group != nil && (id == "" || x.group.ID == id) {
			return x
		}
	}
	return nil
}

// rollbackFrame returns the innermost rollback section being run.
func (f *frame) rollbackFrame() *frame {
	for x := f; x != nil; x = x.parent {
		if x.rollback {
			return x
		}
	}
	return nil
}

func newStageRun(ctx workflow.Context, in StageInput) *stageRun {
	st := in.Stage
	root := in.Context
	if root == nil {
		root = map[string]any{}
	}
	stages := child(child(root, "pipeline"), "stages")
	data := map[string]any{
		"identifier": st.ID, "name": st.Name, "type": st.Type, "description": st.Description,
		"tags": st.Tags, "status": string(status.Running), "currentStatus": string(status.Succeeded),
		"liveStatus": string(status.Succeeded), "variables": map[string]any{},
	}
	if st.Postfix != "" {
		data["identifierPostFix"] = st.Postfix
		if lvl, ok := root["strategy"].(map[string]any); ok {
			data["matrix"] = lvl["matrix"]
		}
	}
	stages[st.ID] = data
	now := workflow.Now(ctx)
	path := join(in.PathPrefix, st.ID)
	tree := &Node{Path: path, ID: st.ID, Name: st.Name, Kind: string(plan.KindStage), Type: st.Type,
		Status: status.Running, StartedAt: &now, Template: st.Template}
	if in.Mode == ModePipelineRollback {
		tree.Children = childTree(&plan.Node{Rollback: st.Rollback}, path)
	} else {
		tree.Children = childTree(st, path)
	}
	s := &stageRun{in: in, root: root, data: data, tree: tree, fqn: "pipeline.stages." + st.ID,
		forward: &frame{}, running: map[string]*runningStep{}, loopPaths: map[string]bool{}, barriers: map[string]string{},
		stepInfo: map[string]stepNote{}}
	s.withConcerns()
	s.notices.raiser = newRaiser(in.Notify)
	return s
}

// withConcerns gives the stage its concerns, each with its state empty.
func (s *stageRun) withConcerns() {
	s.dep = &deployment{stageRun: s}
	s.constraint = &constraints{stageRun: s}
	s.pods = &pods{stageRun: s}
	s.build = &buildMachine{stageRun: s}
	s.ticketing = &ticketing{stageRun: s}
	s.notices = &notices{stageRun: s}
	s.decisions = &decisions{stageRun: s, waiting: map[string]*pending{}, waitStatus: map[string]status.Status{},
		approvals: map[string]*approval{}, inputs: map[string]*inputWait{}}
	s.verifier = &verifier{stageRun: s}
	s.outputs = newOutputBudget(s.in.OutputLimit)
}

func (s *stageRun) run(ctx workflow.Context) {
	st := s.in.Stage
	body, cancel := workflow.WithCancel(ctx)
	s.cancelBody = cancel
	defer cancel()
	if st.Timeout != "" && workflow.GetVersion(ctx, changeTimeouts, workflow.DefaultVersion, 1) == 1 {
		if err := s.startTimer(body, st.Timeout); err != nil {
			s.finish(ctx, status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()})
			return
		}
	}
	if err := renderVariables(st.Variables, child(s.data, "variables"), s.root, s.fqn); err != nil {
		s.finish(ctx, status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()})
		return
	}
	children, tree := st.Children, s.tree.Children
	prov := provisionerOf(st, s.in.Mode)
	if st.Deploy != nil && s.in.Mode != ModePipelineRollback && s.in.Batch == nil && !s.checkFreeze(ctx) {
		return
	}
	if st.Deploy != nil && prov == nil {
		if err := s.dep.deployContext(ctx); err != nil {
			s.finish(ctx, status.Failed, contract.Classify(err))
			return
		}
		if !s.constraint.holdInfrastructure(body) {
			s.finishStopped(ctx)
			return
		}
	}
	if st.Pod != nil && s.in.Mode != ModePipelineRollback {
		// A CI stage: one pod for all its steps (spec 22.1), deleted however the stage ends.
		pod, f := s.pods.startPod(body, st, s.tree, s.fqn, s.forward)
		if f != nil && st.Pod.Machine != nil && body.Err() != nil {
			s.finishStopped(ctx) // aborted or timed out while waiting for a build machine
			return
		}
		if f != nil {
			s.finish(ctx, status.Failed, f)
			return
		}
		s.forward.pod = pod
		defer s.pods.stopPod(ctx, pod)
	}
	execution := child(child(s.data, "spec"), "execution")
	if s.in.Mode == ModePipelineRollback {
		child(s.root, "ambiance")["metadata"] = map[string]any{"executionMode": ModePipelineRollback}
		s.data["currentStatus"] = string(status.Failed)
		s.runRollback(body, st.Rollback, s.tree.Children[0], s.fqn+".spec.execution", execution)
		s.finish(ctx, rollupChildren(s.tree.Children), nil)
		return
	}
	if prov != nil {
		// The environment's provisioner runs before the infrastructure is rendered: its
		// outputs are `<+provisioner.*>` in the infrastructure's fields (issue 55).
		if err := s.dep.provision(ctx, body, prov, tree[0]); err != nil {
			// What the provisioner made has no infrastructure to deploy to: roll it back.
			s.dep.rollbackProvisioner(body, prov)
			s.finish(ctx, status.Failed, contract.Classify(err))
			return
		}
		if !s.constraint.holdInfrastructure(body) {
			s.dep.rollbackProvisioner(body, prov)
			s.finishStopped(ctx)
			return
		}
		children, tree = children[1:], tree[1:]
	}
	s.runList(body, children, tree, s.fqn+".spec.execution.steps", child(execution, "steps"), s.forward)
	if s.stageRollback && len(st.Rollback) > 0 && !s.aborted && !s.expired {
		s.runRollback(body, st.Rollback, s.tree.Children[len(s.tree.Children)-1], s.fqn+".spec.execution", execution)
	}
	if prov != nil && s.stageRollback {
		s.dep.rollbackProvisioner(body, prov) // after the execution's, as it provisioned first
	}
	final := rollupChildren(s.tree.Children)
	if s.expired {
		final = status.Expired
	}
	if final == status.Succeeded {
		s.dep.recordDeployed(ctx)
	}
	s.finish(ctx, final, nil)
}

// startTimer expires the stage when its timeout fires (spec 1.10): running nodes end
// EXPIRED, nothing else starts, and no failure strategy runs for them.
func (s *stageRun) startTimer(ctx workflow.Context, text string) error {
	return afterTimeout(ctx, "stage", text, expressions.NewScope(s.root, s.fqn), func(workflow.Context) { s.expire() })
}

// afterTimeout renders a pipeline's or stage's timeout and calls expire in a coroutine when it
// has passed, unless the context is cancelled first (the run ended). what names the node in
// errors.
func afterTimeout(ctx workflow.Context, what, text string, scope *expressions.Scope, expire func(workflow.Context)) error {
	v, err := expressions.RenderString(text, scope, expressions.Options{})
	if err != nil {
		return fmt.Errorf("%s timeout: %v", what, err)
	}
	d, err := duration.Parse(v)
	if err != nil {
		return fmt.Errorf("%s timeout %q: %v", what, v, err)
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, d) == nil {
			expire(ctx)
		}
	})
	return nil
}

func (s *stageRun) expire() {
	if s.expired {
		return
	}
	s.expired = true
	s.cancelBody()
}

// finishStopped ends a stage stopped before its steps: EXPIRED when its timeout fired, ABORTED
// otherwise.
func (s *stageRun) finishStopped(ctx workflow.Context) {
	if s.expired {
		s.finish(ctx, status.Expired, &contract.Failure{Category: contract.Timeout, Message: "the stage timed out before it could start its steps"})
		return
	}
	s.aborted = true
	s.finish(ctx, status.Aborted, nil)
}

// abort stops the stage: running steps are cancelled and nothing new starts.
func (s *stageRun) abort() {
	s.aborted = true
	s.cancelBody()
}

// stopped reports whether no further node may start in a frame.
func (s *stageRun) stopped(ctx workflow.Context, fr *frame) bool {
	if ctx.Err() != nil && !s.expired {
		s.aborted = true // cancelled from outside: the pipeline was aborted
	}
	return s.aborted || s.expired || fr.stopped()
}

func (s *stageRun) finish(ctx workflow.Context, st status.Status, f *contract.Failure) {
	now := workflow.Now(ctx)
	s.tree.Status, s.tree.EndedAt, s.tree.Failure = st, &now, f
	s.data["status"] = string(st)
	s.data["currentStatus"] = string(st)
	s.data["liveStatus"] = string(st)
}

// runList runs a list of step elements in order. prefix is the FQN of the list's container and
// container its data map.
func (s *stageRun) runList(ctx workflow.Context, nodes []*plan.Node, tree []*Node, prefix string, container map[string]any, fr *frame) {
	for i, n := range nodes {
		if s.stopped(ctx, fr) {
			return // the rest is never visited: NotStarted (spec 2.2)
		}
		s.runNode(ctx, n, tree[i], prefix, container, fr)
	}
}

// runRollback runs a rollback section (t) in its own frame.
func (s *stageRun) runRollback(ctx workflow.Context, nodes []*plan.Node, t *Node, prefix string, container map[string]any) {
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	s.runList(ctx, nodes, t.Children, prefix+"."+rollbackID, child(container, rollbackID), &frame{rollback: true})
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = rollupChildren(t.Children), &end
	if t.Status == status.NotStarted {
		t.Status = status.Succeeded
	}
}

func (s *stageRun) runNode(ctx workflow.Context, n *plan.Node, t *Node, prefix string, container map[string]any, fr *frame) {
	if !s.waitResumed(ctx, fr) {
		return
	}
	if n.Kind == plan.KindParallel {
		s.runParallel(ctx, n, t, prefix, container, fr)
		return
	}
	if n.Strategy != nil {
		s.runLoop(ctx, n, t, prefix, container, fr)
		return
	}
	fqn := prefix + "." + n.ID
	ok, err := evalWhen(s.rootFor(fr), fqn, n.When)
	if err != nil {
		s.end(ctx, t, status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()})
		container[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Errored)}
		return
	}
	if !ok {
		s.end(ctx, t, status.Skipped, nil)
		container[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Skipped)}
		return
	}
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	if n.Kind == plan.KindGroup {
		s.runGroup(ctx, n, t, fqn, container, fr)
		return
	}
	s.runStep(ctx, n, t, fqn, container, fr)
}

func (s *stageRun) runParallel(ctx workflow.Context, n *plan.Node, t *Node, prefix string, container map[string]any, fr *frame) {
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	wg := workflow.NewWaitGroup(ctx)
	if len(n.Children) > 1 {
		ctx = concurrently(ctx)
	}
	for i, c := range n.Children {
		i, c := i, c
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			s.runNode(ctx, c, t.Children[i], prefix, container, fr)
			wg.Done() // not deferred: see runStep
		})
	}
	wg.Wait(ctx)
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = rollupChildren(t.Children), &end
}

// runGroup runs a step group, again from its first element when a RetryStepGroup action asks
// (spec 5.7), and its rollback steps on StepGroupRollback (spec 5.10.2).
func (s *stageRun) runGroup(ctx workflow.Context, n *plan.Node, t *Node, fqn string, container map[string]any, fr *frame) {
	data := map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Running), "variables": map[string]any{}}
	if n.Postfix != "" {
		data["identifierPostFix"] = n.Postfix
	}
	container[n.ID] = data
	if err := renderVariables(n.Variables, child(data, "variables"), s.rootFor(fr), fqn); err != nil {
		s.end(ctx, t, status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()})
		data["status"] = string(status.Errored)
		return
	}
	g := &frame{parent: fr, group: n}
	if n.Pod != nil {
		pod, f := s.pods.startPod(ctx, n, t, fqn, fr)
		if f != nil {
			s.end(ctx, t, status.Failed, f)
			data["status"] = string(status.Failed)
			return
		}
		g.pod = pod
		defer s.pods.stopPod(ctx, pod)
	}
	for {
		s.runList(ctx, n.Children, t.Children, fqn+".steps", child(data, "steps"), g)
		if !g.retry || s.aborted || s.expired {
			break
		}
		g.retry, g.halted = false, false
		if !s.sleepInterval(ctx, t, g.interval) {
			break
		}
		g.retries++
		t.Notes = append(t.Notes, fmt.Sprintf("RetryStepGroup: run %d", g.retries+1))
		t.Children = childTree(n, t.Path) // fresh node executions (spec 5.7 Decision)
		s.forget(t.Path)
		data["steps"] = map[string]any{}
		t.Status = status.Running
	}
	if g.undo && len(n.Rollback) > 0 && !s.aborted && !s.expired {
		s.runRollback(ctx, n.Rollback, t.Children[len(t.Children)-1], fqn, data)
	}
	st := rollupChildren(t.Children)
	data["status"] = string(st)
	s.end(ctx, t, st, nil)
}

// sleepInterval waits before a retry, showing TIMED_WAITING; false means the stage stopped.
func (s *stageRun) sleepInterval(ctx workflow.Context, t *Node, interval string) bool {
	if interval == "" {
		return true
	}
	d, err := duration.Parse(interval)
	if err != nil {
		d = 0
	}
	prev := t.Status
	t.Status = status.TimedWaiting
	err = workflow.Sleep(ctx, d)
	t.Status = prev
	return err == nil
}

// ended is a terminal node.
type ended struct {
	path   string
	status status.Status
	loop   bool // a loop iteration or inside one: counts for liveStatus only
}

// end records a node's final status and updates the stage's currentStatus (spec 4.3).
func (s *stageRun) end(ctx workflow.Context, t *Node, st status.Status, f *contract.Failure) {
	now := workflow.Now(ctx)
	t.Status, t.EndedAt, t.Failure, t.Actions = st, &now, f, nil
	s.terminal = append(s.terminal, ended{t.Path, st, s.inLoop(t.Path)})
	s.updateCurrent()
	s.publish(ctx)
}

// forget drops the terminal nodes below a path: a group that runs again starts fresh.
func (s *stageRun) forget(prefix string) {
	kept := s.terminal[:0]
	for _, e := range s.terminal {
		if !strings.HasPrefix(e.path, prefix+".") {
			kept = append(kept, e)
		}
	}
	s.terminal = kept
	s.updateCurrent()
}

func (s *stageRun) updateCurrent() {
	var cur, live []status.Status
	for _, e := range s.terminal {
		live = append(live, e.status)
		if !e.loop {
			cur = append(cur, e.status)
		}
	}
	s.data["currentStatus"], s.data["liveStatus"] = string(status.Rollup(cur)), string(status.Rollup(live))
}

// inLoop reports whether a path is a loop iteration or below one.
func (s *stageRun) inLoop(path string) bool {
	for p := path; p != ""; {
		if s.loopPaths[p] {
			return true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return false
}
