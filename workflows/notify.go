package workflows

import (
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// notices are the notification events the stage raises.
type notices struct {
	*stageRun
	raiser *raiser // nil without notification rules
}

// Notifications is what a stage or a loop batch needs to raise notification events: the rules
// and the pipeline's part of every event. Nil when the pipeline has no enabled rule.
type Notifications struct {
	Rules []plan.NotificationRule `json:"rules"`
	Base  contract.NotifyEvent    `json:"base"`
}

// raiser turns a workflow's node transitions into deliveries (spec 20.2, 20.5.1-2).
type raiser struct {
	n     *Notifications
	times map[string]int // events raised so far by node and type, for occurrences
}

func newRaiser(n *Notifications) *raiser {
	if n == nil || len(n.Rules) == 0 {
		return nil
	}
	return &raiser{n: n, times: map[string]int{}}
}

// wants reports whether any rule could select events of a level.
func (r *raiser) wants(level string) bool { return r != nil && contract.Wants(r.n.Rules, level) }

// deliveries are what an event causes. Target fields render in the scope of the node that
// raised it (root and fqn); secrets stay references.
func (r *raiser) deliveries(ctx workflow.Context, ev contract.NotifyEvent, root map[string]any, fqn string) []contract.Delivery {
	if r == nil {
		return nil
	}
	b := r.n.Base
	ev.ExecutionID, ev.Namespace, ev.Pipeline, ev.PipelineName = b.ExecutionID, b.Namespace, b.Pipeline, b.PipelineName
	ev.Org, ev.Project, ev.SequenceID, ev.TriggerType, ev.TriggeredBy, ev.TriggerMail = b.Org, b.Project, b.SequenceID, b.TriggerType, b.TriggeredBy, b.TriggerMail
	if ev.Mode == "" {
		ev.Mode = ModeNormal
	}
	k := ev.Node + "\x00" + ev.Type
	r.times[k]++
	ev.Occurrence = r.times[k]
	ds := NotifyDeliveries(r.n.Rules, ev, root, fqn)
	if len(ds) == 0 {
		return nil
	}
	// Executions started before notifications were delivered carry no rules and never get
	// here; the marker guards the commands a delivery adds.
	if workflow.GetVersion(ctx, changeNotifications, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	return ds
}

// NotifyDeliveries are the deliveries rules make of an event, their target fields rendered in
// the scope of the node that raised it (root and fqn; an unresolved expression fails the
// delivery); secrets stay references. `gantry notify test` renders its samples with it.
func NotifyDeliveries(rules []plan.NotificationRule, ev contract.NotifyEvent, root map[string]any, fqn string) []contract.Delivery {
	scope := expressions.NewScope(root, fqn)
	return contract.Deliveries(rules, ev, func(s string) (string, error) {
		return expressions.RenderString(s, scope, expressions.Options{Unresolved: expressions.UnresolvedFail})
	})
}

// maxBatch bounds the deliveries of one signal: many loop iterations' events must not make a
// payload bigger than Temporal accepts.
const maxBatch = 200

// outbox forwards a pipeline's deliveries, in emission order, to its notifier, which it starts
// at the first delivery.
type outbox struct {
	executionID string
	summary     string
	settings    NotifySettings
	pending     []contract.Delivery
	running     bool // the forwarder runs
	final       bool // the pipeline ended: send what is left, then Final
	done        bool
}

func (o *outbox) add(ctx workflow.Context, ds []contract.Delivery) {
	if len(ds) == 0 {
		return
	}
	o.pending = append(o.pending, ds...)
	if o.running {
		return
	}
	o.running = true
	// Aborting the pipeline must not stop its notifications.
	fctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(fctx, o.forward)
}

func (o *outbox) forward(ctx workflow.Context) {
	defer func() { o.done = true }()
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        NotifierID(o.executionID),
		TaskQueue:         workflow.GetInfo(ctx).TaskQueueName,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON, // deliveries outlive the pipeline
		StaticSummary:     "Notifications of " + o.summary,
	})
	in := NotifierInput{ExecutionID: o.executionID, Settings: o.settings, Initial: o.take()}
	in.Closed = o.final && len(o.pending) == 0 // started at the pipeline's end: everything is in its input
	f := workflow.ExecuteChildWorkflow(cctx, NotifierName, in)
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("notifications: the notifier workflow did not start; this execution's notifications are not sent", "error", err)
		return
	}
	if in.Closed {
		return
	}
	// Batches go out as they come, without waiting for the earlier ones to arrive (their Seq
	// keeps them in order); the pipeline waits for them all only before it closes, since
	// Temporal drops a signal whose sender has closed. With nothing left to send at the end,
	// no Final batch goes out: the notifier finds the pipeline closed by itself, and the
	// pipeline closes without waiting for a round trip.
	var sent []workflow.Future
	seq := 0
	for {
		_ = workflow.Await(ctx, func() bool { return len(o.pending) > 0 || o.final })
		final := o.final
		for len(o.pending) > 0 {
			seq++
			b := NotifyBatch{Seq: seq, Deliveries: o.take()}
			b.Final = final && len(o.pending) == 0
			sent = append(sent, f.SignalChildWorkflow(ctx, SignalNotify, b))
		}
		if final {
			for _, s := range sent {
				if err := s.Get(ctx, nil); err != nil {
					workflow.GetLogger(ctx).Error("notifications: could not hand deliveries to the notifier", "error", err)
				}
			}
			return
		}
	}
}

// take removes the next batch of pending deliveries.
func (o *outbox) take() []contract.Delivery {
	n := min(len(o.pending), maxBatch)
	out := o.pending[:n:n]
	o.pending = o.pending[n:]
	return out
}

// close sends what is left and tells the notifier the pipeline is done.
func (o *outbox) close(ctx workflow.Context) {
	if !o.running {
		return
	}
	o.final = true
	_ = workflow.Await(ctx, func() bool { return o.done })
}

// raise raises a pipeline-level or stage event in the pipeline workflow.
func (p *pipelineRun) raise(ctx workflow.Context, ev contract.NotifyEvent, root map[string]any, fqn string) {
	if p.raiser == nil {
		return
	}
	if p.segment { // the pipeline delivers, as for the stages
		signalRaise(ctx, p.raiser, p.id, ev, root, fqn, func(ctx workflow.Context, id, name string, arg any) {
			p.signals = append(p.signals, workflow.SignalExternalWorkflow(ctx, id, "", name, arg))
		})
		return
	}
	p.pullNotifications(ctx)
	p.out.add(ctx, p.raiser.deliveries(ctx, ev, root, fqn))
}

// listenNotifications takes the deliveries stages and loop batches raise.
func (p *pipelineRun) listenNotifications(ctx workflow.Context) {
	if p.raiser == nil {
		return
	}
	p.notes = workflow.GetSignalChannel(ctx, SignalNotify)
	if workflow.GetVersion(ctx, changeNotifyOrder, workflow.DefaultVersion, 1) == 1 {
		// Only ever take batches with pullNotifications. A coroutine blocked in Receive is
		// handed the next batch outright, past the buffer that raise drains first, so a
		// stage's step events could follow its end event (and the next stage's start) when
		// both arrive in one workflow task.
		dctx, _ := workflow.NewDisconnectedContext(ctx) // notifications outlive an abort
		workflow.Go(dctx, func(ctx workflow.Context) {
			for workflow.Await(ctx, func() bool { return p.notes.Len() > 0 }) == nil {
				p.pullNotifications(ctx)
			}
		})
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var b NotifyBatch
			if !p.notes.Receive(ctx, &b) {
				return
			}
			p.out.add(ctx, b.Deliveries)
			p.pullNotifications(ctx)
		}
	})
}

// pullNotifications takes the deliveries that have arrived: a stage's step events come before
// the stage's own end event even when both arrive in one workflow task.
func (p *pipelineRun) pullNotifications(ctx workflow.Context) {
	if p.notes == nil {
		return
	}
	for {
		var b NotifyBatch
		if !p.notes.ReceiveAsync(&b) {
			return
		}
		p.out.add(ctx, b.Deliveries)
	}
}

// pipelineEvent raises a pipeline-level event.
func (p *pipelineRun) pipelineEvent(ctx workflow.Context, typ string, st status.Status) {
	if !p.raiser.wants("pipeline") {
		return
	}
	ev := contract.NotifyEvent{Type: typ, Node: "pipeline", Status: st, Start: *p.tree.StartedAt, Mode: modeOf(p.data)}
	if p.tree.EndedAt != nil && typ != contract.EventPipelineStart {
		ev.End = p.tree.EndedAt
	}
	if p.tree.Abort != nil {
		ev.AbortedBy = p.tree.Abort.By
	}
	if failed(st) {
		ev.Error = failureMessage(st, p.tree)
	}
	p.raise(ctx, ev, p.root, "pipeline")
}

// stageEvent raises a stage event for stage node n (an iteration of a looped stage included).
func (p *pipelineRun) stageEvent(ctx workflow.Context, typ string, n *plan.Node, t *Node, root map[string]any) {
	if !p.raiser.wants("stage") {
		return
	}
	root = startingStage(typ, n, root)
	p.raise(ctx, stageEvent(typ, n, t, root), root, "pipeline.stages."+n.ID)
	if ev, ok := freezeRejection(typ, n, t, root); ok {
		p.raise(ctx, ev, root, "pipeline.stages."+n.ID)
	}
}

// freezeRejection is the event of a deployment freeze that refused a stage, raised after the
// stage's StageFailed; only the freeze's own rules select it.
func freezeRejection(typ string, n *plan.Node, t *Node, root map[string]any) (contract.NotifyEvent, bool) {
	if typ != contract.EventStageFailed || t.Status != status.FreezeFailed || t.Freeze == "" {
		return contract.NotifyEvent{}, false
	}
	ev := stageEvent(contract.EventDeploymentRejected, n, t, root)
	ev.Freeze = t.Freeze
	return ev, true
}

// startingStage gives a stage that starts its identity in the scope, so its StageStart
// renders <+stage.identifier> and <+stage.name>.
func startingStage(typ string, n *plan.Node, root map[string]any) map[string]any {
	if typ != contract.EventStageStart {
		return root
	}
	return withStageData(root, n.ID, map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type})
}

// stageEvent is the event of a stage node; its end status picks success or failure.
func stageEvent(typ string, n *plan.Node, t *Node, root map[string]any) contract.NotifyEvent {
	ev := contract.NotifyEvent{Type: typ, Node: t.Path, Stage: n.ID, StageName: n.Name, StageBase: baseID(n), Status: t.Status,
		Mode: modeOf(child(root, "pipeline"))}
	if strings.HasPrefix(t.Path, "pipelineRollback.") {
		ev.Mode = ModePipelineRollback
	}
	if t.StartedAt != nil {
		ev.Start = *t.StartedAt
	}
	if typ != contract.EventStageStart && t.EndedAt != nil {
		ev.End = t.EndedAt
	}
	if failed(t.Status) || t.Status == status.Aborted {
		ev.Error = failureMessage(t.Status, t)
		if t.Failure != nil {
			ev.Category = string(t.Failure.Category)
		}
	}
	return ev
}

// stageEndType is the event a stage's final status raises, or "" (skipped, suspended).
func stageEndType(st status.Status) string {
	switch {
	case st == status.Succeeded || st == status.IgnoreFailed:
		return contract.EventStageSuccess
	case failed(st) || st == status.Aborted:
		return contract.EventStageFailed
	}
	return ""
}

// withStageData is root with a stage's data in place, so stage events render <+stage.*>.
func withStageData(root map[string]any, id string, data map[string]any) map[string]any {
	if data == nil {
		return root
	}
	pl := copyMap(child(root, "pipeline"))
	stages := copyMap(child(pl, "stages"))
	stages[id] = data
	pl["stages"] = stages
	out := copyMap(root)
	out["pipeline"] = pl
	return out
}

func modeOf(pipelineData map[string]any) string {
	if m, ok := pipelineData["executionMode"].(string); ok {
		return m
	}
	return ModeNormal
}

// baseID is a node's identifier as written in the YAML (loop postfix removed).
func baseID(n *plan.Node) string { return strings.TrimSuffix(n.ID, n.Postfix) }

// signalRaise raises an event in a stage or batch workflow: its deliveries go to the pipeline
// as a signal the workflow waits for before it completes.
func signalRaise(ctx workflow.Context, r *raiser, executionID string, ev contract.NotifyEvent, root map[string]any, fqn string, send func(workflow.Context, string, string, any)) {
	ds := r.deliveries(ctx, ev, root, fqn)
	if len(ds) == 0 {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for len(ds) > 0 {
		n := min(len(ds), maxBatch)
		send(dctx, executionID, SignalNotify, NotifyBatch{Deliveries: ds[:n:n]})
		ds = ds[n:]
	}
}

// stepEvent raises a step event (StepFailed, WaitingForUserAction) or PipelineResumed for a
// step in a stage workflow.
func (s *notices) stepEvent(ctx workflow.Context, typ string, t *Node, st status.Status) {
	if s.raiser == nil || !s.raiser.wants(contract.EventLevel(typ)) {
		return
	}
	info := s.stepInfo[t.Path]
	ev := contract.NotifyEvent{Type: typ, Node: t.Path, Stage: s.in.Stage.ID, StageName: s.in.Stage.Name, StageBase: baseID(s.in.Stage),
		Step: t.ID, StepName: t.Name, StepType: t.Type, StepPath: info.base, Status: st, Mode: s.in.Mode}
	if t.StartedAt != nil {
		ev.Start = *t.StartedAt
	}
	now := workflow.Now(ctx)
	if typ != contract.EventWaitingForUserAction {
		ev.End = &now
	} else {
		ev.Action = actionCommand(s.in.ExecutionID, t.Path, st, t.Actions)
	}
	if typ == contract.EventStepFailed && t.Failure != nil {
		ev.Category, ev.Error = string(t.Failure.Category), t.Failure.Message
	}
	root := info.root
	if root == nil {
		root = s.root
	}
	signalRaise(ctx, s.raiser, s.in.ExecutionID, ev, root, info.fqn, s.signal)
}

// stepNote is what step events need to know about a running step.
type stepNote struct {
	base string         // stage.group.step base path
	fqn  string         // expression path
	root map[string]any // expression roots in its frame
}

// noteStep remembers a step's base path and scope for its events.
func (s *notices) noteStep(n *plan.Node, t *Node, fqn string, fr *frame) {
	if s.raiser == nil {
		return
	}
	parts := []string{baseID(n)}
	for x := fr; x != nil; x = x.parent {
		if x.group != nil {
			parts = append([]string{baseID(x.group)}, parts...)
		}
	}
	parts = append([]string{baseID(s.in.Stage)}, parts...)
	s.stepInfo[t.Path] = stepNote{base: strings.Join(parts, "."), fqn: fqn, root: s.rootFor(fr)}
}

// actionCommand is the command that acts on a node waiting for a user.
func actionCommand(execution, path string, st status.Status, actions []string) string {
	switch st {
	case status.ApprovalWaiting:
		return "gantry approve " + execution + " --step " + path + "   (or: gantry reject " + execution + " --step " + path + ")"
	case status.InputWaiting:
		return "gantry input " + execution + " --step " + path + " --set KEY=VALUE"
	}
	return "gantry intervene " + execution + " " + path + " --action " + strings.Join(actions, "|")
}

// waitNode is the node waiting at path, when events are wanted.
func (s *notices) waitNode(path string) *Node {
	if s.raiser == nil {
		return nil
	}
	return s.tree.Find(path)
}
