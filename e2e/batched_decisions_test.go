package e2e

import (
	"context"
	_ "embed"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// batchedDecisionsPipeline loops a step group 201 times (two batch workflows); only the last
// iteration, in the second batch, meets a barrier, an approval, an execution input and a
// failure that waits for a manual intervention. Stage s2 meets the barrier alongside.
//
//go:embed testdata/pipelines/batched_decisions.yaml
var batchedDecisionsPipeline string

// Decisions reach iterations that run in batch workflows (loops of more than BatchSize
// iterations), through the same starter calls the CLI and the API use; barriers inside
// batches release (issue 18). Approver groups scoped as the reference writes them
// (org.release_managers) match the user's group by identifier (issue 19).
func TestDecisionsInsideBatchedLoops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := compile(t, "batched_decisions.yaml", []byte(batchedDecisionsPipeline), load.Options{})
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	const it = "s1.g_200."
	waitFor(t, ctx, env.starter, exec.ID, it+"gate", status.ApprovalWaiting)
	if got := waitFor(t, ctx, env.starter, exec.ID, "s2.meet", status.Succeeded).Find(it + "meet").Status; got != status.Succeeded {
		t.Errorf("barrier in the batch: %s", got)
	}
	// The approval is listed as pending and shown in the execution's status.
	waitPending(t, ctx, exec.ID, it+"gate")
	if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: it + "gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"}}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	waitFor(t, ctx, env.starter, exec.ID, it+"ask", status.InputWaiting)
	if _, err := env.starter.SupplyInputs(ctx, exec.ID, workflows.InputRequest{Path: it + "ask", User: "ann", Values: map[string]string{"spec.environmentVariables.COLOR": "red"}}); err == nil {
		t.Error("a value outside allowedValues was accepted")
	}
	if _, err := env.starter.SupplyInputs(ctx, exec.ID, workflows.InputRequest{Path: it + "ask", User: "ann", Values: map[string]string{"spec.environmentVariables.COLOR": "green"}}); err != nil {
		t.Fatalf("inputs: %v", err)
	}
	waitFor(t, ctx, env.starter, exec.ID, it+"fail", status.InterventionWaiting)
	if _, err := env.starter.Intervene(ctx, exec.ID, workflows.InterventionRequest{Path: it + "fail", Action: "MarkAsSuccess", User: "ops"}); err != nil {
		t.Fatalf("intervene: %v", err)
	}
	// A decision on a node no workflow holds is still refused with the reason.
	if _, err := env.starter.Intervene(ctx, exec.ID, workflows.InterventionRequest{Path: "s1.g_999.fail", Action: "Ignore", User: "ops"}); err == nil || !strings.Contains(err.Error(), "s1.g_999.fail") {
		t.Errorf("intervention on an unknown node: %v", err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("status %s", res.Status)
	}
	tree := res.Tree
	if err := env.starter.Complete(ctx, exec.ID, tree); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]status.Status{it + "meet": status.Succeeded, it + "gate": status.Succeeded, it + "ask": status.Succeeded,
		it + "fail": status.Succeeded, "s1.g_0.gate": status.Skipped} {
		if n := tree.Find(path); n == nil || n.Status != want {
			t.Errorf("%s: %v, want %s", path, n, want)
		}
	}
	if out := tree.Find(it + "ask").Outputs; out["outputVariables"].(map[string]any)["c"] != "green" {
		t.Errorf("ask outputs %v", out)
	}
}

// waitPending waits until the pending list (which reads GantryStatus from visibility, a moment
// behind) shows the node at path of execution id.
func waitPending(t *testing.T, ctx context.Context, id, path string) {
	t.Helper()
	for {
		pending, err := env.starter.Pending(ctx)
		for _, p := range pending {
			if p.ExecutionID == id && p.Path == path {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("pending never listed %s of %s: %v %v", path, id, pending, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A stage matrix run in stage batch workflows (small batches here; BatchSize in production):
// its iterations meet a barrier with another stage, one waits for an approval that the pending
// list shows and the starter reaches, and a later stage reads an iteration's output.
func TestStageLoopInBatches(t *testing.T) {
	src := stageBatchesPipeline
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := compile(t, "stage_batches.yaml", []byte(src), load.Options{})
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{LoopBatchSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "s_44.gate", status.ApprovalWaiting)
	waitPending(t, ctx, exec.ID, "s_44.gate")
	// Approver inputs with the reference's selectOneFrom and selectManyFrom are checked, and
	// choices given as one comma-separated string, as the reference's schema types them.
	for _, bad := range []map[string]string{{"region": "ap"}, {"zones": "a,d"}, {"tier": "bronze"}} {
		if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "s_44.gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"}, Inputs: bad}); err == nil {
			t.Errorf("approver inputs %v were accepted", bad)
		}
	}
	if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "s_44.gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"},
		Inputs: map[string]string{"region": "eu", "zones": "a, c", "tier": "silver"}}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("status %s", res.Status)
	}
	if err := env.starter.Complete(ctx, exec.ID, res.Tree); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"s_0.meet", "s_44.meet", "s_44.gate", "other.meet"} {
		if n := res.Tree.Find(path); n == nil || n.Status != status.Succeeded {
			t.Errorf("%s: %v", path, n)
		}
	}
	if n := len(res.Tree.Find("s").Children); n != 45 {
		t.Errorf("%d iterations in the tree", n)
	}
	if got := res.Tree.Find("last.a").Outputs["outputVariables"].(map[string]any)["l"]; got != "44" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/s/batch-0", exec.ID+"/s/batch-2")
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/stage_batches.yaml
var stageBatchesPipeline string
