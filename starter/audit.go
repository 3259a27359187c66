package starter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gantry-cd/gantry/workflows"
)

// RecordRefusal keeps a refusal in the audit trail: a signal to the Refusals workflow of the
// internal namespace, started by the first refusal of its run.
func (s *Starter) RecordRefusal(ctx context.Context, r workflows.AuditRecord) error {
	_, err := s.internal().SignalWithStartWorkflow(ctx, workflows.RefusalsID, workflows.SignalRefusal, r,
		client.StartWorkflowOptions{ID: workflows.RefusalsID, TaskQueue: workflows.SequenceQueue(s.queue())}, workflows.RefusalsName)
	if err != nil {
		return fmt.Errorf("record the refusal in the audit trail: %w", err)
	}
	return nil
}

// AuditQuery selects audit records.
type AuditQuery struct {
	// Since is the earliest time; executions that closed before it are not read.
	Since time.Time
	// Executions bounds the executions whose histories are read, newest first (100 if 0).
	Executions int
	// Execution reads one execution only; User keeps one user's records.
	Execution, User string
}

// auditReads bounds the histories read at once.
const auditReads = 8

// Audit reads the audit trail back from Temporal: each execution's start, and every abort,
// pause, resume, intervention, approval vote and input its pipeline and stage workflows
// accepted, with the outcome their histories record; and the refusals the Refusals workflow
// kept. Records come oldest first.
func (s *Starter) Audit(ctx context.Context, q AuditQuery) ([]workflows.AuditRecord, error) {
	if q.Executions <= 0 {
		q.Executions = 100
	}
	var ids []string
	if q.Execution != "" {
		ids = []string{q.Execution}
	} else {
		query := fmt.Sprintf("WorkflowType = '%s'", workflows.PipelineName)
		if !q.Since.IsZero() {
			query += fmt.Sprintf(" AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')", q.Since.UTC().Format(time.RFC3339Nano))
		}
		var token []byte
		for len(ids) < q.Executions {
			resp, err := listVisibility(ctx, s.Client, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: int32(q.Executions), NextPageToken: token})
			if err != nil {
				return nil, fmt.Errorf("list executions for the audit trail: %w", err)
			}
			for _, e := range resp.GetExecutions() {
				ids = append(ids, e.GetExecution().GetWorkflowId())
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		ids = ids[:min(len(ids), q.Executions)]
	}
	var mu sync.Mutex
	var out []workflows.AuditRecord
	var firstErr error
	sem := make(chan struct{}, auditReads)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			recs, err := s.executionAudit(ctx, s.Client, id, "", id, "", 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil && q.Execution != "" {
				firstErr = notFound(id, err)
			}
			out = append(out, recs...)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if q.Execution == "" {
		refusals, err := s.refusals(ctx, q.Since)
		if err != nil {
			return nil, err
		}
		out = append(out, refusals...)
		changes, err := s.globalFreeze().Changes(ctx, q.Since)
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			r := workflows.AuditRecord{Time: c.At, User: c.By, Action: "freeze", Detail: "off", Outcome: "ok"}
			if c.On {
				r.Detail = strings.TrimSuffix("on: "+c.Reason, ": ")
			}
			out = append(out, r)
		}
	}
	out = slices.DeleteFunc(out, func(r workflows.AuditRecord) bool {
		return r.Time.Before(q.Since) || (q.User != "" && r.User != q.User) || (q.Execution != "" && r.Execution != q.Execution)
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// maxAuditDepth bounds the descent into stage workflows and their loop batches.
const maxAuditDepth = 5

// executionAudit reads one workflow's history (and its children's): the pipeline's start and
// the updates each accepted.
func (s *Starter) executionAudit(ctx context.Context, c client.Client, id, runID, execution, pipelineID string, depth int) ([]workflows.AuditRecord, error) {
	var out []workflows.AuditRecord
	byUpdate := map[string]int{}
	var children []string
	iter := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return out, err
		}
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := ev.GetWorkflowExecutionStartedEventAttributes()
			if depth > 0 || a.GetWorkflowType().GetName() != workflows.PipelineName {
				continue
			}
			var in struct {
				Plan struct {
					Identifier string `json:"identifier"`
				} `json:"plan"`
				Trigger  workflows.Trigger  `json:"trigger"`
				Settings workflows.Settings `json:"settings"`
				Resume   *struct {
					FromStage string `json:"fromStage"`
				} `json:"resume"`
			}
			r := workflows.AuditRecord{Time: at, Action: "start", Execution: execution, Outcome: "ok"}
			if err := s.converter().FromPayloads(a.GetInput(), &in); err != nil {
				r.Detail = "input unreadable: " + err.Error()
			}
			pipelineID = in.Plan.Identifier
			r.Pipeline, r.User = pipelineID, in.Trigger.User
			r.Detail = strings.TrimSpace(in.Trigger.Type + " " + r.Detail)
			if by := in.Settings.OverrideFreeze; by != "" {
				r.Detail += " override-freeze by " + by
			}
			if in.Resume != nil {
				r.Action, r.Detail = "retry", r.Detail+" from stage "+in.Resume.FromStage
			}
			out = append(out, r)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			req := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest()
			r, ok := s.decisionRecord(req.GetInput().GetName(), req.GetInput().GetArgs())
			if !ok {
				continue
			}
			r.Time, r.Execution, r.Pipeline, r.Outcome = at, execution, pipelineID, "accepted"
			byUpdate[req.GetMeta().GetUpdateId()] = len(out)
			out = append(out, r)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			a := ev.GetWorkflowExecutionUpdateCompletedEventAttributes()
			i, ok := byUpdate[a.GetMeta().GetUpdateId()]
			if !ok {
				continue
			}
			if f := a.GetOutcome().GetFailure(); f != nil {
				out[i].Outcome, out[i].Detail = "failed", strings.TrimSpace(out[i].Detail+" "+f.GetMessage())
			} else {
				out[i].Outcome = "ok"
			}
		case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
			a := ev.GetChildWorkflowExecutionStartedEventAttributes()
			if name := a.GetWorkflowType().GetName(); name == workflows.StageName || name == workflows.StageBatchName || name == workflows.SegmentName {
				children = append(children, a.GetWorkflowExecution().GetWorkflowId()+"\x00"+a.GetWorkflowExecution().GetRunId())
			}
		}
	}
	if depth < maxAuditDepth {
		for _, ch := range children {
			cid, crun, _ := strings.Cut(ch, "\x00")
			recs, err := s.executionAudit(ctx, c, cid, crun, execution, pipelineID, depth+1)
			out = append(out, recs...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// decisionRecord reads an accepted update's request: the user's decision it carries.
func (s *Starter) decisionRecord(name string, args *commonpb.Payloads) (workflows.AuditRecord, bool) {
	var req struct {
		User     string            `json:"user"`
		Path     string            `json:"path"`
		Action   string            `json:"action"`
		Reason   string            `json:"reason"`
		Comments string            `json:"comments"`
		Values   map[string]string `json:"values"`
		Inputs   map[string]string `json:"inputs"`
	}
	switch name {
	case workflows.UpdateAbort, workflows.UpdatePause, workflows.UpdateResume, workflows.UpdateIntervene, workflows.UpdateApprove, workflows.UpdateInput:
	default:
		return workflows.AuditRecord{}, false
	}
	r := workflows.AuditRecord{Action: name}
	if err := s.converter().FromPayloads(args, &req); err != nil {
		r.Detail = "request unreadable: " + err.Error()
		return r, true
	}
	r.User, r.Path = req.User, req.Path
	switch name {
	case workflows.UpdateAbort:
		r.Detail = req.Reason
	case workflows.UpdateIntervene:
		r.Detail = req.Action
	case workflows.UpdateApprove:
		r.Action, r.Detail = strings.ToLower(req.Action), req.Comments
	case workflows.UpdateInput:
		// Values may be secret: the trail names the inputs only.
		r.Detail = strings.Join(slices.Sorted(maps.Keys(req.Values)), ", ")
	}
	return r, true
}

// refusals reads the refusals kept since a time from every run of the Refusals workflow:
// the latest run found by its ID (visibility lists a run a moment after it starts, and a
// refusal just kept must be read back at once), the earlier ones through visibility.
func (s *Starter) refusals(ctx context.Context, since time.Time) ([]workflows.AuditRecord, error) {
	c := s.internal()
	var runs []string
	d, err := c.DescribeWorkflowExecution(ctx, workflows.RefusalsID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf): // none kept yet
	case err != nil:
		return nil, fmt.Errorf("find the refusals of the audit trail: %w", err)
	default:
		runs = append(runs, d.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	}
	query := fmt.Sprintf("WorkflowId = '%s'", workflows.RefusalsID)
	if !since.IsZero() {
		query += fmt.Sprintf(" AND (ExecutionStatus = 'Running' OR CloseTime >= '%s')", since.UTC().Format(time.RFC3339Nano))
	}
	var token []byte
	for {
		resp, err := listVisibility(ctx, c, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the refusals of the audit trail: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetRunId(); !slices.Contains(runs, id) {
				runs = append(runs, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var out []workflows.AuditRecord
	for _, run := range runs {
		iter := c.GetWorkflowHistory(ctx, workflows.RefusalsID, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if errors.As(err, &nf) {
				break // past retention since it was listed
			}
			if err != nil {
				return nil, fmt.Errorf("read the refusals of the audit trail: %w", err)
			}
			if r, ok := s.refusal(ev); ok {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func (s *Starter) refusal(ev *historypb.HistoryEvent) (workflows.AuditRecord, bool) {
	var r workflows.AuditRecord
	var args *commonpb.Payloads
	switch a := ev.GetAttributes().(type) {
	case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
		if a.WorkflowExecutionSignaledEventAttributes.GetSignalName() != workflows.SignalRefusal {
			return r, false
		}
		args = a.WorkflowExecutionSignaledEventAttributes.GetInput()
	default:
		return r, false
	}
	if s.converter().FromPayloads(args, &r) != nil {
		return r, false
	}
	return r, true
}

// converter decodes payloads the way this starter's client encodes them.
func (s *Starter) converter() converter.DataConverter {
	if s.Converter != nil {
		return s.Converter
	}
	return converter.GetDefaultDataConverter()
}

// PipelineOf returns the identifier of the pipeline an execution runs, from its search
// attributes (what authorization decides on).
func (s *Starter) PipelineOf(ctx context.Context, executionID string) (string, error) {
	d, err := s.Client.DescribeWorkflowExecution(ctx, executionID, "")
	if err != nil {
		return "", notFound(executionID, err)
	}
	if p, ok := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.AttrPipeline.GetName()]; ok {
		var id string
		if converter.GetDefaultDataConverter().FromPayload(p, &id) == nil && id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("%s is not a pipeline execution: %w", executionID, ErrNotFound)
}
