package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// Pipeline is the pipeline workflow: it runs the stages in order (parallel blocks at once), each
// as a child workflow, then a pipeline rollback if a stage asked for one, and returns the final
// node tree.
func Pipeline(ctx workflow.Context, in PipelineInput) (*PipelineResult, error) {
	if in.Plan == nil {
		return nil, fmt.Errorf("pipeline workflow started without a plan")
	}
	backfillTraits(in.Plan.Stages)
	// Every activity and stage below reads secret manager secrets where the entity files say.
	ctx = contract.WithSecretRoutes(ctx, in.Plan.Secrets)
	in.Settings.CommitStatus = nil // a chained pipeline reports to its own codebase, if any
	if in.Plan.Codebase != nil {
		in.Settings.CommitStatus = in.Plan.Codebase.Status
	}
	p := newPipelineRun(ctx, in)
	if err := p.registerHandlers(ctx); err != nil {
		return nil, err
	}
	if in.Key != "" && workflow.GetVersion(ctx, changeBindKey, workflow.DefaultVersion, 1) == 1 {
		if first := p.bindKey(ctx); first != in.SequenceID {
			return p.repeat(ctx, first)
		}
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"pipeline": in.Plan.Identifier, "trigger": in.Trigger.Type}).Counter(MetricExecutionsStarted).Inc(1)
	body, cancel := workflow.WithCancel(ctx)
	p.cancelBody = cancel
	defer cancel()
	// Bookkeeping after an abort or timeout still needs a live context.
	final, _ := workflow.NewDisconnectedContext(ctx)
	if !p.takeTurn(body) {
		p.finish(final, status.Aborted)
		return p.result(final, nil)
	}
	p.upsert(final, status.Running)
	if err := renderVariables(in.Plan.Variables, child(p.data, "variables"), p.root, "pipeline"); err != nil {
		p.tree.Failure = &contract.Failure{Category: contract.Unknown, Message: err.Error()}
		p.finish(final, status.Errored)
		return p.result(final, nil)
	}
	p.pipelineEvent(final, contract.EventPipelineStart, status.Running) // rules read <+pipeline.variables>
	// Executions started before pipeline and stage timeouts were enforced replay without them.
	if workflow.GetVersion(ctx, changeTimeouts, workflow.DefaultVersion, 1) == 1 {
		if err := p.startTimer(body); err != nil {
			p.tree.Failure = &contract.Failure{Category: contract.Unknown, Message: err.Error()}
			p.finish(final, status.Errored)
			return p.result(final, nil)
		}
	}
	resuming := in.Resume != nil
	if in.RollbackOf != nil {
		p.rollbackDeployment(body)
		st := rollupChildren(p.tree.Children)
		if p.aborted {
			st = status.Aborted
		}
		p.finish(final, st)
		return p.result(final, p.resultStages())
	}
	if units := p.segmentPlan(ctx); units != nil {
		p.runSegments(body, units, resuming)
	}
	for i, n := range in.Plan.Stages {
		if p.segmented || p.stopped(body) || p.rollback {
			break // a pipeline rollback replaces normal progression (spec 5.10.3)
		}
		if resuming && containsStage(n, in.Resume.FromStage) {
			resuming = false
		}
		if resuming {
			p.copyElement(n, p.tree.Children[i])
			continue
		}
		p.runElement(body, n, p.tree.Children[i])
	}
	if p.rollback && !p.stopped(body) {
		p.runPipelineRollback(body)
	}
	p.stopped(body) // notice an abort that arrived during the last stage
	st := rollupChildren(p.tree.Children)
	switch {
	case p.expired:
		st = status.Expired
	case p.aborted:
		st = status.Aborted
	}
	p.finish(final, st)
	return p.result(final, p.resultStages())
}

// bindKey records the execution's idempotency key with the sequence workflow and returns the
// number of the execution the key started first: this one's, unless the start repeated a
// delivery another gantry process (or this one before a restart) had started already. When the
// key cannot be recorded for minutes, the execution runs: a delivery the server accepted is
// not dropped because the sequence workflow is unreachable.
func (p *pipelineRun) bindKey(ctx workflow.Context) int64 {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 5 * time.Minute,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumInterval: 10 * time.Second},
		Summary:                "record the trigger's idempotency key",
	})
	var first int64
	req := BindRequest{Pipeline: p.in.Plan.Identifier, Key: p.in.Key, Number: p.in.SequenceID}
	if err := workflow.ExecuteLocalActivity(lctx, BindActivity, req).Get(ctx, &first); err != nil {
		p.tree.Notes = append(p.tree.Notes, "the trigger's idempotency key could not be recorded ("+err.Error()+"); the execution ran")
		return p.in.SequenceID
	}
	return first
}

// repeat ends an execution that repeated a start of its key: nothing ran, nothing is notified.
func (p *pipelineRun) repeat(ctx workflow.Context, first int64) (*PipelineResult, error) {
	now := workflow.Now(ctx)
	p.tree.Status, p.tree.EndedAt = status.Skipped, &now
	p.tree.Notes = append(p.tree.Notes, fmt.Sprintf("not run: a repeat of %s, which started execution %s-%d", p.in.Key, p.in.Plan.Identifier, first))
	p.data["status"] = string(status.Skipped)
	p.upsert(ctx, status.Skipped)
	return p.result(ctx, nil)
}

// result is what the pipeline workflow returns: its final tree, and for Temporal a close that
// tells the outcome (see closing).
func (p *pipelineRun) result(ctx workflow.Context, stages map[string]any) (*PipelineResult, error) {
	res := &PipelineResult{Status: p.tree.Status, Tree: p.tree, Stages: stages, Outputs: chainOutputs(p.in.Outputs, p.root)}
	// Pipeline-scoped Queue keys are held until here (only executions with Queue steps,
	// which no earlier version ran, have any).
	for _, h := range p.locks {
		releaseLock(ctx, h.LockTicket)
	}
	p.giveBackTurns(ctx)
	if p.out != nil {
		p.pullNotifications(ctx) // what stages raised after the listener stopped (a cancellation)
		p.out.close(ctx)
	}
	if err := closing(ctx, res.Status, p.tree, *res); err != nil {
		return nil, err
	}
	return res, nil
}

// resultStages is the stages' data for the result, without the iterations of stage loops
// run in batches: their batch workflows' results hold them, and thousands of them would not
// fit in one result (Temporal's 2 MB payload limit).
func (p *pipelineRun) resultStages() map[string]any {
	stages := child(p.data, "stages")
	if len(p.loopOf) == 0 {
		return stages
	}
	out := make(map[string]any, len(stages))
	for id, d := range stages {
		if p.loopOf[id] == "" {
			out[id] = d
		}
	}
	return out
}

// containsStage reports whether a stage element is, or holds, stage id.
func containsStage(n *plan.Node, id string) bool {
	if n.ID == id {
		return true
	}
	for _, c := range n.Children {
		if c.Kind != plan.KindStep && c.Kind != plan.KindGroup && containsStage(c, id) {
			return true
		}
	}
	return false
}

// copyElement carries a stage element of the resumed execution over: its statuses and outputs
// stay readable by expressions, and it does not run again (spec 14).
func (p *pipelineRun) copyElement(n *plan.Node, t *Node) {
	if n.Kind == plan.KindParallel {
		for i, c := range n.Children {
			p.copyElement(c, t.Children[i])
		}
		t.Status = rollupChildren(t.Children)
		return
	}
	c, ok := p.in.Resume.Stages[n.ID]
	if !ok || c.Tree == nil {
		return
	}
	*t = *c.Tree
	t.Notes = append(t.Notes, "copied from the resumed execution")
	child(p.data, "stages")[n.ID] = c.Data
	p.outputs.add(n.ID, keptOutputs(c.Tree)) // a retry keeps them too
	p.ended(t.Status)
}

type pipelineRun struct {
	in         PipelineInput
	id         string
	root       map[string]any
	data       map[string]any
	tree       *Node
	running    []string   // identifiers of running stages, for the GantryStage attribute
	locks      []HeldLock // pipeline-scoped Queue keys its stages hold
	terminal   []status.Status
	cancelBody workflow.CancelFunc
	children   map[string]workflow.ChildWorkflowFuture // running stage children, for expiry
	ran        []*plan.Node                            // stages that started, in start order
	waiting    map[string]map[string]WaitingSignal     // stage → source ("" or a batch) → what it waits for from users
	loopOf     map[string]string                       // iteration → looped stage, for stage loops run in batches
	batchRuns  map[string]workflow.ChildWorkflowFuture // running stage batches by workflow ID
	barriers   *barriers
	raiser     *raiser                 // nil without notification rules
	out        *outbox                 // the deliveries on their way to the notifier
	notes      workflow.ReceiveChannel // deliveries raised by stages
	rollback   bool                    // a PipelineRollback action fired
	// A long pipeline runs its stages in segment workflows (see SegmentName): segmented is set
	// on the pipeline then, segment on each segment's own run of this code.
	segmented       bool
	segment         bool
	segmentsRunning []string              // segment workflows running, by ID
	signals         []workflow.Future     // a segment's reports to its pipeline
	pins            map[string]*Node      // what the Deployment stages of segments deployed
	turns           []contract.LockTicket // places under concurrency limits (see takeTurn)
	paused          bool                  // a user paused the execution: no stage or step starts
	outputs         *outputBudget         // outputs.go: the output variables its stages keep
	aborted         bool
	expired         bool
}

func newPipelineRun(ctx workflow.Context, in PipelineInput) *pipelineRun {
	info := workflow.GetInfo(ctx)
	pl := in.Plan
	if in.Settings.HeartbeatTimeout == 0 {
		in.Settings.HeartbeatTimeout = DefaultSettings.HeartbeatTimeout
	}
	if in.Settings.InfraAttempts == 0 {
		in.Settings.InfraAttempts = DefaultSettings.InfraAttempts
	}
	if in.Settings.DelegateWait == 0 {
		in.Settings.DelegateWait = DefaultSettings.DelegateWait
	}
	if in.Settings.FastPathMaxTimeout == 0 {
		in.Settings.FastPathMaxTimeout = DefaultSettings.FastPathMaxTimeout
	}
	now := workflow.Now(ctx)
	data := map[string]any{
		"identifier": pl.Identifier, "name": pl.Name, "description": pl.Description, "tags": pl.Tags,
		"sequenceId": in.SequenceID, "executionId": info.WorkflowExecution.ID, "executionMode": ModeNormal,
		"startTs": now.UnixMilli(), "status": string(status.Running), "currentStatus": string(status.Succeeded),
		"liveStatus": string(status.Succeeded), "triggerType": in.Trigger.Type, "triggeredBy": map[string]any{"name": in.Trigger.User},
		"variables": map[string]any{}, "stages": map[string]any{},
	}
	if in.Resume != nil {
		data["resumedExecutionId"] = in.Resume.RootExecutionID
	}
	data["storeType"], data["repo"], data["branch"] = "inline", nil, nil
	if src := pl.Remote(); src != nil {
		data["storeType"], data["repo"], data["branch"] = "remote", src.Repo, src.Branch
	}
	root := map[string]any{"pipeline": data}
	if in.Trigger.Data != nil {
		root["trigger"] = in.Trigger.Data
		root["eventPayload"] = in.Trigger.Data["payload"]
	}
	if pl.Codebase != nil {
		root["codebase"] = codebaseContext(pl.Codebase, root)
	}
	tree := &Node{Path: "", ID: pl.Identifier, Name: pl.Name, Kind: "pipeline", Status: status.Running, StartedAt: &now, Policy: pl.Policy, Template: pl.Template, Sources: pl.Sources, Parent: in.Parent}
	tree.Children = newTree(pl.Stages, "")
	p := &pipelineRun{in: in, id: info.WorkflowExecution.ID, root: root, data: data, tree: tree,
		children: map[string]workflow.ChildWorkflowFuture{}, waiting: map[string]map[string]WaitingSignal{},
		loopOf: map[string]string{}, batchRuns: map[string]workflow.ChildWorkflowFuture{}, barriers: newBarriers(pl),
		outputs: newOutputBudget(in.Settings.OutputLimit)}
	if len(pl.Notifications) > 0 {
		base := contract.NotifyEvent{ExecutionID: p.id, Namespace: info.Namespace, Pipeline: pl.Identifier, PipelineName: pl.Name,
			Org: pl.Org, Project: pl.Project, SequenceID: int(in.SequenceID), TriggerType: in.Trigger.Type, TriggeredBy: in.Trigger.User}
		p.raiser = newRaiser(&Notifications{Rules: pl.Notifications, Base: base})
		p.out = &outbox{executionID: p.id, summary: fmt.Sprintf("%s #%d", pl.Name, in.SequenceID), settings: in.Settings.Notify}
	}
	return p
}

// notifications is what stages and batches get to raise their own events.
func (p *pipelineRun) notifications() *Notifications {
	if p.raiser == nil {
		return nil
	}
	return p.raiser.n
}

// registerHandlers installs the tree query, the abort update and the waiting signal.
func (p *pipelineRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return p.tree, nil }); err != nil {
		return err
	}
	p.listenNotifications(ctx)
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAbort,
		func(ctx workflow.Context, req AbortRequest) (string, error) {
			p.abort(ctx, req.User, req.Reason)
			return "abort requested", nil
		},
		workflow.UpdateHandlerOptions{Validator: func(req AbortRequest) error {
			if req.User == "" {
				return refuse(ErrForbidden, "an abort must name the user who asks for it")
			}
			if p.aborted {
				return refuse(ErrConflict, "execution %s is already being aborted", p.id)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	if err := p.registerPause(ctx); err != nil {
		return err
	}
	workflow.Go(ctx, p.listenBarriers)
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, signalWaiting)
		for {
			var w WaitingSignal
			if !ch.Receive(ctx, &w) {
				return
			}
			if p.waiting[w.Stage] == nil {
				p.waiting[w.Stage] = map[string]WaitingSignal{}
			}
			p.waiting[w.Stage][w.Source] = w
			st, nodes := p.liveWaiting()
			p.upsert(ctx, st)
			p.upsertWaitingMemo(ctx, nodes)
		}
	})
	return nil
}

// liveWaiting is the pipeline's status while it runs (RUNNING or the strongest status its
// running stages wait in) and the steps that wait, in stage order.
func (p *pipelineRun) liveWaiting() (status.Status, []WaitingNode) {
	live := []status.Status{status.Running}
	var nodes []WaitingNode
	add := func(id string) {
		for _, src := range sortedIDs(p.waiting[id]) {
			if w := p.waiting[id][src]; w.Status != "" {
				live = append(live, w.Status)
				nodes = append(nodes, w.Nodes...)
			}
		}
	}
	for _, id := range p.running {
		add(id)
	}
	// Iterations of a batched stage loop: they run while their loop does.
	for _, id := range sortedIDs(p.waiting) {
		if base := p.loopOf[id]; base != "" && (slices.Contains(p.running, base) || slices.Contains(p.segmentsRunning, base)) {
			add(id)
		}
	}
	return status.Rollup(live), nodes
}

// upsertWaitingMemo keeps the waiting steps in the memo (changePendingMemo), where a listing
// of waiting decisions reads them with the visibility record.
func (p *pipelineRun) upsertWaitingMemo(ctx workflow.Context, nodes []WaitingNode) {
	if workflow.GetVersion(ctx, changePendingMemo, workflow.DefaultVersion, 1) < 1 {
		return
	}
	if nodes == nil {
		nodes = []WaitingNode{}
	}
	_ = workflow.UpsertMemo(ctx, map[string]any{MemoWaiting: nodes})
}

// abort stops the execution: running stages are cancelled (their steps' processes killed) and
// nothing else starts (spec 3.4 AbortAll).
func (p *pipelineRun) abort(ctx workflow.Context, by, reason string) {
	if p.aborted {
		return
	}
	p.aborted = true
	p.tree.Abort = &Abort{By: by, Reason: reason, At: workflow.Now(ctx)}
	p.cancelBody()
}

// stopped reports whether no further stage may start, noticing a cancellation request that
// came from outside (the Temporal UI or API).
func (p *pipelineRun) stopped(ctx workflow.Context) bool {
	if ctx.Err() != nil && p.tree.Abort == nil && !p.expired {
		p.aborted = true
		p.tree.Abort = &Abort{By: "Temporal cancellation request", At: workflow.Now(ctx)}
	}
	return p.aborted || p.expired
}

// startTimer expires the pipeline when its timeout fires: running stages end EXPIRED.
func (p *pipelineRun) startTimer(ctx workflow.Context) error {
	if p.in.Plan.Timeout == "" {
		return nil
	}
	return afterTimeout(ctx, "pipeline", p.in.Plan.Timeout, expressions.NewScope(p.root, "pipeline"), p.expireRunning)
}

// expireRunning ends the execution EXPIRED: its running stages, loop batches and segments
// are told to expire.
func (p *pipelineRun) expireRunning(ctx workflow.Context) {
	p.expired = true
	for _, id := range p.running {
		if f := p.children[id]; f != nil { // a batched stage loop has no stage child
			f.SignalChildWorkflow(ctx, signalExpire, nil)
		}
	}
	for _, id := range sortedIDs(p.batchRuns) {
		p.batchRuns[id].SignalChildWorkflow(ctx, signalExpire, nil)
	}
}

func (p *pipelineRun) runElement(ctx workflow.Context, n *plan.Node, t *Node) {
	if n.Kind != plan.KindParallel {
		p.runStage(ctx, n, t)
		return
	}
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	wg := workflow.NewWaitGroup(ctx)
	for i, c := range n.Children {
		i, c := i, c
		wg.Add(1)
		workflow.Go(sharing(ctx, len(n.Children)), func(ctx workflow.Context) {
			p.runElement(ctx, c, t.Children[i])
			wg.Done() // not deferred: see stageRun.runStep
		})
	}
	wg.Wait(ctx)
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = rollupChildren(t.Children), &end
}

func (p *pipelineRun) runStage(ctx workflow.Context, n *plan.Node, t *Node) {
	if n.Strategy != nil {
		p.runStageLoop(ctx, n, t)
		return
	}
	p.runOneStage(ctx, n, t, p.root)
}

// runStageLoop runs a looped stage: its iterations run like a parallel block, at most
// maxConcurrency at once, each a stage workflow of its own (spec 6.5).
func (p *pipelineRun) runStageLoop(ctx workflow.Context, n *plan.Node, t *Node) {
	if p.stopped(ctx) || p.rollback {
		return
	}
	now := workflow.Now(ctx)
	t.Kind, t.Status, t.StartedAt = "strategy", status.Running, &now
	lp, skip, failure := resolveLoop(n, p.root, "pipeline.stages."+n.ID)
	end := func(st status.Status) {
		e := workflow.Now(ctx)
		t.Status, t.EndedAt = st, &e
		p.ended(st)
		p.stageEnded(ctx, n.ID, st) // a loop that never expanded leaves no one at its barriers
	}
	switch {
	case failure != nil:
		t.Failure = failure
		end(status.Failed)
		return
	case skip:
		end(status.Skipped)
		return
	}
	children := make([]*plan.Node, len(lp.iterations))
	t.Children = make([]*Node, len(lp.iterations))
	for i, it := range lp.iterations {
		c := iterationNode(n, it)
		children[i] = c
		t.Children[i] = &Node{Path: c.ID, ID: c.ID, Name: c.Name, Kind: string(plan.KindStage), Type: c.Type, Status: status.NotStarted, Template: c.Template, Children: childTree(c, c.ID)}
	}
	total := len(lp.iterations)
	ids := make([]string, len(children))
	for i, c := range children {
		ids[i] = c.ID
	}
	p.barriers.expandLoop(n.ID, ids)
	if p.segment {
		p.reportToPipeline(ctx, SegmentSignal{Stage: n.ID, Iterations: ids})
	}
	if len(children) > p.in.Settings.batchSize() && workflow.GetVersion(ctx, changeStageBatches, workflow.DefaultVersion, 1) == 1 {
		p.runStageBatches(ctx, n, t, lp, children)
		end(loopStatus(t.Children))
		return
	}
	runIterations(sharing(ctx, total), lp, t.Children,
		func(ctx workflow.Context) bool { return p.stopped(ctx) || p.rollback },
		func(i int) {
			e := workflow.Now(ctx)
			t.Children[i].Status, t.Children[i].EndedAt = status.Skipped, &e
			p.stageEnded(ctx, children[i].ID, status.Skipped)
		},
		func(ctx workflow.Context, i int) {
			p.runOneStage(ctx, children[i], t.Children[i], iterationRoot(p.root, n.ID, lp.iterations[i], total))
		})
	end(loopStatus(t.Children))
}

// runOneStage evaluates a stage's when and runs it; root holds the expression roots (loop
// roots for an iteration of a looped stage).
func (p *pipelineRun) runOneStage(ctx workflow.Context, n *plan.Node, t *Node, root map[string]any) {
	if p.paused {
		_ = workflow.Await(ctx, func() bool { return !p.paused || p.aborted || p.expired })
	}
	if p.stopped(ctx) || p.rollback {
		return
	}
	loop := n.Postfix != ""
	stages := child(p.data, "stages")
	ok, err := evalWhen(root, "pipeline.stages."+n.ID, n.When)
	if err != nil || !ok {
		st := status.Skipped
		var f *contract.Failure
		if err != nil {
			st, f = status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
		}
		now := workflow.Now(ctx)
		t.Status, t.EndedAt, t.Failure = st, &now, f
		stages[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(st)}
		if !loop {
			p.ended(st)
		}
		p.stageEnded(ctx, n.ID, st)
		return
	}
	p.ran = append(p.ran, n)
	res := p.execStage(ctx, n, t, StageInput{ExecutionID: p.id, Stage: n, Context: p.contextFor(n, root), Settings: p.in.Settings,
		OutputLimit: p.outputs.share(sharesOf(ctx))},
		p.id+"/"+n.ID, fmt.Sprintf("Stage %s (%s) of %s #%d", n.Name, n.Type, p.in.Plan.Name, p.in.SequenceID))
	p.outputs.add(n.ID, res.OutputBytes)
	if res.Data != nil {
		stages[n.ID] = res.Data
	}
	p.rollback = p.rollback || res.PipelineRollback
	if res.Aborted {
		p.aborted = true
	}
	if !loop { // iterations count through their strategy node (spec 4.3)
		p.ended(t.Status)
	}
	p.stageEnded(ctx, n.ID, t.Status)
}

// contextFor is the execution context a stage child receives: everything but the data of
// earlier stages the stage never names. A stage input is recorded in the pipeline's history, so
// passing every earlier stage to each of 500 stages would grow it quadratically; a stage can
// only reach another stage's data through an expression naming it.
func (p *pipelineRun) contextFor(n *plan.Node, root map[string]any) map[string]any {
	return p.contextForNodes([]*plan.Node{n}, root)
}

// contextForNodes is the execution context for nodes that run together (a segment).
func (p *pipelineRun) contextForNodes(nodes []*plan.Node, root map[string]any) map[string]any {
	stages, _ := p.data["stages"].(map[string]any)
	if len(stages) == 0 {
		return root
	}
	var text []byte
	if len(nodes) == 1 {
		text, _ = json.Marshal(nodes[0])
	} else {
		text, _ = json.Marshal(nodes)
	}
	kept := map[string]any{}
	for _, id := range sortedKeys(stages) {
		if strings.Contains(string(text), id) {
			kept[id] = stages[id]
		}
	}
	data := make(map[string]any, len(p.data))
	for k, v := range p.data {
		data[k] = v
	}
	data["stages"] = kept
	out := make(map[string]any, len(root))
	for k, v := range root {
		out[k] = v
	}
	out["pipeline"] = data
	return out
}

// execStage runs a stage child workflow and puts its tree in t.
func (p *pipelineRun) execStage(ctx workflow.Context, n *plan.Node, t *Node, in StageInput, id, summary string) StageResult {
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	p.running = append(p.running, n.ID)
	p.upsertStage(ctx)
	in.Notify = p.notifications()
	p.stageEvent(ctx, contract.EventStageStart, n, t, in.Context)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		StaticSummary:       summary,
		StaticDetails:       stageDetails(n),
		WorkflowTaskTimeout: stageTaskTimeout(p.in.Settings),
	})
	f := workflow.ExecuteChildWorkflow(cctx, StageName, in)
	p.children[n.ID] = f
	var res StageResult
	err := ResultFrom(f.Get(ctx, &res), &res)
	delete(p.children, n.ID)
	p.running = remove(p.running, n.ID)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err == nil && res.WaitingCleared {
		// The stage ended without signalling that its steps stopped waiting (changeQuietWaiting).
		delete(p.waiting, n.ID)
		st, nodes := p.liveWaiting()
		p.upsertStage(dctx, AttrStatus.ValueSet(string(st)))
		p.upsertWaitingMemo(dctx, nodes)
	} else {
		p.upsertStage(dctx)
	}
	res = stageOutcome(ctx, n, t, res, err)
	p.locks = append(p.locks, res.Locks...)
	if typ := stageEndType(t.Status); typ != "" {
		p.stageEvent(dctx, typ, n, t, withStageData(in.Context, n.ID, res.Data))
	}
	return res
}

// stageOutcome puts a stage workflow's tree in t, or, when the workflow failed, an ERRORED
// (ABORTED when cancelled) node whose data say so.
func stageOutcome(ctx workflow.Context, n *plan.Node, t *Node, res StageResult, err error) StageResult {
	if err == nil && res.Tree != nil {
		*t = *res.Tree
		return res
	}
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = status.Errored, &end
	if ctx.Err() != nil {
		t.Status = status.Aborted
	}
	t.Failure = &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("stage workflow: %v", err)}
	return StageResult{Data: map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(t.Status)}}
}

// rollbackDeployment is a post-deployment rollback (PipelineInput.RollbackOf): the stage that
// deployed does not run again (skipped); its rollback section runs as in a pipeline rollback,
// undoing what the earlier execution deployed.
func (p *pipelineRun) rollbackDeployment(ctx workflow.Context) {
	for i, n := range p.in.Plan.Stages {
		t := p.tree.Children[i]
		t.Status = status.Skipped
		if n.Kind == plan.KindStage && n.ID == p.in.RollbackOf.Stage {
			p.ran = append(p.ran, n)
		}
	}
	p.runPipelineRollback(ctx)
}

// runPipelineRollback runs the rollback sections of the stages that ran, in reverse order, in
// rollback mode (spec 5.10.3), under a "pipelineRollback" node.
func (p *pipelineRun) runPipelineRollback(ctx workflow.Context) {
	now := workflow.Now(ctx)
	rb := &Node{Path: "pipelineRollback", ID: "pipelineRollback", Name: "Pipeline rollback", Kind: "rollback", Status: status.Running, StartedAt: &now}
	p.tree.Children = append(p.tree.Children, rb)
	p.data["executionMode"] = ModePipelineRollback
	for i := len(p.ran) - 1; i >= 0; i-- {
		n := p.ran[i]
		t := &Node{Path: join(rb.Path, n.ID), ID: n.ID, Name: n.Name, Kind: string(plan.KindStage), Type: n.Type, Status: status.NotStarted}
		rb.Children = append(rb.Children, t)
		if len(n.Rollback) == 0 || p.stopped(ctx) {
			continue
		}
		// The rollback deploys from the commits the stage fetched, not the branches' heads.
		ran := p.tree.Find(n.ID)
		if ran == nil {
			ran = p.pins[n.ID] // a stage a segment ran
		}
		if ran != nil && (len(ran.Manifests) > 0 || ran.Artifact != "") {
			pinned := *n
			pinned.Deploy = n.Deploy.Pinned(ran.Manifests, ran.Artifact)
			n = &pinned
		}
		var of string
		if p.in.RollbackOf != nil {
			of = p.in.RollbackOf.Execution
		}
		p.execStage(ctx, n, t, StageInput{ExecutionID: p.id, Stage: n, Context: p.root, Settings: p.in.Settings,
			Mode: ModePipelineRollback, PathPrefix: rb.Path, RollbackOf: of},
			p.id+"/pipelineRollback/"+n.ID, fmt.Sprintf("Rollback of stage %s of %s #%d", n.Name, p.in.Plan.Name, p.in.SequenceID))
	}
	end := workflow.Now(ctx)
	rb.Status, rb.EndedAt = rollupChildren(rb.Children), &end
}

// ended records a terminal stage for <+pipeline.currentStatus> (spec 4.3).
func (p *pipelineRun) ended(st status.Status) {
	p.terminal = append(p.terminal, st)
	cur := string(status.Rollup(p.terminal))
	p.data["currentStatus"], p.data["liveStatus"] = cur, cur
}

func (p *pipelineRun) finish(ctx workflow.Context, st status.Status) {
	now := workflow.Now(ctx)
	p.tree.Status, p.tree.EndedAt = st, &now
	p.data["status"] = string(st)
	p.upsert(ctx, st)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"pipeline": p.in.Plan.Identifier, "status": string(st)}).Counter(MetricExecutionsFinished).Inc(1)
	switch {
	case st == status.Succeeded || st == status.IgnoreFailed:
		p.pipelineEvent(ctx, contract.EventPipelineSuccess, st)
	case failed(st) || st == status.Aborted:
		p.pipelineEvent(ctx, contract.EventPipelineFailed, st)
	}
	p.pipelineEvent(ctx, contract.EventPipelineEnd, st)
}

func (p *pipelineRun) upsert(ctx workflow.Context, st status.Status) {
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrStatus.ValueSet(string(st)))
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** #%d: %s", p.in.Plan.Name, p.in.SequenceID, st))
}

// upsertStage sets GantryStage to the running stages, with other attributes in the same
// command.
func (p *pipelineRun) upsertStage(ctx workflow.Context, also ...temporal.SearchAttributeUpdate) {
	if p.segment { // the execution's attributes are the pipeline's
		return
	}
	cur := strings.Join(p.running, ",")
	if cur == "" {
		_ = workflow.UpsertTypedSearchAttributes(ctx, append(also, AttrStage.ValueUnset())...)
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, append(also, AttrStage.ValueSet(cur))...)
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** #%d: running stage %s", p.in.Plan.Name, p.in.SequenceID, cur))
}

// stageDetails lists a stage's steps for the Temporal UI.
func stageDetails(n *plan.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Stage `%s`, type %s.\n\nSteps:\n", n.ID, n.Type)
	plan.Walk(n.Children, nil, func(c *plan.Node, path []string) {
		if c.Kind == plan.KindStep {
			fmt.Fprintf(&b, "- `%s` (%s)\n", strings.Join(path, "."), c.Type)
		}
	})
	return b.String()
}

func remove(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
