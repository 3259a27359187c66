package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// The ledger applies each deployment once: a repeated delivery changes nothing, a pipeline
// rollback amends the deployment it rolled back, the days count every outcome, a success
// after failures measures the time to restore, and after ledgerPerRun records the run
// continues as new.
func TestLedgerAppliesEachDeploymentOnce(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ledger, workflow.RegisterOptions{Name: contract.LedgerName})
	defer func(n int) { ledgerPerRun = n }(ledgerPerRun)
	ledgerPerRun = 8
	key := contract.DeploymentKey{Project: "default/default", Service: "checkout", Environment: "prod", Infra: "k8s"}
	day := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rec := func(exec, outcome, tag string, ended time.Time) contract.DeploymentRecord {
		return contract.DeploymentRecord{Key: key, Execution: exec, Stage: "deploy", Outcome: outcome, Ended: ended,
			Artifact: &contract.LedgerArtifact{Version: tag}, CommitTime: ended.Add(-time.Hour)}
	}
	records := []contract.DeploymentRecord{
		rec("e1", contract.OutcomeSucceeded, "v1", day),
		rec("e1", contract.OutcomeSucceeded, "v1", day), // delivered twice
		rec("e2", contract.OutcomeFailed, "v2", day.Add(time.Hour)),
		rec("e3", contract.OutcomeFailed, "v2", day.Add(2*time.Hour)),
		rec("e4", contract.OutcomeSucceeded, "v3", day.Add(26*time.Hour)),  // restored 25 h after e2
		rec("e4", contract.OutcomeRolledBack, "v3", day.Add(27*time.Hour)), // a pipeline rollback
	}
	checked := false
	for i, r := range records {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalLedger, r) }, time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() {
		st := queryLedger(t, env)
		if st.Total != 4 || len(st.Recent) != 4 {
			t.Fatalf("total %d, %d recent, want 4 deployments once each: %+v", st.Total, len(st.Recent), st.Recent)
		}
		if r := st.Recent[3]; r.Outcome != contract.OutcomeRolledBack || !r.RolledBackAt.Equal(day.Add(27*time.Hour)) || !r.Ended.Equal(day.Add(26*time.Hour)) {
			t.Errorf("the rolled back deployment reads %+v", r)
		}
		if len(st.Successes) != 1 || st.Successes[0].Execution != "e1" {
			t.Errorf("successes %+v, want e1's only (e4 was rolled back)", st.Successes)
		}
		if st.FailingFor == nil || !st.FailingFor.Equal(day.Add(time.Hour)) {
			t.Errorf("failing since %v, want e2's end: e4 restored nothing after all", st.FailingFor)
		}
		want := []contract.LedgerDay{
			{Day: "2026-11-30", Deployed: 3, Succeeded: 1, Failed: 2, LeadSeconds: 3600, LeadCount: 1},
			// e4's success seemed to restore the target (25 h) until its rollback amended it.
			{Day: "2026-12-01", Deployed: 1, Failed: 1, RolledBack: 1},
		}
		if len(st.Days) != len(want) {
			t.Fatalf("days %+v, want %+v", st.Days, want)
		}
		for i := range want {
			if st.Days[i] != want[i] {
				t.Errorf("day %d: %+v, want %+v", i, st.Days[i], want[i])
			}
		}
		env.SignalWorkflow(contract.SignalLedger, rec("e5", contract.OutcomeSucceeded, "v4", day.Add(31*time.Hour)))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		st := queryLedger(t, env)
		if d := st.Days[1]; d.RestoreCount != 1 || d.RestoreSeconds != 30*3600 || st.FailingFor != nil {
			t.Errorf("after e5: %+v, failing since %v; want one restore of 30 h", d, st.FailingFor)
		}
		checked = true
		env.SignalWorkflow(contract.SignalLedger, rec("e6", contract.OutcomeSucceeded, "v5", day.Add(32*time.Hour)))
	}, 11*time.Second)
	env.ExecuteWorkflow(contract.LedgerName, contract.LedgerState{Key: key})
	if !checked {
		t.Fatal("the run continued as new before the checks")
	}
	var cont *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("the full run ended with %v, want a continue-as-new", err)
	}
}

func queryLedger(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.LedgerState {
	t.Helper()
	v, err := env.QueryWorkflow(contract.QueryLedger)
	if err != nil {
		t.Fatal(err)
	}
	var st contract.LedgerState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// The days kept stay sorted whatever order deployments end in, and the oldest go first once
// ledgerDays are kept.
func TestLedgerKeepsItsNewestDays(t *testing.T) {
	defer func(n int) { ledgerDays = n }(ledgerDays)
	ledgerDays = 3
	var st contract.LedgerState
	day := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for i, offset := range []int{2, 0, 1, 3, 0} {
		LedgerApply(&st, contract.DeploymentRecord{Execution: string(rune('a' + i)), Outcome: contract.OutcomeSucceeded, Ended: day.AddDate(0, 0, offset)})
	}
	var got []string
	for _, d := range st.Days {
		got = append(got, d.Day)
	}
	if want := "2026-01-11 2026-01-12 2026-01-13"; strings.Join(got, " ") != want {
		t.Errorf("days %v, want %s (a deployment of a day older than those kept is not counted)", got, want)
	}
}

// A push's commit time comes from its provider's payload.
func TestCommitTimeFromEventPayloads(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		payload map[string]any
		sha     string
	}{
		"github": {map[string]any{"head_commit": map[string]any{"id": "abc", "timestamp": "2026-11-30T10:15:00+01:00"}}, "abc"},
		"gitlab": {map[string]any{"commits": []any{map[string]any{"id": "old", "timestamp": "2020-01-01T00:00:00Z"},
			map[string]any{"id": "abc", "timestamp": "2026-11-30T09:15:00Z"}}}, "abc"},
		"bitbucket": {map[string]any{"push": map[string]any{"changes": []any{map[string]any{"new": map[string]any{
			"target": map[string]any{"hash": "abc", "date": "2026-11-30T09:15:00+00:00"}}}}}}, "abc"},
	} {
		if got := commitTime(c.payload, c.sha); !got.Equal(at) {
			t.Errorf("%s: commit time %v, want %v", name, got, at)
		}
	}
	if got := commitTime(map[string]any{"head_commit": map[string]any{"id": "other", "timestamp": "2026-11-30T09:15:00Z"}}, "abc"); !got.IsZero() {
		t.Errorf("another commit's time was taken: %v", got)
	}
}
