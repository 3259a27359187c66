// Package starter is the client side of Gantry: it starts pipeline executions with readable
// IDs, search attributes and summaries, reads their live node tree, waits for them and lists
// them.
package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Starter starts and reads executions through one Temporal client.
type Starter struct {
	Client    client.Client
	TaskQueue string // "" is workflows.TaskQueue
}

func (s *Starter) queue() string {
	if s.TaskQueue == "" {
		return workflows.TaskQueue
	}
	return s.TaskQueue
}

// Execution identifies a started pipeline execution.
type Execution struct {
	ID         string // workflow ID: <pipeline identifier>-<sequence>
	RunID      string
	SequenceID int64
}

// Start starts a pipeline execution of a compiled plan.
func (s *Starter) Start(ctx context.Context, p *plan.Plan, trig workflows.Trigger, set workflows.Settings) (Execution, error) {
	if trig.Type == "" {
		trig.Type = "MANUAL"
	}
	seq, err := s.nextSequence(ctx, p.Identifier)
	if err != nil {
		return Execution{}, err
	}
	id := fmt.Sprintf("%s-%d", p.Identifier, seq)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                s.queue(),
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.AttrPipeline.ValueSet(p.Identifier),
			workflows.AttrStatus.ValueSet(string(status.Running)),
			workflows.AttrTrigger.ValueSet(trig.Type),
		),
		StaticSummary: fmt.Sprintf("Pipeline %s #%d", p.Name, seq),
		StaticDetails: details(p),
	}
	run, err := s.Client.ExecuteWorkflow(ctx, opts, workflows.PipelineName, workflows.PipelineInput{
		Plan: p, SequenceID: seq, Trigger: trig, Settings: set,
	})
	if err != nil {
		return Execution{}, fmt.Errorf("start pipeline %s: %w", p.Identifier, err)
	}
	return Execution{ID: id, RunID: run.GetRunID(), SequenceID: seq}, nil
}

// nextSequence takes the pipeline's next sequence number from its sequence workflow, starting
// that workflow on first use.
func (s *Starter) nextSequence(ctx context.Context, pipelineID string) (int64, error) {
	op := s.Client.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       "gantry-sequence-" + pipelineID,
		TaskQueue:                s.queue(),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Sequence numbers of pipeline " + pipelineID,
	}, workflows.SequenceName, int64(0))
	h, err := s.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   workflows.UpdateNext,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("take a sequence number for pipeline %s (is a gantry worker running on task queue %s?): %w", pipelineID, s.queue(), err)
	}
	var n int64
	if err := h.Get(ctx, &n); err != nil {
		return 0, fmt.Errorf("take a sequence number for pipeline %s: %w", pipelineID, err)
	}
	return n, nil
}

// details is the execution's static details in the Temporal UI (markdown).
func details(p *plan.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pipeline `%s` from `%s`.\n\nStages:\n", p.Identifier, p.File)
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if n.Kind == plan.KindStage {
			fmt.Fprintf(&b, "- `%s` (%s)\n", n.ID, n.Type)
		}
	})
	return b.String()
}

// Tree returns an execution's node tree: the final one for a closed execution, the live one
// (with running stages' own trees spliced in) otherwise.
func (s *Starter) Tree(ctx context.Context, executionID string) (*workflows.Node, error) {
	desc, err := s.Client.DescribeWorkflowExecution(ctx, executionID, "")
	if err != nil {
		return nil, notFound(executionID, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		res, err := s.Result(ctx, executionID)
		if err != nil {
			return nil, err
		}
		return res.Tree, nil
	}
	var tree *workflows.Node
	if err := query(ctx, s.Client, executionID, &tree); err != nil {
		return nil, err
	}
	tree.Walk(func(n *workflows.Node) {
		if n.Kind != "stage" || n.Status.Final() || n.Status == status.NotStarted {
			return
		}
		var st *workflows.Node
		// A stage child that has not started yet or just closed has nothing better to show.
		if query(ctx, s.Client, executionID+"/"+n.ID, &st) == nil && st != nil {
			*n = *st
		}
	})
	return tree, nil
}

func query(ctx context.Context, c client.Client, id string, out **workflows.Node) error {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryTree)
	if err != nil {
		return fmt.Errorf("query execution %s: %w", id, err)
	}
	return v.Get(out)
}

// Result waits for an execution to close and returns its result. A workflow that failed,
// was terminated or timed out as a whole returns an error.
func (s *Starter) Result(ctx context.Context, executionID string) (*workflows.PipelineResult, error) {
	var res workflows.PipelineResult
	if err := s.Client.GetWorkflow(ctx, executionID, "").Get(ctx, &res); err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			return &workflows.PipelineResult{Status: status.Aborted}, nil
		}
		return nil, fmt.Errorf("execution %s: %w", executionID, err)
	}
	return &res, nil
}

// Summary is one execution in a listing.
type Summary struct {
	ID       string
	Pipeline string
	Status   string
	Trigger  string
	Start    time.Time
	End      time.Time
}

// List returns recent pipeline executions, newest first. pipeline filters by identifier.
func (s *Starter) List(ctx context.Context, pipeline string, limit int) ([]Summary, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", workflows.PipelineName)
	if pipeline != "" {
		q += fmt.Sprintf(" AND %s = '%s'", workflows.AttrPipeline.GetName(), strings.ReplaceAll(pipeline, "'", ""))
	}
	var out []Summary
	var token []byte
	for len(out) < limit {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: int32(limit), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list executions: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			sa := e.GetSearchAttributes().GetIndexedFields()
			str := func(k string) string {
				if p, ok := sa[k]; ok {
					return strings.Trim(string(p.GetData()), `"`)
				}
				return ""
			}
			sm := Summary{
				ID: e.GetExecution().GetWorkflowId(), Pipeline: str(workflows.AttrPipeline.GetName()),
				Status: str(workflows.AttrStatus.GetName()), Trigger: str(workflows.AttrTrigger.GetName()),
				Start: e.GetStartTime().AsTime(),
			}
			if e.GetCloseTime() != nil {
				sm.End = e.GetCloseTime().AsTime()
			}
			if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				sm.Status = strings.ToUpper(strings.TrimPrefix(e.GetStatus().String(), "WorkflowExecutionStatus"))
			}
			out = append(out, sm)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func notFound(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("execution %s not found (list executions with `gantry list`)", id)
	}
	return fmt.Errorf("execution %s: %w", id, err)
}
