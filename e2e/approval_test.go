package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

func approvalPipeline(id, approvalExtra, failure string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: gate
        identifier: gate
        type: Approval
        spec:
          execution:
            steps:
              - step:
                  type: HarnessApproval
                  name: gate
                  identifier: gate
                  timeout: ` + approvalTimeout(approvalExtra) + `
                  spec:
                    approvalMessage: ship <+pipeline.sequenceId>?
                    includePipelineExecutionHistory: false
                    approvers:
                      userGroups: [release_managers]
                      minimumCount: 2
                      disallowPipelineExecutor: true
                    approverInputs:
                      - {name: ticket, defaultValue: ""}
` + failure + `
    - stage:
        name: after
        identifier: after
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: use, identifier: use, spec: {shell: Bash, source: {type: Inline, spec: {script: "T=<+pipeline.stages.gate.spec.execution.steps.gate.output.approverInputs.ticket>; A=<+pipeline.stages.gate.spec.execution.steps.gate.output.approvalActivities[1].user.name>"}}, outputVariables: [{name: t, type: String, value: T}, {name: a, type: String, value: A}]}}
    - stage:
        name: onfail
        identifier: onfail
        type: Custom
        when: {pipelineStatus: Failure}
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: page, identifier: page, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
`
}

func approvalTimeout(extra string) string {
	if extra != "" {
		return extra
	}
	return "1h"
}

func vote(user string, groups []string, action string, inputs map[string]string) workflows.ApprovalRequest {
	return workflows.ApprovalRequest{Path: "gate.gate", Action: action, User: user, Email: user + "@example.com", Groups: groups, Inputs: inputs, Comments: "by " + user}
}

func startAndWait(t *testing.T, ctx context.Context, src string) string {
	t.Helper()
	p := compile(t, "approval.yaml", []byte(src), load.Options{})
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "executor"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "gate.gate", status.ApprovalWaiting)
	return exec.ID
}

// C61 two distinct approvers with inputs; a second vote by the same user, a user outside the
// groups and the executor (C63) are refused.
func TestApprovalTwoApprovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := startAndWait(t, ctx, approvalPipeline("c61", "", ""))
	rm := []string{"release_managers"}
	mustVote := func(req workflows.ApprovalRequest) {
		t.Helper()
		if _, err := env.starter.Approve(ctx, id, req); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(req workflows.ApprovalRequest, want string) {
		t.Helper()
		_, err := env.starter.Approve(ctx, id, req)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %s: %v, want an error with %q", req.User, req.Action, err, want)
		}
	}
	refused(vote("mallory", []string{"devs"}, "APPROVE", nil), "not in any approver group")
	refused(vote("executor", rm, "APPROVE", nil), "Pipeline executor is not allowed to approve/reject")
	refused(vote("alice", rm, "APPROVE", map[string]string{"nope": "x"}), "not declared")
	mustVote(vote("alice", rm, "APPROVE", map[string]string{"ticket": "CHG1"}))
	refused(vote("alice", rm, "APPROVE", map[string]string{"ticket": "CHG9"}), "already voted")
	tree, err := env.starter.Tree(ctx, id)
	if err != nil || tree.Find("gate.gate").Approval.Approvals != 1 || tree.Status != status.ApprovalWaiting {
		t.Fatalf("after one approval: %+v %v", tree, err)
	}
	// The stage workflow's current details (what the Temporal UI shows) say what waits and how
	// to decide.
	if details := currentDetails(t, ctx, id+"/gate"); !strings.Contains(details, "gate (HarnessApproval) · APPROVAL_WAITING") ||
		!strings.Contains(details, "gantry approve "+id+" --step gate.gate") {
		t.Errorf("current details of the stage:\n%s", details)
	}
	mustVote(vote("bob", rm, "APPROVE", map[string]string{"ticket": "CHG2"}))
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"gate.gate": status.Succeeded, "after.use": status.Succeeded, "onfail": status.Skipped})
	outs := res.Tree.Find("after.use").Outputs["outputVariables"].(map[string]any)
	if outs["t"] != "CHG2" || outs["a"] != "bob" {
		t.Errorf("outputs %v", outs)
	}
	acts := res.Tree.Find("gate.gate").Outputs["approvalActivities"].([]any)
	if len(acts) != 2 {
		t.Errorf("activities %v", acts)
	}
	if _, err := env.starter.Approve(ctx, id, vote("carol", rm, "APPROVE", nil)); err == nil {
		t.Error("a vote after completion was accepted")
	}
}

// C62 one rejection ends the approval; C43 an ApprovalRejection strategy applies to it.
func TestApprovalRejection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := startAndWait(t, ctx, approvalPipeline("c62", "", ""))
	if msg, err := env.starter.Approve(ctx, id, vote("alice", []string{"release_managers"}, "REJECT", nil)); err != nil || !strings.Contains(msg, "one rejection ends the approval") {
		t.Fatalf("reject: %q %v", msg, err)
	}
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"gate.gate": status.ApprovalRejected, "gate": status.ApprovalRejected,
		"": status.ApprovalRejected, "after": status.Skipped, "onfail.page": status.Succeeded})
	if st, msg := closedAs(t, id); st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED || !strings.Contains(msg, "APPROVAL_REJECTED: pipeline APPROVAL_REJECTED: gate.gate (HarnessApproval) APPROVAL_REJECTED") {
		t.Errorf("rejected pipeline closed %s with %q", st, msg)
	}

	strategy := "                  failureStrategies: [{onFailure: {errors: [ApprovalRejection], action: {type: MarkAsSuccess}}}]\n"
	id = startAndWait(t, ctx, strings.Replace(approvalPipeline("c43", "", ""), "                  spec:\n                    approvalMessage", strategy+"                  spec:\n                    approvalMessage", 1))
	if _, err := env.starter.Approve(ctx, id, vote("alice", []string{"release_managers"}, "REJECT", nil)); err != nil {
		t.Fatal(err)
	}
	res, err = env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"gate.gate": status.Succeeded, "after.use": status.Succeeded})
}

// C64 no decision in time: EXPIRED (Timeout), not ApprovalRejection; Timeout → MarkAsSuccess
// makes it succeed.
func TestApprovalTimeout(t *testing.T) {
	reject := "                  failureStrategies: [{onFailure: {errors: [ApprovalRejection], action: {type: MarkAsSuccess}}}]\n"
	p := compile(t, "c64.yaml", []byte(strings.Replace(approvalPipeline("c64", "1s 1ms", ""), "                  spec:\n                    approvalMessage", reject+"                  spec:\n                    approvalMessage", 1)), load.Options{})
	_, res := runPlan(t, env.starter, p)
	if n := res.Tree.Find("gate.gate"); n.Status != status.Expired || n.Failure.Category != "Timeout" {
		t.Errorf("gate %s %+v", n.Status, n.Failure)
	}
	timeout := "                  failureStrategies: [{onFailure: {errors: [Timeout], action: {type: MarkAsSuccess}}}]\n"
	p = compile(t, "c64b.yaml", []byte(strings.Replace(approvalPipeline("c64b", "1s 1ms", ""), "                  spec:\n                    approvalMessage", timeout+"                  spec:\n                    approvalMessage", 1)), load.Options{})
	_, res = runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"gate.gate": status.Succeeded, "gate": status.Succeeded})
}

// An approval waits across a restart of the worker and of the embedded server on the same
// data directory; after the restart the vote goes through and the pipeline finishes.
func TestApprovalSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, c, err := startServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	s := &starter.Starter{Client: c}
	p := compile(t, "restart.yaml", []byte(approvalPipeline("restart_gate", "", "")), load.Options{})
	exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "executor"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, exec.ID, "gate.gate", status.ApprovalWaiting)
	rm := []string{"release_managers"}
	if _, err := s.Approve(ctx, exec.ID, vote("alice", rm, "APPROVE", map[string]string{"ticket": "CHG1"})); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	srv, c, err = startServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	defer c.Close()
	w = worker.New(c, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s = &starter.Starter{Client: c}
	tree := waitFor(t, ctx, s, exec.ID, "gate.gate", status.ApprovalWaiting)
	if tree.Find("gate.gate").Approval.Approvals != 1 {
		t.Errorf("the first approval was lost: %+v", tree.Find("gate.gate").Approval)
	}
	if _, err := s.Approve(ctx, exec.ID, vote("alice", rm, "APPROVE", nil)); err == nil {
		t.Error("alice could vote twice across the restart")
	}
	if _, err := s.Approve(ctx, exec.ID, vote("bob", rm, "APPROVE", map[string]string{"ticket": "CHG2"})); err != nil {
		t.Fatal(err)
	}
	res, err := s.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
}

// currentDetails reads a workflow's current details, as the Temporal UI does.
func currentDetails(t *testing.T, ctx context.Context, workflowID string) string {
	t.Helper()
	v, err := env.client.QueryWorkflow(ctx, workflowID, "", "__temporal_workflow_metadata")
	if err != nil {
		t.Fatalf("metadata of %s: %v", workflowID, err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}
