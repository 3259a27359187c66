package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/stepspec"
)

// MaxRunningSteps bounds the step activities one stage runs at once.
const MaxRunningSteps = 1000

// DefaultStepTimeout is the engine default of spec 1.10.
const DefaultStepTimeout = 10 * time.Hour

// infraGrace is added to a step's timeout for Temporal's start-to-close timeout: the activity
// enforces the step timeout itself (category Timeout); Temporal's only catches hung workers.
const infraGrace = time.Minute

// runStep runs a step until its outcome is final: an attempt, then, on failure, the failure
// strategy's action (spec 5.5), which may run it again.
func (s *stageRun) runStep(ctx workflow.Context, n *plan.Node, t *Node, fqn string, container map[string]any, fr *frame) {
	begun := workflow.Now(ctx)
	s.runStepAttempts(ctx, n, t, fqn, container, fr)
	// Not deferred: a workflow evicted from the worker's cache unwinds its coroutines, and a
	// deferred call into the SDK would race with the eviction.
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"step_type": n.Type, "status": string(t.Status)})
	m.Counter(MetricStepsFinished).Inc(1)
	m.Timer(MetricStepDuration).Record(workflow.Now(ctx).Sub(begun))
}

// runStepAttempts is runStep without its metrics.
func (s *stageRun) runStepAttempts(ctx workflow.Context, n *plan.Node, t *Node, fqn string, container map[string]any, fr *frame) {
	data := map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(status.Running), "retryCount": 0}
	if n.Postfix != "" {
		data["identifierPostFix"] = n.Postfix
	}
	container[n.ID] = data
	d := &dispatcher{s: s, ctx: ctx, n: n, t: t, fr: fr, data: data}
	s.notices.noteStep(n, t, fqn, fr)
	if n.Pod != nil { // a Container step: a pod of its own for all its attempts
		pod, f := s.pods.startPod(ctx, n, t, fqn, fr)
		if f != nil {
			t.Attempts++
			d.finish(status.Failed, f)
			return
		}
		if s.pods.own == nil {
			s.pods.own = map[string]*contract.PodInput{}
		}
		s.pods.own[t.Path] = pod
		defer func() {
			s.pods.stopPod(ctx, pod)
			delete(s.pods.own, t.Path)
		}()
	}
	if len(n.Inputs) > 0 {
		var ok bool
		if n, ok = s.resolveInputs(ctx, n, t, fqn, d); !ok {
			return
		}
	}
	for {
		t.Attempts++
		st, f := s.attempt(ctx, n, t, fqn, data, fr)
		switch {
		case st == status.Succeeded:
			d.finish(status.Succeeded, nil)
			return
		case s.expired:
			d.finish(status.Expired, &contract.Failure{Category: contract.Timeout, Message: "expired: an enclosing stage or pipeline timed out"})
			return
		case st == status.Aborted || s.aborted:
			s.aborted = true
			d.finish(status.Aborted, nil)
			return
		}
		t.Status, t.Failure = st, f
		if !d.handle(st, f, n.OnFailure[string(f.Category)], false) {
			return
		}
		s.notices.stepEvent(ctx, contract.EventStepFailed, t, st) // this attempt failed; the next one runs
	}
}

// resolveInputs waits for a step's execution-time inputs and returns the step with them set;
// false means the step ended (aborted, or failed with InputTimeoutError and no
// ProceedWithDefaultValues strategy).
func (s *stageRun) resolveInputs(ctx workflow.Context, n *plan.Node, t *Node, fqn string, d *dispatcher) (*plan.Node, bool) {
	timeout, err := stepTimeout(n, expressions.NewScope(s.rootFor(d.fr), fqn))
	if err != nil {
		d.finish(status.Failed, &contract.Failure{Category: contract.Unknown, Message: err.Error()})
		return nil, false
	}
	var values map[string]string
	for values == nil {
		v, f := s.decisions.askInputs(ctx, n, t, timeout)
		switch {
		case f == nil:
			values = v
		case f.Category == aborted || s.aborted:
			s.aborted = true
			d.finish(status.Aborted, nil)
			return nil, false
		default:
			act := n.OnFailure[string(contract.InputTimeout)]
			if act != nil && act.Type == "ProceedWithDefaultValues" {
				d.note("ProceedWithDefaultValues after %s", f.Message)
				values = defaultInputs(n.Inputs)
				break
			}
			t.Status, t.Failure = status.Failed, f
			if !d.handle(status.Failed, f, act, false) {
				return nil, false
			} // a Retry asks again
			s.notices.stepEvent(ctx, contract.EventStepFailed, t, status.Failed)
		}
	}
	c := *n
	c.Spec = withInputs(n.Spec, n.Inputs, values)
	return &c, true
}

// attempt resolves a step's parameters and runs it once. It returns SUCCEEDED, or the broke
// status and failure, or ABORTED when cancelled.
func (s *stageRun) attempt(ctx workflow.Context, n *plan.Node, t *Node, fqn string, data map[string]any, fr *frame) (status.Status, *contract.Failure) {
	root := s.rootFor(fr)
	t.Status = status.Running
	scope := expressions.NewScope(root, fqn)
	timeout, err := stepTimeout(n, scope)
	if err != nil {
		return status.Failed, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
	}
	tr := traitsOf(n)
	spec, err := renderSpec(n.Spec, scope, unresolvedMode(n.Unresolved), "", deferredField(tr))
	if err != nil {
		return status.Failed, &contract.Failure{Category: contract.Unknown, Message: "resolve spec: " + err.Error()}
	}
	data["spec"] = specView(spec)
	delete(data, "output")
	t.Outputs = nil

	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	r := &runningStep{cancel: cancel, builtin: tr.Builtin}
	s.running[t.Path] = r
	defer delete(s.running, t.Path)

	var outputs map[string]any
	var failure *contract.Failure
	switch tr.Builtin {
	case "wait":
		failure = s.wait(actx, t, spec)
	case "approval":
		outputs, failure = s.decisions.approvalStep(actx, t, spec, timeout, root)
	case "queue":
		if failure = unresolvedKey(ctx, n, scope, "key"); failure == nil {
			failure = s.constraint.queueStep(actx, t, spec, timeout)
		}
	case "ticketApproval", "customApproval":
		outputs, failure = s.ticketing.ticketApprovalStep(actx, n, t, spec, timeout)
	case "verify":
		outputs, failure = s.verifier.verifyStep(actx, n, t, spec, timeout)
	case "pipeline":
		outputs, failure = s.chainStep(actx, n, t, spec)
		if outputs != nil {
			s.data["output"] = outputs // <+pipeline.stages.S.output.NAME>
		}
	case "barrier":
		outputs, failure = s.barrierStep(actx, t, spec, timeout)
		if outputs != nil {
			data["barrier"] = outputs
		}
	default:
		outputs, failure = s.activityStep(actx, n, t, spec, timeout, root, fqn, data, fr)
	}
	if outputs != nil {
		if f := s.outputs.keep(ctx, t.Path, outputs); f != nil {
			outputs = nil
			if failure == nil {
				failure = f
			}
		}
	}
	if outputs != nil {
		data["output"] = outputs
		t.Outputs = outputs
	}
	if failure != nil && failure.Category == aborted && r.decision != "" {
		// A user marked the running step (spec 3.4, 15.5).
		t.Notes = append(t.Notes, fmt.Sprintf("%s by %s while running", r.decision, r.user))
		t.Strategy = &StrategyAction{Action: r.decision, By: r.user}
		if r.decision == "MarkAsSuccess" {
			return status.Succeeded, nil
		}
		return status.Failed, &contract.Failure{Category: contract.UserMarkedFailure, Message: "marked as failed by " + r.user}
	}
	switch {
	case failure == nil:
		return status.Succeeded, nil
	case failure.Category == aborted:
		return status.Aborted, nil
	case failure.Category == contract.Timeout:
		return status.Expired, failure
	case failure.Category == contract.ApprovalRejection:
		return status.ApprovalRejected, failure
	}
	return status.Failed, failure
}

// activityStep runs a step that is an activity: with the stage's deployment when the step
// deploys, in its pod when it runs in a container; the step type's outcome then reads its
// outputs.
func (s *stageRun) activityStep(ctx workflow.Context, n *plan.Node, t *Node, spec any, timeout time.Duration, root map[string]any, fqn string, data map[string]any, fr *frame) (map[string]any, *contract.Failure) {
	tr := traitsOf(n)
	var deploy *contract.DeployInput
	if tr.Deployment {
		var err error
		if deploy, err = s.dep.deployInput(root, fqn); err != nil {
			return nil, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
		}
	}
	pod := s.pods.stepPod(n, t, fr)
	if tr.Container != "" && pod == nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: n.Type + " steps run only in a containerized step group"}
	}
	outputs, failure := s.callActivity(ctx, n, t, spec, timeout, deploy, pod)
	switch {
	case failure == nil && tr.Outcome == "http":
		outputs, failure = httpOutcome(n, spec, outputs, root, fqn)
	case failure == nil && tr.Outcome == "codebase":
		s.codebaseCloned(outputs)
		s.commitStatus(ctx, contract.CommitPending)
	case failure == nil && tr.Outcome == "instances":
		s.dep.instancesFetched(outputs)
	case failure == nil && tr.Outcome == "ticket":
		// The reference reads a ticket step's issue or ticket beside its outputs
		// (<+execution.steps.S.issue.key>, <+execution.steps.S.ticket.ticketNumber>).
		for k, v := range outputs {
			data[k] = v
		}
	case tr.Outcome == "artifact":
		// The reference publishes a build's images beside its outputs (spec 22.2).
		delete(data, "artifact_"+n.ID)
		if failure == nil {
			data["artifact_"+n.ID] = outputs
		}
	}
	return outputs, failure
}

// aborted is the pseudo-category of a cancelled step.
const aborted contract.Category = "aborted"

func stepTimeout(n *plan.Node, scope *expressions.Scope) (time.Duration, error) {
	if n.Timeout == "" {
		return DefaultStepTimeout, nil
	}
	text, err := expressions.RenderString(n.Timeout, scope, expressions.Options{})
	if err != nil {
		return 0, fmt.Errorf("timeout: %v", err)
	}
	d, err := duration.Parse(text)
	if err != nil {
		return 0, fmt.Errorf("timeout %q: %v", text, err)
	}
	return d, nil
}

// deferredField reports the spec fields a step type renders after it ran.
func deferredField(tr plan.Traits) func(string) bool {
	return func(path string) bool { return slices.Contains(tr.Deferred, path) }
}

// traitsOf returns a step's traits; a node without any (not a step, or of a type the catalog
// no longer has) has none set.
func traitsOf(n *plan.Node) plan.Traits {
	if n.Traits == nil {
		return plan.Traits{}
	}
	return *n.Traits
}

// callActivity runs a step activity; a failure of category aborted means it was cancelled.
func (s *stageRun) callActivity(ctx workflow.Context, n *plan.Node, t *Node, spec any, timeout time.Duration, deploy *contract.DeployInput, pod *contract.PodStep) (map[string]any, *contract.Failure) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "encode spec: " + err.Error()}
	}
	set := s.in.Settings
	ao := workflow.ActivityOptions{
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		StartToCloseTimeout: timeout + infraGrace,
		Summary:             fmt.Sprintf("%s (%s)", t.Path, n.Type),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    set.InfraAttempts,
		},
	}
	tr := traitsOf(n)
	if tr.Heartbeat {
		ao.HeartbeatTimeout = set.HeartbeatTimeout
		ao.WaitForCancellation = s.confirmsStop(ctx)
	}
	selectors := n.Selectors
	if len(selectors) == 0 && deploy != nil && deploy.Aws != nil {
		selectors = deploy.Aws.Selectors // an AWS step without its own runs where its connector says
	}
	if len(selectors) == 0 && n.Refs != nil && n.Refs.Ticket != nil {
		selectors = n.Refs.Ticket.Selectors // so does a ticket step
	}
	activity, actx, onMachine := tr.Activity, ctx, pod != nil && pod.Pod.Pod.Machine != nil
	if onMachine {
		// A step of a stage on a build machine: there, in its session, whatever its selectors
		// (they chose the machine).
		if f := s.build.machineLost(); f != nil {
			return nil, f
		}
		var release func()
		actx, release = s.build.onMachine(ctx)
		defer release()
		activity, selectors = contract.MachineStep, nil
	}
	if len(selectors) > 0 {
		// Only workers with these tags poll this queue; none within the wait is a
		// DelegateProvisioning failure, not a hang.
		ao.TaskQueue = SelectorQueue(ao.TaskQueue, selectors)
		ao.ScheduleToStartTimeout = set.DelegateWait
	}
	// Temporal allows 2,000 pending activities per workflow: a stage keeps well below it
	// however many loop iterations and parallel branches want to run.
	if err := workflow.Await(ctx, func() bool { return s.activeSteps < MaxRunningSteps }); err != nil {
		return nil, &contract.Failure{Category: aborted, Message: "aborted"}
	}
	s.activeSteps++
	defer func() { s.activeSteps-- }()
	in := contract.StepInput{ExecutionID: s.in.ExecutionID, StepPath: t.Path, Type: n.Type, Spec: raw, Timeout: timeout, Deploy: deploy, Pod: pod, Refs: n.Refs}
	if pod != nil && s.in.Stage.Pod != nil { // a step of a CI stage
		in.Env = s.ciEnv(n.Name)
	}
	var res contract.StepResult
	var fast bool
	if onMachine {
		fast = s.build.machineFastPath(ctx, timeout)
	} else {
		fast = s.fastPath(ctx, n, timeout, deploy)
	}
	if fast {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: ao.StartToCloseTimeout, RetryPolicy: ao.RetryPolicy, Summary: ao.Summary})
		err = workflow.ExecuteLocalActivity(lctx, activity, in).Get(ctx, &res)
	} else {
		// The UI reads the live tree between workflow tasks: show the step running (and link
		// its log) while it does. A fast-path step ends within the task it started in.
		s.publish(ctx)
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(actx, ao), activity, in)
		if ao.WaitForCancellation {
			s.showStopping(ctx, t, f)
		}
		err = f.Get(ctx, &res)
	}
	if res.Worker != "" {
		t.Worker = res.Worker
	} else if w := contract.FailedOn(err); w != "" {
		t.Worker = w
	}
	if t.Tests = res.Tests; err != nil {
		t.Tests = contract.Details(err).Tests
	}
	if fast && !res.Started.IsZero() {
		s.flushFastPath(ctx, res.Ended.Sub(res.Started))
	}
	if err != nil {
		if f := s.build.machineLost(); onMachine && f != nil && ctx.Err() == nil {
			return nil, f
		}
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
			return nil, &contract.Failure{Category: aborted, Message: "aborted"}
		}
		f := contract.Classify(err)
		if f.Category == contract.DelegateProvisioning {
			f.Message = fmt.Sprintf("no worker with delegate selectors %v picked up the step within %s; start one with `gantry worker --tags %s`",
				selectors, set.DelegateWait, strings.Join(selectors, ","))
		}
		return contract.Details(err).Outputs, f
	}
	return res.Outputs, nil
}

// confirmsStop reports whether this stage's heartbeating steps end, when aborted or expired,
// only once their activity confirmed it stopped (changeStopConfirmed).
func (s *stageRun) confirmsStop(ctx workflow.Context) bool {
	if s.stopVersion == nil {
		v := workflow.GetVersion(ctx, changeStopConfirmed, workflow.DefaultVersion, 1)
		s.stopVersion = &v
	}
	return *s.stopVersion == 1
}

// showStopping waits until the step's activity ends or the step is cancelled; cancelled first,
// the step shows DISCONTINUING while its activity kills its processes (or its worker is found
// gone), which the caller then waits for.
func (s *stageRun) showStopping(ctx workflow.Context, t *Node, f workflow.Future) {
	cancelled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) {})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancelled = true })
	sel.Select(ctx)
	if cancelled && !f.IsReady() {
		t.Status = status.Discontinuing
		s.publish(ctx)
	}
}

// fastPath decides whether a step runs as a local activity on this stage's worker: ShellScript
// and Http steps with a timeout up to Settings.FastPathMaxTimeout, no delegate selectors and no
// concurrent siblings, unless the execution turned the fast path off. Local activities skip the
// server round trips of a regular activity; their results reach history when the workflow task
// completes.
func (s *stageRun) fastPath(ctx workflow.Context, n *plan.Node, timeout time.Duration, deploy *contract.DeployInput) bool {
	set := s.in.Settings
	if set.NoFastPath || !traitsOf(n).FastPath || deploy != nil ||
		len(n.Selectors) > 0 || timeout > set.FastPathMaxTimeout || isConcurrent(ctx) {
		return false
	}
	if s.fastVersion == nil {
		v := workflow.GetVersion(ctx, changeFastPath, workflow.DefaultVersion, 1)
		s.fastVersion = &v
	}
	return *s.fastVersion == 1
}

// concurrentKey marks the context of steps that run alongside others in the stage (parallel
// branches, loop iterations with a concurrency above 1). They stay regular activities: their
// round trips overlap anyway, and a workflow task stays open while any local activity runs, so
// the fast path's periodic stores would make every branch wait for the others.
type concurrentKey struct{}

func concurrently(ctx workflow.Context) workflow.Context {
	return workflow.WithValue(ctx, concurrentKey{}, true)
}

func isConcurrent(ctx workflow.Context) bool {
	v, _ := ctx.Value(concurrentKey{}).(bool)
	return v
}

// stageTaskTimeout is the workflow task timeout of stage workflows. While local activities run,
// the SDK extends the task at 80% of it, and only then do signals and cancellations (an abort)
// reach the stage: 4 s keeps an abort of a fast step under about 3 s, as heartbeats do for
// regular steps. 0 keeps Temporal's default (10 s).
func stageTaskTimeout(set Settings) time.Duration {
	if set.NoFastPath {
		return 0
	}
	return 4 * time.Second
}

// FastPathFlush bounds the fast-path step time a worker crash can make run again: once the
// steps since the last persisted workflow task took this long, the stage persists their results
// (a step that takes longer is persisted as soon as it ends).
const FastPathFlush = 200 * time.Millisecond

// flushFastPath adds a fast step's run time and, past FastPathFlush, ends the workflow task
// with a 1 ms timer so the recorded local-activity results are stored before the next step.
func (s *stageRun) flushFastPath(ctx workflow.Context, ran time.Duration) {
	// History grows only when a workflow task completes: a new length means the results of
	// earlier fast steps are stored.
	if n := workflow.GetInfo(ctx).GetCurrentHistoryLength(); n != s.fastTask {
		s.fastTask, s.fastUnflushed = n, 0
	}
	s.fastUnflushed += ran
	if s.fastUnflushed < FastPathFlush {
		return
	}
	s.fastUnflushed = 0
	_ = workflow.Sleep(ctx, time.Millisecond) // cancelled by an abort: nothing to store then
}

// wait runs a Wait step as a durable timer (spec 15.5).
func (s *stageRun) wait(ctx workflow.Context, t *Node, spec any) *contract.Failure {
	sp, err := specOf[stepspec.WaitSpec](spec)
	if err != nil {
		return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Wait spec: %v", err)}
	}
	text := string(sp.Duration)
	d, err := duration.Parse(text)
	if err != nil {
		return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Wait duration %q: %v", text, err)}
	}
	t.Status = status.WaitStepRunning
	if err := workflow.Sleep(ctx, d); err != nil {
		return &contract.Failure{Category: aborted, Message: "aborted"}
	}
	return nil
}

// httpOutcome evaluates an Http step's output variables and then its assertion over the
// response (spec 15.3).
func httpOutcome(n *plan.Node, spec any, resp map[string]any, root map[string]any, fqn string) (map[string]any, *contract.Failure) {
	data := make(map[string]any, len(root)+4)
	for k, v := range root {
		data[k] = v
	}
	for _, k := range []string{"httpUrl", "httpMethod", "httpResponseCode", "httpResponseBody"} {
		data[k] = resp[k]
	}
	scope := expressions.NewScope(data, fqn)
	opts := unresolvedMode(n.Unresolved)
	m, _ := spec.(map[string]any)
	outVars := map[string]any{}
	if list, ok := m["outputVariables"].([]any); ok {
		for _, e := range list {
			ov, _ := e.(map[string]any)
			name := expressions.ToString(ov["name"])
			src, _ := ov["value"].(string)
			v, err := expressions.Render(src, expressions.Text, scope, opts)
			if err != nil {
				return resp, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("output variable %s: %v", name, err)}
			}
			outVars[name] = v
		}
	}
	out := map[string]any{}
	for k, v := range resp {
		out[k] = v
	}
	out["outputVariables"] = outVars
	out["status"] = "SUCCESS"
	assertion, _ := m["assertion"].(string)
	if strings.TrimSpace(assertion) == "" {
		return out, nil
	}
	v, err := expressions.Render(assertion, expressions.Condition, scope, opts)
	if err != nil {
		out["status"], out["errorMsg"] = "FAILURE", "assertion error: "+err.Error()
		return out, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("assertion %q could not be evaluated: %v", assertion, err)}
	}
	if ok, _ := v.(bool); !ok {
		out["status"], out["errorMsg"] = "FAILURE", "assertion failed"
		return out, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("assertion failed: %s (response code %v)", assertion, resp["httpResponseCode"])}
	}
	return out, nil
}
