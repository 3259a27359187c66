package starter

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/gantry-cd/gantry/workflows"
)

// Notifications returns the delivery records of an execution's notifications (spec 20.5.8):
// none when no rule selected any of its events. Done says the notifier has finished: every
// record is DELIVERED or FAILED for good.
func (s *Starter) Notifications(ctx context.Context, executionID string) (records []workflows.DeliveryRecord, done bool, err error) {
	id := workflows.NotifierID(executionID)
	desc, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) { // no rule selected an event yet, or no such execution
		if _, err := s.Client.DescribeWorkflowExecution(ctx, executionID, ""); err != nil {
			return nil, false, notFound(executionID, err)
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("notifications of %s: %w", executionID, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		var res workflows.NotifierResult
		if err := s.Client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			return nil, false, fmt.Errorf("notifications of %s: %w", executionID, err)
		}
		return res.Records, true, nil
	}
	v, err := s.Client.QueryWorkflow(ctx, id, "", workflows.QueryNotifications)
	if err != nil {
		return nil, false, fmt.Errorf("notifications of %s: %w", executionID, err)
	}
	err = v.Get(&records)
	return records, false, err
}
