package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// FreezeNoticesName is the workflow that tells a deployment freeze's notification rules of the
// freeze's own events: OnEnableFreezeWindow when it starts (the freeze was switched on) and
// FreezeWindowEnabled as each window begins. One runs per freeze file that has such rules, in
// the internal namespace, kept in step with the file by `gantry server` (FreezeNoticesID).
const FreezeNoticesName = "gantry.FreezeNotices"

// FreezeNotifyActivity hands one freeze event's deliveries to a notifier workflow
// (FreezeNotice); the notifier's ID makes a repeat harmless.
const FreezeNotifyActivity = "gantry.NotifyFreeze"

// SignalFreezeChanged gives a FreezeNotices workflow its freeze as the file now has it
// (FreezeNoticesInput), or tells it to stop (Stop: the file is gone or disabled).
const SignalFreezeChanged = "freeze-changed"

// FreezeNoticesID is the workflow ID of a freeze's notices.
func FreezeNoticesID(freeze string) string { return "gantry-freeze-notices/" + freeze }

// FreezeNoticesInput is a freeze with the rules that select its own events.
type FreezeNoticesInput struct {
	Freeze plan.Freeze             `json:"freeze"`
	Rules  []plan.NotificationRule `json:"rules"`
	// Announce raises OnEnableFreezeWindow first: set when the freeze is switched on.
	Announce bool `json:"announce,omitempty"`
	// Stop ends the workflow (as a signal).
	Stop bool `json:"stop,omitempty"`
}

// FreezeNotice is one freeze event to tell the rules of: a window (From, To) that begins, or
// the freeze switched on at From.
type FreezeNotice struct {
	Event  string                  `json:"event"`
	Freeze string                  `json:"freeze"`
	Name   string                  `json:"name,omitempty"`
	From   time.Time               `json:"from"`
	To     time.Time               `json:"to,omitzero"`
	Rules  []plan.NotificationRule `json:"rules"`
}

// freezeNoticesPerRun bounds one run's history: it continues as new after this many windows
// and changes.
const freezeNoticesPerRun = 200

// FreezeNotices waits for each window of its freeze to begin and tells the rules, until it is
// stopped; a changed freeze replaces the one it waits on.
func FreezeNotices(ctx workflow.Context, in FreezeNoticesInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 20},
		Summary:             "notify freeze " + in.Freeze.ID,
	})
	notify := func(event string, from, to time.Time) {
		n := FreezeNotice{Event: event, Freeze: in.Freeze.ID, Name: in.Freeze.Name, From: from, To: to, Rules: in.Rules}
		if err := workflow.ExecuteActivity(ctx, FreezeNotifyActivity, n).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("freeze notification not handed to a notifier", "freeze", in.Freeze.ID, "event", event, "error", err)
		}
	}
	if in.Announce {
		notify(contract.EventOnEnableFreezeWindow, workflow.Now(ctx), time.Time{})
	}
	changes := workflow.GetSignalChannel(ctx, SignalFreezeChanged)
	for turns := 0; turns < freezeNoticesPerRun; turns++ {
		now := workflow.Now(ctx)
		from, to, ok := in.Freeze.NextStart(now)
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		begins := false
		if ok {
			sel.AddFuture(workflow.NewTimer(tctx, from.Sub(now)), func(f workflow.Future) { begins = f.Get(tctx, nil) == nil })
		}
		var changed *FreezeNoticesInput
		sel.AddReceive(changes, func(c workflow.ReceiveChannel, _ bool) {
			var n FreezeNoticesInput
			c.Receive(ctx, &n)
			changed = &n
		})
		sel.Select(ctx)
		cancel()
		switch {
		case changed != nil && changed.Stop:
			return nil
		case changed != nil:
			in.Freeze, in.Rules = changed.Freeze, changed.Rules
		case begins:
			notify(contract.EventFreezeWindowEnabled, from, to)
		}
	}
	// Signals that arrived meanwhile are read by the next run.
	for {
		var n FreezeNoticesInput
		if !changes.ReceiveAsync(&n) {
			break
		}
		if n.Stop {
			return nil
		}
		in.Freeze, in.Rules = n.Freeze, n.Rules
	}
	in.Announce = false
	return workflow.NewContinueAsNewError(ctx, FreezeNoticesName, in)
}
