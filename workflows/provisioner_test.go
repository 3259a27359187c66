package workflows

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// The query finds the newest record of the kinds asked for, of one execution or of any other;
// after provisionerPerRun records the run continues as new with what it keeps.
func TestProvisionerRecordsAndQuery(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Provisioner, workflow.RegisterOptions{Name: contract.ProvisionerName})
	defer func(n int) { provisionerPerRun = n }(provisionerPerRun)
	provisionerPerRun = 4
	records := []contract.ProvisionerRecord{
		{Kind: contract.RecordKindApplied, Execution: "e1", Step: "a"},
		{Kind: contract.RecordKindPlan, Execution: "e2", Step: "p"},
		{Kind: contract.RecordKindApplied, Execution: "e2", Step: "b"},
	}
	for i, r := range records {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalProvisioner, r) }, time.Duration(i+1)*time.Second)
	}
	find := func(q contract.ProvisionerQuery) string {
		t.Helper()
		v, err := env.QueryWorkflow(contract.QueryProvisioner, q)
		if err != nil {
			t.Fatal(err)
		}
		var r *contract.ProvisionerRecord
		if err := v.Get(&r); err != nil {
			t.Fatal(err)
		}
		if r == nil {
			return "none"
		}
		return r.Execution + "/" + r.Step
	}
	env.RegisterDelayedCallback(func() {
		for q, want := range map[*contract.ProvisionerQuery]string{
			{Kinds: []string{contract.RecordKindApplied}}:                                               "e2/b",
			{Kinds: []string{contract.RecordKindApplied}, Execution: "e2", Other: true}:                 "e1/a",
			{Kinds: []string{contract.RecordKindApplied, contract.RecordKindPlan}, Execution: "e2"}:     "e2/b",
			{Kinds: []string{contract.RecordKindPlan}, Execution: "e1"}:                                 "none",
			{Kinds: []string{contract.RecordKindRollback, contract.RecordKindDestroyed}, Execution: ""}: "none",
		} {
			if got := find(*q); got != want {
				t.Errorf("%+v: found %s, want %s", *q, got, want)
			}
		}
		env.SignalWorkflow(contract.SignalProvisioner, contract.ProvisionerRecord{Kind: contract.RecordKindDestroyed, Execution: "e3"})
	}, 10*time.Second)
	env.ExecuteWorkflow(contract.ProvisionerName, []contract.ProvisionerRecord(nil))
	var cont *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("the full run ended with %v, want a continue-as-new", err)
	}
}

// What a run carries into the next: the newest records of each kind, configurations before
// plans within the size budget, no stale plan.
func TestProvisionerKeepsNewestRecords(t *testing.T) {
	defer func(n, b int) { provisionerKeep, provisionerCarryBytes = n, b }(provisionerKeep, provisionerCarryBytes)
	provisionerKeep, provisionerCarryBytes = 2, 100
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	big := make([]byte, 40)
	in := []contract.ProvisionerRecord{
		{Kind: contract.RecordKindApplied, Execution: "1", Sealed: big, Time: now},
		{Kind: contract.RecordKindPlan, Execution: "old", Sealed: big[:1], Time: now.Add(-8 * 24 * time.Hour)},
		{Kind: contract.RecordKindApplied, Execution: "2", Sealed: big, Time: now},
		{Kind: contract.RecordKindPlan, Execution: "3", Sealed: big, Time: now},
		{Kind: contract.RecordKindApplied, Execution: "4", Sealed: big, Time: now},
		{Kind: contract.RecordKindDestroyed, Execution: "5", Sealed: big[:10], Time: now},
	}
	var got []string
	for _, r := range keepRecords(in, now) {
		got = append(got, r.Kind+":"+r.Execution)
	}
	want := []string{"applied:2", "applied:4", "destroyed:5"}
	if len(got) != len(want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("kept %v, want %v", got, want)
		}
	}
}
