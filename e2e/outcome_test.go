package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// closedAs returns how Temporal closed a workflow, and its failure message when it failed.
func closedAs(t *testing.T, id string) (enumspb.WorkflowExecutionStatus, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := env.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	st := desc.GetWorkflowExecutionInfo().GetStatus()
	if st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		return st, ""
	}
	iter := env.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionFailedEventAttributes(); a != nil {
			f := a.GetFailure()
			return st, f.GetApplicationFailureInfo().GetType() + ": " + f.GetMessage()
		}
	}
	t.Fatalf("%s failed without a failed event", id)
	return st, ""
}

// Temporal's own status tells a pipeline's outcome (the Temporal UI, its Failures filter and
// `temporal workflow list` read it), and the final tree stays readable for every outcome.
func TestTemporalStatusTellsOutcome(t *testing.T) {
	exec, res := runPlan(t, env.starter, compile(t, "outcome.yaml", []byte(strings.ReplaceAll(outcomeFailedPipeline, "outcome_failed", "outcome_check")), load.Options{}))
	if res.Status != status.Failed || res.Tree == nil || res.Tree.Children[0].Children[0].Failure == nil {
		t.Fatalf("result of the failed pipeline: %+v", res)
	}
	for _, id := range []string{exec.ID, exec.ID + "/build"} {
		st, msg := closedAs(t, id)
		if st != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED || !strings.HasPrefix(msg, "FAILED: ") ||
			!strings.Contains(msg, "build.compile (ShellScript) FAILED: Unknown: script exited with code 2") {
			t.Errorf("%s closed %s with %q", id, st, msg)
		}
	}
	tree, err := env.starter.Tree(context.Background(), exec.ID)
	if err != nil || tree.Status != status.Failed {
		t.Fatalf("tree of the failed pipeline: %v %v", tree, err)
	}

	ok, res := runPlan(t, env.starter, compile(t, "ok.yaml", []byte(strings.NewReplacer("outcome_failed", "outcome_ok", "exit 2", "exit 0").Replace(outcomeFailedPipeline)), load.Options{}))
	if res.Status != status.Succeeded {
		t.Fatalf("status %s", res.Status)
	}
	if st, _ := closedAs(t, ok.ID); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("succeeded pipeline closed %s", st)
	}
}
