package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/status"
)

// decisions are what waits for people: interventions, approvals and execution inputs.
type decisions struct {
	*stageRun
	waiting    map[string]*pending      // nodes waiting for a user, by path
	waitStatus map[string]status.Status // nodes waiting for users, by path
	owed       *WaitingSignal           // "nothing waits" not yet reported (changeQuietWaiting)
	approvals  map[string]*approval
	inputs     map[string]*inputWait // steps waiting for execution-time inputs
}

// DefaultInterventionTimeout applies when a ManualIntervention has no usable timeout (spec 5.8).
const DefaultInterventionTimeout = 24 * time.Hour

// pending is a node waiting in INTERVENTION_WAITING.
type pending struct {
	actions []string
	choice  *InterventionRequest
}

// runningStep is a step attempt a user may mark while it runs.
type runningStep struct {
	cancel   workflow.CancelFunc
	builtin  string // the step's plan.Traits.Builtin
	decision string
	user     string
}

// WaitingSignal tells the pipeline what a stage waits for from users (INTERVENTION_WAITING,
// APPROVAL_WAITING), or "" when nothing.
type WaitingSignal struct {
	Stage  string        `json:"stage"`
	Count  int           `json:"count"`
	Status status.Status `json:"status,omitempty"`
	// Source is the batch workflow that sends it (a big loop's iterations); "" for the stage.
	// The stage and each of its batches wait on their own nodes; none overrides another.
	Source string `json:"source,omitempty"`
	// Nodes are the steps that wait, as the pipeline lists them in its memo (MemoWaiting).
	Nodes []WaitingNode `json:"nodes,omitempty"`
}

// WaitingNode is a step that waits for users: an approval, an intervention or execution-time
// inputs.
type WaitingNode struct {
	Path     string        `json:"path"`
	Status   status.Status `json:"status"`
	Approval *ApprovalView `json:"approval,omitempty"`
	Ticket   *TicketView   `json:"ticket,omitempty"`
	Actions  []string      `json:"actions,omitempty"`
	Inputs   []string      `json:"inputs,omitempty"`
}

// interventionActions are the choices of spec 5.8 for a node in frame fr.
func interventionActions(fr *frame) []string {
	out := []string{"MarkAsSuccess", "Ignore", "Retry", "MarkAsFailure", "Abort"}
	if fr.rollbackFrame() == nil {
		out = append(out, "StageRollback")
		if fr.groupFrame("") != nil {
			out = append(out, "StepGroupRollback")
		}
		out = append(out, "PipelineRollback")
	}
	return out
}

// waitForUser puts a node in INTERVENTION_WAITING until a user decides or the timeout fires.
// It returns the action to apply, the user ("" for the timeout action) and false when the
// stage was cancelled meanwhile.
func (s *decisions) waitForUser(ctx workflow.Context, t *Node, fr *frame, act *plan.Action) (*plan.Action, string, bool) {
	timeout := DefaultInterventionTimeout
	if d, err := duration.Parse(act.Timeout); err == nil {
		timeout = d
	}
	p := &pending{actions: interventionActions(fr)}
	s.waiting[t.Path] = p
	t.Status, t.Actions = status.InterventionWaiting, p.actions
	s.setWaiting(ctx, t.Path, status.InterventionWaiting)
	decided, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return p.choice != nil })
	delete(s.waiting, t.Path)
	t.Actions = nil
	s.setWaiting(ctx, t.Path, "")
	if decided && err == nil {
		s.notices.stepEvent(ctx, contract.EventPipelineResumed, t, status.Running)
	}
	if err != nil {
		return nil, "", false
	}
	if !decided {
		if act.OnTimeout == nil {
			return &plan.Action{Type: "MarkAsFailure"}, "", true
		}
		return act.OnTimeout, "", true
	}
	return &plan.Action{Type: p.choice.Action, Group: ""}, p.choice.User, true
}

// setWaiting records that a node waits for users (st "" when it stopped) and reports the
// stage's strongest waiting status to the pipeline, which shows it in GantryStatus.
func (s *decisions) setWaiting(ctx workflow.Context, path string, st status.Status) {
	if st == "" {
		delete(s.waitStatus, path)
	} else {
		s.waitStatus[path] = st
		if t := s.notices.waitNode(path); t != nil {
			s.notices.stepEvent(ctx, contract.EventWaitingForUserAction, t, st)
		}
	}
	s.publish(ctx)
	s.reportWaiting(ctx)
}

// reportWaiting tells the pipeline what the stage waits for now. That nothing waits any more
// is said later (changeQuietWaiting): by flushWaiting when the stage next blocks, or by the
// stage's result when it ends first, which saves a signal, and a workflow task on each side,
// for every approval that ends its stage.
func (s *decisions) reportWaiting(ctx workflow.Context) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	var all []status.Status
	var nodes []WaitingNode
	for _, p := range sortedKeys(statusMap(s.waitStatus)) {
		all = append(all, s.waitStatus[p])
		nodes = append(nodes, s.waitingNode(p, s.waitStatus[p]))
	}
	var strongest status.Status
	if len(all) > 0 {
		strongest = status.Rollup(all)
	}
	w := WaitingSignal{Stage: s.in.Stage.ID, Count: len(all), Status: strongest, Nodes: nodes}
	if s.in.Batch != nil {
		w.Source = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	// Only the pipeline reads a stage's result for it (not a batch of a big stage loop).
	if len(all) == 0 && parent.ID == s.in.ExecutionID && workflow.GetVersion(ctx, changeQuietWaiting, workflow.DefaultVersion, 1) == 1 {
		s.owed = &w
		return
	}
	s.owed = nil
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	s.signal(dctx, s.in.ExecutionID, signalWaiting, w)
}

// flushWaiting sends an owed "nothing waits" report once the stage's other coroutines block:
// the stage went on to something that takes time. The root coroutine runs first in each pass,
// so a stage that ends in the same workflow task takes the owed report into its result first.
func (s *decisions) flushWaiting(ctx workflow.Context) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for {
		if workflow.Await(ctx, func() bool { return s.owed != nil }) != nil {
			return
		}
		w := *s.owed
		s.owed = nil
		s.signal(ctx, s.in.ExecutionID, signalWaiting, w)
	}
}

// waitingNode describes the waiting step at path for the pipeline's memo.
func (s *decisions) waitingNode(path string, st status.Status) WaitingNode {
	w := WaitingNode{Path: path, Status: st}
	if t := s.tree.Find(path); t != nil {
		w.Approval, w.Ticket, w.Actions, w.Inputs = t.Approval, t.Ticket, t.Actions, t.Inputs
	}
	return w
}

func statusMap(m map[string]status.Status) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// registerIntervene installs the intervene update: a validator that rejects anything but an
// allowed action on a waiting or running node (so a bad request leaves no trace in history),
// and a handler that hands the decision to the waiting step.
func (s *decisions) registerIntervene(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateIntervene,
		func(ctx workflow.Context, req InterventionRequest) (string, error) {
			if p := s.waiting[req.Path]; p != nil {
				p.choice = &req
				return fmt.Sprintf("%s applied to %s", req.Action, req.Path), nil
			}
			r := s.running[req.Path]
			r.decision, r.user = req.Action, req.User
			r.cancel()
			return fmt.Sprintf("%s applied to running %s", req.Action, req.Path), nil
		},
		workflow.UpdateHandlerOptions{Validator: s.validateIntervention})
}

func (s *decisions) validateIntervention(req InterventionRequest) error {
	if req.User == "" {
		return refuse(ErrForbidden, "an intervention must name the user who makes it")
	}
	if p := s.waiting[req.Path]; p != nil {
		if !slices.Contains(p.actions, req.Action) {
			return refuse(ErrInvalid, "action %q is not available for %s; choose one of %s", req.Action, req.Path, strings.Join(p.actions, ", "))
		}
		return nil
	}
	if r := s.running[req.Path]; r != nil {
		allowed := []string{"MarkAsFailure"}
		if r.builtin == "wait" {
			allowed = append(allowed, "MarkAsSuccess")
		}
		if !slices.Contains(allowed, req.Action) {
			return refuse(ErrInvalid, "%s is running; it can only be given %s", req.Path, strings.Join(allowed, " or "))
		}
		return nil
	}
	n := s.tree.Find(req.Path)
	if n == nil {
		return refuse(ErrNotWaiting, "stage %s has no node %s", s.in.Stage.ID, req.Path)
	}
	return refuse(ErrNotWaiting, "%s is %s, not waiting for intervention or running", req.Path, n.Status)
}
