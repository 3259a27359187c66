package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// dispatcher applies failure-strategy actions to one failed step (spec 5.5-5.10).
type dispatcher struct {
	s       *stageRun
	ctx     workflow.Context
	n       *plan.Node
	t       *Node
	fr      *frame
	data    map[string]any
	retries int
	by      string // who chose the action being applied (ManualIntervention), "timeout", or ""
}

func (d *dispatcher) finish(st status.Status, f *contract.Failure) {
	d.data["status"] = string(st)
	d.s.end(d.ctx, d.t, st, f)
	if failed(st) { // the attempt's status after the failure strategy (spec 20.2.1)
		d.s.notices.stepEvent(d.ctx, contract.EventStepFailed, d.t, st)
	}
}

func (d *dispatcher) note(format string, args ...any) {
	d.t.Notes = append(d.t.Notes, fmt.Sprintf(format, args...))
}

// applied records the action taken on the failure; by is set while a person's choice applies.
func (d *dispatcher) applied(action string) {
	d.t.Strategy = &StrategyAction{Action: action, By: d.by}
}

// handle applies act to the failure; it returns true when the step must run again.
// afterIntervention is set when the action came out of a manual-intervention wait: Retry and
// ManualIntervention advisers then no longer apply to this failure (spec 5.5, 5.8).
func (d *dispatcher) handle(st status.Status, f *contract.Failure, act *plan.Action, afterIntervention bool) bool {
	s := d.s
	if !afterIntervention {
		d.by = ""
	}
	if act == nil {
		return d.fallback(st, f)
	}
	switch act.Type {
	case "Ignore", "MarkAsSuccess", "MarkAsFailure", "Abort", "StageRollback", "StepGroupRollback", "PipelineRollback":
		d.applied(act.Type)
	}
	switch act.Type {
	case "Ignore":
		d.note("Ignore (%s)", f.Category)
		d.finish(status.IgnoreFailed, f)
	case "MarkAsSuccess":
		d.note("MarkAsSuccess after %s: %s", f.Category, f.Message)
		d.finish(status.Succeeded, nil)
	case "MarkAsFailure":
		d.note("MarkAsFailure (%s)", f.Category)
		d.finish(status.Failed, f)
	case "Abort":
		d.note("Abort (%s)", f.Category)
		d.finish(status.Aborted, f)
		s.abort()
	case "Retry":
		return d.retry(st, f, act, afterIntervention)
	case "RetryStepGroup":
		return d.retryGroup(st, f, act, afterIntervention)
	case "ManualIntervention":
		if afterIntervention {
			return d.fallback(st, f)
		}
		return d.intervention(st, f, act)
	case "StageRollback":
		d.note("StageRollback (%s)", f.Category)
		d.finish(st, f)
		s.stageRollback = true
		s.forward.halted = true
	case "StepGroupRollback":
		d.note("StepGroupRollback (%s)", f.Category)
		d.finish(st, f)
		if g := d.fr.groupFrame(act.Group); g != nil {
			g.undo, g.halted = true, true
		}
		s.forward.halted = true // the rest of the stage is not visited (spec 5.10.2)
	case "PipelineRollback":
		d.note("PipelineRollback (%s)", f.Category)
		d.finish(st, f)
		s.pipelineRollback = true
		s.forward.halted = true
	default: // ProceedWithDefaultValues applies only to execution-input timeouts
		return d.fallback(st, f)
	}
	return false
}

// retry runs the step again, after its interval, while retries are left; then the action's
// onRetryFailure applies (spec 5.6).
func (d *dispatcher) retry(st status.Status, f *contract.Failure, act *plan.Action, afterIntervention bool) bool {
	if afterIntervention {
		return d.fallback(st, f)
	}
	if d.retries < act.RetryCount {
		interval := ""
		if len(act.RetryIntervals) > 0 {
			interval = act.RetryIntervals[min(d.retries, len(act.RetryIntervals)-1)]
		}
		d.note("Retry %d of %d after %s (%s)", d.retries+1, act.RetryCount, interval, f.Category)
		d.applied("Retry")
		if !d.s.sleepInterval(d.ctx, d.t, interval) {
			d.finish(status.Aborted, f)
			return false
		}
		d.retries++
		d.data["retryCount"] = d.retries
		return true
	}
	return d.handle(st, f, act.OnRetryFailure, afterIntervention)
}

// retryGroup ends the step and has its step group run again from its first element, while
// the group's retries are left (spec 5.7).
func (d *dispatcher) retryGroup(st status.Status, f *contract.Failure, act *plan.Action, afterIntervention bool) bool {
	g := d.fr.groupFrame(act.Group)
	if afterIntervention || g == nil || g.retries >= act.RetryCount {
		return d.fallback(st, f) // retries exhausted: this adviser no longer applies
	}
	d.note("RetryStepGroup %s (%s)", act.Group, f.Category)
	d.applied("RetryStepGroup")
	d.finish(st, f)
	g.retry, g.halted = true, true
	if len(act.RetryIntervals) > 0 {
		g.interval = act.RetryIntervals[min(g.retries, len(act.RetryIntervals)-1)]
	}
	return false
}

// fallback ends the step with its failure; in a rollback section it also stops the section
// (spec 5.5.3, 5.10.4).
func (d *dispatcher) fallback(st status.Status, f *contract.Failure) bool {
	d.finish(st, f)
	if rb := d.fr.rollbackFrame(); rb != nil {
		rb.halted = true
	}
	return false
}

// intervention waits for a user's decision or the timeout, then applies it.
func (d *dispatcher) intervention(st status.Status, f *contract.Failure, act *plan.Action) bool {
	d.by = ""
	d.applied("ManualIntervention")
	choice, user, ok := d.s.decisions.waitForUser(d.ctx, d.t, d.fr, act)
	switch {
	case !ok:
		d.finish(status.Aborted, f)
		return false
	case user == "":
		d.note("ManualIntervention timed out: %s", choice.Type)
		d.by = "timeout"
	default:
		d.note("%s chosen by %s", choice.Type, user)
		d.by = user
		if choice.Type == "Retry" {
			d.applied("Retry")
			d.retries++
			d.data["retryCount"] = d.retries
			return true // the new attempt's failure is dispatched afresh (spec 5.8.5)
		}
	}
	return d.handle(st, f, choice, true)
}
