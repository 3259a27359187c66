package starter

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// endedByTemporal is the result of an execution Temporal ended before the pipeline could
// (terminated by an operator or for outgrowing a limit, or timed out): ERRORED, with the tree
// it had then and Temporal's reason on the pipeline node.
func (s *Starter) endedByTemporal(ctx context.Context, executionID string) *workflows.PipelineResult {
	reason := s.closeReason(ctx, executionID)
	var tree *workflows.Node
	if query(ctx, s.Client, executionID, &tree) != nil || tree == nil {
		tree = &workflows.Node{Kind: "pipeline"}
	}
	_ = s.Complete(ctx, executionID, tree) // what the segments and batches ran, where they can say
	tree.Status = status.Errored
	tree.Failure = &contract.Failure{Category: contract.Unknown, Message: reason}
	tree.Walk(func(n *workflows.Node) {
		if !n.Status.Final() && n.Status != status.NotStarted {
			n.Status = status.Errored
		}
	})
	return &workflows.PipelineResult{Status: status.Errored, Tree: tree}
}

// closeReason reads why Temporal closed an execution from its close event.
func (s *Starter) closeReason(ctx context.Context, executionID string) string {
	it := s.Client.GetWorkflowHistory(ctx, executionID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		if a := ev.GetWorkflowExecutionTerminatedEventAttributes(); a != nil {
			return fmt.Sprintf("terminated by Temporal: %s", a.GetReason())
		}
		if ev.GetWorkflowExecutionTimedOutEventAttributes() != nil {
			return "timed out in Temporal (the workflow's execution timeout)"
		}
	}
	return "ended by Temporal before the pipeline finished"
}
