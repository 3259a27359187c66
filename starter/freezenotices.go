package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/workflows"
)

// NotifyFreeze hands a freeze event's deliveries to a notifier workflow, which sends them
// durably (workflows.FreezeNotifyActivity). The notifier's ID names the freeze, the event and
// its time, so a repeat of the same event changes nothing.
func (s *Starter) NotifyFreeze(ctx context.Context, n workflows.FreezeNotice) error {
	id := fmt.Sprintf("freeze/%s/%s/%d", n.Freeze, n.Event, n.From.Unix())
	from := n.From.UTC()
	ev := contract.NotifyEvent{Type: n.Event, ExecutionID: id, Node: "freeze/" + n.Freeze, Freeze: n.Freeze,
		Start: from, Mode: workflows.ModeNormal}
	if !n.To.IsZero() {
		to := n.To.UTC()
		ev.End = &to
	}
	scope := expressions.NewScope(map[string]any{"freeze": map[string]any{"identifier": n.Freeze, "name": n.Name}}, "freeze")
	ds := contract.Deliveries(n.Rules, ev, func(text string) (string, error) {
		return expressions.RenderString(text, scope, expressions.Options{Unresolved: expressions.UnresolvedFail})
	})
	if len(ds) == 0 {
		return nil
	}
	_, err := s.Client.SignalWithStartWorkflow(ctx, workflows.NotifierID(id), workflows.SignalNotify, workflows.NotifyBatch{Deliveries: ds, Final: true},
		client.StartWorkflowOptions{ID: workflows.NotifierID(id), TaskQueue: s.queue(), WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			StaticSummary: fmt.Sprintf("%s of deployment freeze %s", n.Event, n.Freeze)},
		workflows.NotifierName, workflows.NotifierInput{ExecutionID: id})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("notify %s of freeze %s: %w", n.Event, n.Freeze, err)
	}
	return nil
}

// SyncFreezeNotices makes the freezes' notices workflows match the freeze files: it starts
// one for each freeze that has none (switched on: it announces OnEnableFreezeWindow), gives
// running ones their freeze as the file now has it, and stops those whose freeze is gone.
func (s *Starter) SyncFreezeNotices(ctx context.Context, want []workflows.FreezeNoticesInput) error {
	c := s.internal()
	running := map[string]bool{}
	var token []byte
	for {
		resp, err := listVisibility(ctx, c, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.FreezeNoticesName), NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list the freezes' notices: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			running[e.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var errs []error
	for _, in := range want {
		id := workflows.FreezeNoticesID(in.Freeze.ID)
		delete(running, id)
		start := in
		start.Announce = true
		// Signal-with-start: a running workflow takes the freeze as a change; a new one is
		// the freeze switched on.
		_, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalFreezeChanged, in,
			client.StartWorkflowOptions{ID: id, TaskQueue: s.internalQueue(), StaticSummary: "Notices of deployment freeze " + in.Freeze.ID},
			workflows.FreezeNoticesName, start)
		if err != nil {
			errs = append(errs, fmt.Errorf("freeze %s's notices: %w", in.Freeze.ID, err))
		}
	}
	for id := range running {
		if !strings.HasPrefix(id, workflows.FreezeNoticesID("")) {
			continue
		}
		err := c.SignalWorkflow(ctx, id, "", workflows.SignalFreezeChanged, workflows.FreezeNoticesInput{Stop: true})
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("stop %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
