package workflows_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// jiraIssue answers TicketRead as Jira would for an issue whose status the test scripts by
// read: "To Do" until approvedAt (never when 0), and no answer at all for the reads in down.
type jiraIssue struct {
	mu         sync.Mutex
	reads      int
	approvedAt int
	down       map[int]bool
}

func (j *jiraIssue) read(_ context.Context, in contract.TicketRequest) (contract.TicketState, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.reads++
	if j.down[j.reads] {
		return contract.TicketState{}, errors.New("GET /rest/api/2/issue/OPS-1 at Jira: connection refused")
	}
	st := "To Do"
	if j.approvedAt > 0 && j.reads >= j.approvedAt {
		st = "Approved"
	}
	return contract.TicketState{URL: "https://jira.example.com/browse/" + in.Key, Fields: map[string]any{"Status": st, "key": in.Key}}, nil
}

func runTicketApproval(t *testing.T, j *jiraIssue, timeout string) *workflows.PipelineResult {
	t.Helper()
	p := compile(t, "tickets.yaml", verifyStagePipeline)
	step := p.Stages[0].Children[1]
	step.Type, step.Timeout = "JiraApproval", timeout
	step.Spec = map[string]any{"connectorRef": "jira", "issueKey": "OPS-1", "retryInterval": "1m",
		"approvalCriteria":  map[string]any{"type": "KeyValues", "spec": map[string]any{"conditions": []any{map[string]any{"key": "Status", "operator": "equals", "value": "Approved"}}}},
		"rejectionCriteria": map[string]any{"type": "Jexl", "spec": map[string]any{"expression": `<+issue.Status> == "Rejected"`}}}
	step.Traits = &plan.Traits{Builtin: "ticketApproval"}
	step.Refs = &plan.StepRefs{Ticket: &plan.TicketConnector{ID: "jira", Type: "Jira", URL: "https://jira.example.com", Auth: "UsernamePassword", Username: "bot", PasswordRef: "jira"}}
	return runPrepared(t, p, workflows.Settings{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(contract.TicketRead, mock.Anything, mock.Anything).Return(j.read)
	})
}

// A JiraApproval reads its issue once a retry interval on durable timers, for as long as it
// takes: past a hundred reads its wait continues as new, an outage in between is waited out,
// and the step ends at the first read that meets the criteria.
func TestJiraApprovalWaitsDurably(t *testing.T) {
	j := &jiraIssue{approvedAt: 250, down: map[int]bool{120: true, 121: true, 122: true}}
	res := runTicketApproval(t, j, "1d")
	n := res.Tree.Find("canary.verify")
	if res.Status != status.Succeeded || n.Status != status.Succeeded {
		t.Fatalf("pipeline %s, step %s %+v", res.Status, n.Status, n.Failure)
	}
	if j.reads != 250 {
		t.Errorf("%d reads, want 250: one a minute until the issue was approved", j.reads)
	}
	if issue, _ := n.Outputs["issue"].(map[string]any); issue["Status"] != "Approved" {
		t.Errorf("outputs %v", n.Outputs)
	}
}

// The step's timeout ends a wait that is never decided: EXPIRED, naming what was not met.
func TestJiraApprovalTimesOut(t *testing.T) {
	j := &jiraIssue{}
	res := runTicketApproval(t, j, "30m")
	n := res.Tree.Find("canary.verify")
	if n.Status != status.Expired || n.Failure == nil || !strings.Contains(n.Failure.Message, `no decision within 30m0s: not met: Status equals Approved (now "To Do")`) {
		t.Fatalf("step %s %+v", n.Status, n.Failure)
	}
	if j.reads < 29 || j.reads > 31 {
		t.Errorf("%d reads in 30 minutes at one a minute", j.reads)
	}
}

// An approved ServiceNow change waits for its change window to open, and fails when the
// window has already ended.
func TestServiceNowChangeWindow(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		start, end time.Time
		want       status.Status
		failure    string
	}{
		{"opens later", now.Add(2 * time.Hour), now.Add(3 * time.Hour), status.Succeeded, ""},
		{"ended", now.Add(-3 * time.Hour), now.Add(-2 * time.Hour), status.Failed, "approved, but its change window ended at 2026-11-30 07:00:00 UTC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, "window.yaml", verifyStagePipeline)
			step := p.Stages[0].Children[1]
			step.Type, step.Timeout = "ServiceNowApproval", "1d"
			step.Spec = map[string]any{"connectorRef": "snow", "ticketType": "change_request", "ticketNumber": "CHG0000001", "retryInterval": "1m",
				"approvalCriteria": map[string]any{"type": "KeyValues", "spec": map[string]any{"conditions": []any{map[string]any{"key": "approval", "operator": "equals", "value": "Approved"}}}},
				"changeWindow":     map[string]any{"startField": "start_date", "endField": "end_date"}}
			step.Traits = &plan.Traits{Builtin: "ticketApproval"}
			step.Refs = &plan.StepRefs{Ticket: &plan.TicketConnector{ID: "snow", Type: "ServiceNow", URL: "https://snow.example.com", Auth: "UsernamePassword", Username: "u", PasswordRef: "p"}}
			read := func(context.Context, contract.TicketRequest) (contract.TicketState, error) {
				field := func(v string) map[string]any { return map[string]any{"value": v, "displayValue": v} }
				return contract.TicketState{Fields: map[string]any{"approval": field("Approved"),
					"start_date": field(c.start.Format(time.DateTime)), "end_date": field(c.end.Format(time.DateTime))}}, nil
			}
			res := runPrepared(t, p, workflows.Settings{}, func(env *testsuite.TestWorkflowEnvironment) {
				env.SetStartTime(now)
				env.OnActivity(contract.TicketRead, mock.Anything, mock.Anything).Return(read)
			})
			n := res.Tree.Find("canary.verify")
			if n.Status != c.want || c.failure != "" && (n.Failure == nil || !strings.Contains(n.Failure.Message, c.failure)) {
				t.Fatalf("step %s %+v, want %s %q", n.Status, n.Failure, c.want, c.failure)
			}
			if c.want == status.Succeeded && n.EndedAt.Before(c.start) {
				t.Errorf("the step went on at %s, before its window opened at %s", n.EndedAt, c.start)
			}
		})
	}
}
