package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/workflows"
)

// FailedTrigger is a trigger that matched an event but could not start its pipeline.
type FailedTrigger struct {
	Pipeline, PipelineName string
	Variables              []plan.Variable // the pipeline's, for rules that name them
	Trigger, TriggerName   string
	Type                   string // the trigger's kind: WEBHOOK, WEBHOOK_CUSTOM, SCHEDULER_CRON
	Delivery               string // the delivery ID; "" when the event had none
	Reason                 string
}

// NotifyTriggerFailed raises TriggerFailed (spec 20.2.1) for the rules that select it: a
// notifier workflow, started with the deliveries, sends them durably. It returns that
// workflow's key for Notifications ("trigger-failed/<pipeline>/<trigger>/<delivery>"), or ""
// when no rule selects the event. One delivery ID raises the event once.
func (s *Starter) NotifyTriggerFailed(ctx context.Context, rules []plan.NotificationRule, f FailedTrigger) (string, error) {
	now := time.Now().UTC().Truncate(time.Second)
	occurrence := f.Delivery
	if occurrence == "" {
		occurrence = now.Format("20060102T150405")
	}
	id := "trigger-failed/" + f.Pipeline + "/" + f.Trigger + "/" + occurrence
	ev := contract.NotifyEvent{Type: contract.EventTriggerFailed, ExecutionID: id, Pipeline: f.Pipeline, PipelineName: f.PipelineName,
		Node: "trigger/" + f.Trigger, TriggerID: f.Trigger, TriggerName: f.TriggerName, TriggerType: f.Type, Error: f.Reason,
		Start: now, End: &now, Mode: workflows.ModeNormal}
	vars := map[string]any{}
	root := map[string]any{"pipeline": map[string]any{"identifier": f.Pipeline, "name": f.PipelineName, "variables": vars}}
	for _, v := range f.Variables {
		vars[v.Name] = v.Value
	}
	scope := expressions.NewScope(root, "pipeline")
	ds := contract.Deliveries(rules, ev, func(text string) (string, error) {
		return expressions.RenderString(text, scope, expressions.Options{Unresolved: expressions.UnresolvedFail})
	})
	if len(ds) == 0 {
		return "", nil
	}
	_, err := s.Client.SignalWithStartWorkflow(ctx, workflows.NotifierID(id), workflows.SignalNotify, workflows.NotifyBatch{Deliveries: ds, Final: true},
		client.StartWorkflowOptions{ID: workflows.NotifierID(id), TaskQueue: s.queue(), WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			StaticSummary: fmt.Sprintf("Trigger %s of %s failed", f.Trigger, f.Pipeline)},
		workflows.NotifierName, workflows.NotifierInput{ExecutionID: id})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) { // a delivery seen before has been told
		return "", fmt.Errorf("notify TriggerFailed of trigger %s: %w", f.Trigger, err)
	}
	return id, nil
}
