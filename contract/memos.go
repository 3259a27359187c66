package contract

import (
	"context"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// memoPage is how many workflows one visibility page lists.
const memoPage = 1000

// EachRunning calls fn with every running workflow of a type (on one task queue, unless
// queue is ""), a visibility page at a time: how the long-lived workflows' summaries in their
// memos (ledgers, instance syncs) are read.
func EachRunning(ctx context.Context, c client.Client, workflowType, queue string, fn func(e *workflowpb.WorkflowExecutionInfo) error) error {
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflowType)
	if queue != "" {
		query += fmt.Sprintf(" AND TaskQueue = '%s'", queue)
	}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: memoPage, NextPageToken: token})
		if err != nil {
			return err
		}
		for _, e := range resp.GetExecutions() {
			if err := fn(e); err != nil {
				return err
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// MemoValue decodes one memo key into v; false when the memo has no such key (a workflow
// started a moment ago, its first memo not yet written).
func MemoValue(memo map[string]*commonpb.Payload, key string, v any) (bool, error) {
	p, ok := memo[key]
	if !ok {
		return false, nil
	}
	return true, converter.GetDefaultDataConverter().FromPayload(p, v)
}
