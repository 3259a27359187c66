package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// A Refusals run ends after a day, taking the refusals that arrived with its last task.
func TestRefusalsRunEndsAfterADay(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Refusals, workflow.RegisterOptions{Name: RefusalsName})
	start := env.Now()
	for i, at := range []time.Duration{time.Minute, time.Hour, 23 * time.Hour} {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalRefusal, AuditRecord{User: "dev", Action: "abort", Outcome: "refused", Detail: string(rune('a' + i))})
		}, at)
	}
	env.ExecuteWorkflow(RefusalsName)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if took := env.Now().Sub(start); took < 24*time.Hour {
		t.Errorf("the run ended after %v, before its day", took)
	}
}

// A run ends once it holds refusalsPerRun refusals, so no history grows without bound.
func TestRefusalsRunEndsWhenFull(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Refusals, workflow.RegisterOptions{Name: RefusalsName})
	defer func(n int) { refusalsPerRun = n }(refusalsPerRun)
	refusalsPerRun = 5
	start := env.Now()
	for i := range refusalsPerRun {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalRefusal, AuditRecord{User: "dev", Action: "start", Outcome: "refused"})
		}, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(RefusalsName)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if took := env.Now().Sub(start); took > time.Duration(refusalsPerRun+1)*time.Second {
		t.Errorf("a full run waited %v for its day to end", took)
	}
}
