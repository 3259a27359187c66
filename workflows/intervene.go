package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/pipeline/duration"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

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
	stepType string
	decision string
	user     string
}

// WaitingSignal tells the pipeline how many nodes of a stage wait for a user.
type WaitingSignal struct {
	Stage string `json:"stage"`
	Count int    `json:"count"`
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
func (s *stageRun) waitForUser(ctx workflow.Context, t *Node, fr *frame, act *plan.Action) (*plan.Action, string, bool) {
	timeout := DefaultInterventionTimeout
	if d, err := duration.Parse(act.Timeout); err == nil {
		timeout = d
	}
	p := &pending{actions: interventionActions(fr)}
	s.waiting[t.Path] = p
	t.Status, t.Actions = status.InterventionWaiting, p.actions
	s.notifyWaiting(ctx)
	decided, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return p.choice != nil })
	delete(s.waiting, t.Path)
	t.Actions = nil
	s.notifyWaiting(ctx)
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

// notifyWaiting reports the number of waiting nodes to the pipeline, which shows it in its
// GantryStatus search attribute.
func (s *stageRun) notifyWaiting(ctx workflow.Context) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.SignalExternalWorkflow(dctx, parent.ID, "", signalWaiting, WaitingSignal{Stage: s.in.Stage.ID, Count: len(s.waiting)})
}

// registerIntervene installs the intervene update: a validator that rejects anything but an
// allowed action on a waiting or running node (so a bad request leaves no trace in history),
// and a handler that hands the decision to the waiting step.
func (s *stageRun) registerIntervene(ctx workflow.Context) error {
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

func (s *stageRun) validateIntervention(req InterventionRequest) error {
	if req.User == "" {
		return fmt.Errorf("an intervention must name the user who makes it")
	}
	if p := s.waiting[req.Path]; p != nil {
		if !slices.Contains(p.actions, req.Action) {
			return fmt.Errorf("action %q is not available for %s; choose one of %s", req.Action, req.Path, strings.Join(p.actions, ", "))
		}
		return nil
	}
	if r := s.running[req.Path]; r != nil {
		allowed := []string{"MarkAsFailure"}
		if r.stepType == "Wait" {
			allowed = append(allowed, "MarkAsSuccess")
		}
		if !slices.Contains(allowed, req.Action) {
			return fmt.Errorf("%s is running; it can only be given %s", req.Path, strings.Join(allowed, " or "))
		}
		return nil
	}
	n := s.tree.Find(req.Path)
	if n == nil {
		return fmt.Errorf("stage %s has no node %s", s.in.Stage.ID, req.Path)
	}
	return fmt.Errorf("%s is %s, not waiting for intervention or running", req.Path, n.Status)
}
