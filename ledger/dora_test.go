package ledger_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/workflows"
)

// scripted is a history of 200 production deployments whose DORA figures are known: one ends
// every 3 hours from 2026-06-01 00:30 UTC (25 days), alternately to targets a and b; every
// tenth fails (all on b), every fiftieth of those was rolled back; a success's commit is
// 1 to 4 hours older than its end (k%4+1).
func scripted() []contract.LedgerState {
	base := time.Date(2026, 6, 1, 0, 30, 0, 0, time.UTC)
	states := map[string]*contract.LedgerState{}
	for k := range 200 {
		infra := []string{"a", "b"}[k%2]
		st := states[infra]
		if st == nil {
			st = &contract.LedgerState{}
			states[infra] = st
		}
		ended := base.Add(time.Duration(k) * 3 * time.Hour)
		r := contract.DeploymentRecord{Key: contract.DeploymentKey{Service: "checkout", Environment: "prod", Infra: infra},
			Execution: fmt.Sprint("e", k), Stage: "deploy", Ended: ended, Outcome: contract.OutcomeSucceeded,
			CommitTime: ended.Add(-time.Duration(k%4+1) * time.Hour)}
		switch {
		case k%50 == 49:
			r.Outcome = contract.OutcomeRolledBack
		case k%10 == 9:
			r.Outcome = contract.OutcomeFailed
		}
		workflows.LedgerApply(st, r)
	}
	return []contract.LedgerState{*states["a"], *states["b"]}
}

func TestDORAOfAScriptedHistory(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 6, d, 0, 0, 0, 0, time.UTC) }
	states := scripted()
	for _, c := range []struct {
		name                               string
		from, to                           time.Time
		days, deployed, failed, rolledBack int
		frequency, cfr, leadHours          float64
		restores                           int
	}{
		// 440 hours of lead time over 180 successes; 19 restores of 6 hours (the last failure
		// was never followed by a success).
		{"all", day(1), day(26), 25, 200, 20, 4, 7.2, 0.1, 440.0 / 180, 19},
		// Days 11 to 15: deployments 80 to 119.
		{"five days", day(11), day(16).Add(time.Hour), 5, 40, 4, 1, 7.2, 0.1, -1, 4},
		{"before", day(1).AddDate(0, -1, 0), day(1), 31, 0, 0, 0, 0, -1, -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := ledger.ComputeDORA(states, c.from, c.to)
			if d.Days != c.days || d.Deployments != c.deployed || d.Failed != c.failed || d.RolledBack != c.rolledBack || d.Restores != c.restores {
				t.Fatalf("%+v", d)
			}
			if math.Abs(d.FrequencyPerDay-c.frequency) > 1e-9 {
				t.Errorf("frequency %v, want %v", d.FrequencyPerDay, c.frequency)
			}
			if c.cfr < 0 {
				if d.ChangeFailureRate != nil {
					t.Errorf("change failure rate %v without deployments", *d.ChangeFailureRate)
				}
			} else if d.ChangeFailureRate == nil || math.Abs(*d.ChangeFailureRate-c.cfr) > 1e-9 {
				t.Errorf("change failure rate %v, want %v", d.ChangeFailureRate, c.cfr)
			}
			if c.leadHours > 0 && (d.LeadTimeSeconds == nil || math.Abs(*d.LeadTimeSeconds-c.leadHours*3600) > 1e-6) {
				t.Errorf("lead time %v s, want %v h", d.LeadTimeSeconds, c.leadHours)
			}
			if c.restores > 0 && (d.RestoreSeconds == nil || *d.RestoreSeconds != 6*3600) {
				t.Errorf("time to restore %v s, want 6 h", d.RestoreSeconds)
			}
			// The days one by one: eight deployments each (one every three hours), their sums
			// the window's.
			if len(d.Daily) != c.days {
				t.Fatalf("%d days listed, want %d", len(d.Daily), c.days)
			}
			ok, failed := 0, 0
			for _, day := range d.Daily {
				ok, failed = ok+day.Succeeded, failed+day.Failed
				if n := day.Succeeded + day.Failed; c.deployed > 0 && day.Day < "2026-06-26" && day.Day >= "2026-06-01" && n != 8 {
					t.Errorf("%s: %d deployments, want 8", day.Day, n)
				}
			}
			if ok != c.deployed-c.failed || failed != c.failed {
				t.Errorf("days sum to %d succeeded, %d failed", ok, failed)
			}
		})
	}
}
