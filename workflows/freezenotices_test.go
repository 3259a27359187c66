package workflows_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/workflows"
)

// A freeze's notices: OnEnableFreezeWindow when it is switched on, FreezeWindowEnabled as each
// window begins (a daily one, every day, at its start), a changed freeze replaces the one
// waited on, and a stop ends the workflow.
func TestFreezeNotices(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.FreezeNotices, workflow.RegisterOptions{Name: workflows.FreezeNoticesName})
	var got []workflows.FreezeNotice
	env.RegisterActivityWithOptions(func(_ context.Context, n workflows.FreezeNotice) error {
		got = append(got, n)
		return nil
	}, activity.RegisterOptions{Name: workflows.FreezeNotifyActivity})
	start := env.Now().UTC().Truncate(time.Minute).Add(2 * time.Hour)
	daily := plan.Freeze{ID: "nightly", Name: "Nightly", Windows: []plan.FreezeWindow{{Zone: "UTC", Start: start, Duration: time.Hour, Recurrence: "Daily"}}}
	rules := []plan.NotificationRule{{Identifier: "freeze.nightly.ops"}}
	// After the second window has begun, the freeze moves its window; then it is stopped.
	env.RegisterDelayedCallback(func() {
		moved := daily
		moved.Windows = []plan.FreezeWindow{{Zone: "UTC", Start: start.Add(30 * time.Minute), Duration: time.Hour}}
		env.SignalWorkflow(workflows.SignalFreezeChanged, workflows.FreezeNoticesInput{Freeze: moved, Rules: rules})
	}, 27*time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalFreezeChanged, workflows.FreezeNoticesInput{Stop: true})
	}, 80*time.Hour)
	env.ExecuteWorkflow(workflows.FreezeNoticesName, workflows.FreezeNoticesInput{Freeze: daily, Rules: rules, Announce: true})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	want := []struct {
		event string
		from  time.Time
	}{
		{contract.EventOnEnableFreezeWindow, time.Time{}},
		{contract.EventFreezeWindowEnabled, start},
		{contract.EventFreezeWindowEnabled, start.Add(24 * time.Hour)},
	}
	if len(got) != len(want) {
		t.Fatalf("notices %+v, want %d", got, len(want))
	}
	for i, w := range want {
		n := got[i]
		if n.Event != w.event || n.Freeze != "nightly" || len(n.Rules) != 1 || (!w.from.IsZero() && !n.From.Equal(w.from)) {
			t.Errorf("notice %d: %+v, want %s from %s", i, n, w.event, w.from)
		}
		if w.event == contract.EventFreezeWindowEnabled && !n.To.Equal(n.From.Add(time.Hour)) {
			t.Errorf("notice %d ends %s", i, n.To)
		}
	}
}
