// Package freezes turns the global deployment freeze on and off and reads it: a workflow of
// the internal namespace that runs while the freeze is on (contract.GlobalFreezeID).
package freezes

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gantry-cd/gantry/contract"
)

// Global reaches the global freeze through a client of the internal namespace.
type Global struct {
	Client    client.Client
	TaskQueue string // the sequence queue, where the freeze workflow runs
}

const memoKey = "freeze"

// State reads the global freeze: on while its workflow runs.
func (g *Global) State(ctx context.Context) (contract.GlobalFreeze, error) {
	d, err := g.Client.DescribeWorkflowExecution(ctx, contract.GlobalFreezeID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return contract.GlobalFreeze{}, nil
	}
	if err != nil {
		return contract.GlobalFreeze{}, fmt.Errorf("read the global deployment freeze: %w", err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return contract.GlobalFreeze{}, nil
	}
	st := contract.GlobalFreeze{On: true, Since: info.GetStartTime().AsTime()}
	if p := info.GetMemo().GetFields()[memoKey]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &st)
		st.On = true
	}
	return st, nil
}

// On turns the global freeze on; it is an error when it is on already.
func (g *Global) On(ctx context.Context, by, reason string) (contract.GlobalFreeze, error) {
	st := contract.GlobalFreeze{On: true, By: by, Since: time.Now().UTC(), Reason: reason}
	_, err := g.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: contract.GlobalFreezeID, TaskQueue: g.TaskQueue, StaticSummary: "Global deployment freeze",
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo: map[string]any{memoKey: st},
	}, contract.FreezeWorkflow, st)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		cur, _ := g.State(ctx)
		return cur, fmt.Errorf("the global deployment freeze is on already (since %s, by %s)", cur.Since.Format(time.RFC3339), cur.By)
	}
	if err != nil {
		return st, fmt.Errorf("turn the global deployment freeze on: %w", err)
	}
	return st, nil
}

// Off turns the global freeze off and returns once it is (a deployment that starts after Off
// returns is not refused); off already is no error (false).
func (g *Global) Off(ctx context.Context, by string) (bool, error) {
	err := g.Client.SignalWorkflow(ctx, contract.GlobalFreezeID, "", contract.SignalFreezeOff, by)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err == nil {
		err = g.Client.GetWorkflow(ctx, contract.GlobalFreezeID, "").Get(ctx, nil)
	}
	if err != nil {
		return false, fmt.Errorf("turn the global deployment freeze off: %w", err)
	}
	return true, nil
}

// Change is one switch of the global freeze, for the audit trail.
type Change struct {
	On     bool
	By     string
	At     time.Time
	Reason string
}

// Changes reads the global freeze's switches since a time from its workflow's runs: each run's
// start is an "on", its completion an "off".
func (g *Global) Changes(ctx context.Context, since time.Time) ([]Change, error) {
	runs := map[string]bool{}
	d, err := g.Client.DescribeWorkflowExecution(ctx, contract.GlobalFreezeID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil // never switched on
	case err != nil:
		return nil, fmt.Errorf("read the global freeze's changes: %w", err)
	}
	runs[d.GetWorkflowExecutionInfo().GetExecution().GetRunId()] = true
	query := fmt.Sprintf("WorkflowId = '%s' AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')", contract.GlobalFreezeID, since.UTC().Format(time.RFC3339Nano))
	var token []byte
	for {
		resp, err := g.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the global freeze's runs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			runs[e.GetExecution().GetRunId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	dc := converter.GetDefaultDataConverter()
	var out []Change
	for run := range runs {
		iter := g.Client.GetWorkflowHistory(ctx, contract.GlobalFreezeID, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if errors.As(err, &nf) {
				break // past retention since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("read the global freeze's history: %w", err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				var st contract.GlobalFreeze
				if p := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); len(p) == 1 && dc.FromPayload(p[0], &st) == nil {
					out = append(out, Change{On: true, By: st.By, At: ev.GetEventTime().AsTime(), Reason: st.Reason})
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				var by string
				if p := ev.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads(); len(p) == 1 && dc.FromPayload(p[0], &by) == nil {
					out = append(out, Change{By: by, At: ev.GetEventTime().AsTime()})
				}
			}
		}
	}
	return out, nil
}
