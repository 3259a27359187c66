package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// Sequence workflows live in the internal namespace, so the pipelines' namespace lists only
// pipeline runs and their stages; a sequence an older Gantry kept in the pipelines' namespace
// hands over its numbers and remembered delivery keys and closes.
func TestSequencesLiveInTheInternalNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := compile(t, "moved.yaml", []byte(strings.NewReplacer("outcome_failed", "moved_seq", "exit 2", "exit 0").Replace(outcomeFailedPipeline)), load.Options{})
	trig := workflows.Trigger{Type: "WEBHOOK", User: "hook"}
	// Before: the sequence workflow in the pipelines' namespace, with a delivery key.
	old := &starter.Starter{Client: env.client}
	first, started, err := old.StartOnce(ctx, "delivery-1", p, trig, workflows.Settings{})
	if err != nil || !started || first.SequenceID != 1 {
		t.Fatalf("first start: %+v %v %v", first, started, err)
	}
	if _, err := old.Start(ctx, p, trig, workflows.Settings{}); err != nil {
		t.Fatal(err)
	}
	old.Close(ctx) // the old process stops: the numbers it took ahead go back
	// After: numbering goes on, and the delivery is still known.
	again, started, err := env.starter.StartOnce(ctx, "delivery-1", p, trig, workflows.Settings{})
	if err != nil || started || again.ID != first.ID {
		t.Fatalf("repeated delivery after the move: %+v started=%v %v", again, started, err)
	}
	next, err := env.starter.Start(ctx, p, trig, workflows.Settings{})
	if err != nil || next.SequenceID != 3 {
		t.Fatalf("next start after the move: %+v %v", next, err)
	}
	desc, err := env.client.DescribeWorkflowExecution(ctx, "gantry-sequence-moved_seq", "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("old sequence workflow: %v %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	in, err := env.internal.DescribeWorkflowExecution(ctx, "gantry-sequence-moved_seq", "")
	if err != nil || in.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("internal sequence workflow: %v", err)
	}
	for _, id := range []string{first.ID, next.ID} {
		if _, err := env.starter.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing but pipeline runs and their stages runs in the pipelines' namespace.
	resp, err := env.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowId STARTS_WITH 'gantry-' AND ExecutionStatus = 'Running'"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Executions {
		t.Errorf("internal workflow %s runs in the pipelines' namespace", e.Execution.WorkflowId)
	}
}
