package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// ChainNumberActivity takes the sequence number of a chained pipeline's execution from that
// pipeline's sequence workflow, once per key (ChainNumberRequest), so a retried activity
// gets the same number.
const ChainNumberActivity = "gantry.ChainNumber"

// ChainNumberRequest asks ChainNumberActivity for the number of Pipeline's execution that Key
// starts.
type ChainNumberRequest struct {
	Pipeline string `json:"pipeline"`
	Key      string `json:"key"`
}

// ChainLink links a chained execution and the stage that runs it: on the stage's step it
// names the child execution, on the child's pipeline node its parent.
type ChainLink struct {
	ExecutionID string `json:"executionId"`
	Pipeline    string `json:"pipeline"`
	Stage       string `json:"stage,omitempty"` // the parent's Pipeline stage
}

// chainStep runs the chained pipeline of a `type: Pipeline` stage as a child execution with
// its own ID (<pipeline>-<sequence>): the parent's expressions in its inputs are rendered
// (spec["inputs"]), the child starts as the same user, and its outputs become the stage's
// (<+pipeline.stages.S.output.NAME>). Cancelling ctx (an abort of the parent) aborts the child;
// a child that ends ABORTED aborts the parent.
func (s *stageRun) chainStep(ctx workflow.Context, n *plan.Node, t *Node, spec any) (map[string]any, *contract.Failure) {
	ch := n.Chain
	if ch == nil || ch.Plan == nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "the Pipeline stage has no chained plan: validate the pipeline again"}
	}
	m, _ := spec.(map[string]any)
	rendered, _ := m["inputs"].(map[string]any)
	values := make(map[string]string, len(rendered))
	for tok, v := range rendered {
		values[tok] = expressions.ToString(v)
	}
	child, err := ch.Bind(values)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "bind the chained pipeline's inputs: " + err.Error()}
	}
	info := workflow.GetInfo(ctx)
	s.chainStarts++
	key := fmt.Sprintf("chain/%s/%s#%d", info.WorkflowExecution.ID, t.Path, s.chainStarts)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 30},
		Summary:             "number the execution of chained pipeline " + ch.Pipeline,
	})
	var seq int64
	if err := workflow.ExecuteActivity(actx, ChainNumberActivity, ChainNumberRequest{Pipeline: ch.Pipeline, Key: key}).Get(ctx, &seq); err != nil {
		if ctx.Err() != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted"}
		}
		return nil, &contract.Failure{Category: contract.Unknown, Message: "number the chained execution: " + err.Error()}
	}
	pd, _ := s.root["pipeline"].(map[string]any)
	by, _ := pd["triggeredBy"].(map[string]any)
	trig := Trigger{Type: expressions.ToString(pd["triggerType"]), User: expressions.ToString(by["name"])}
	if td, ok := s.root["trigger"].(map[string]any); ok {
		trig.Data = td
	}
	parent := &ChainLink{ExecutionID: s.in.ExecutionID, Pipeline: expressions.ToString(pd["identifier"]), Stage: s.in.Stage.ID}
	id := fmt.Sprintf("%s-%d", child.Identifier, seq)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		TaskQueue:             info.TaskQueueName,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// An abort of the parent, or its termination, aborts the child.
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			AttrPipeline.ValueSet(child.Identifier),
			AttrStatus.ValueSet(string(status.Running)),
			AttrTrigger.ValueSet(trig.Type),
		),
		StaticSummary: fmt.Sprintf("Pipeline %s #%d, chained by %s stage %s", child.Name, seq, parent.ExecutionID, parent.Stage),
		StaticDetails: fmt.Sprintf("Pipeline `%s` from `%s`, chained by stage `%s` of [%s](/namespaces/%s/workflows/%s).",
			child.Identifier, child.File, parent.Stage, parent.ExecutionID, info.Namespace, parent.ExecutionID),
	})
	in := PipelineInput{Plan: child, SequenceID: seq, Trigger: trig, Settings: s.in.Settings, Parent: parent, Outputs: ch.Outputs}
	f := workflow.ExecuteChildWorkflow(cctx, PipelineName, in)
	t.Chained = &ChainLink{ExecutionID: id, Pipeline: child.Identifier}
	t.Notes = append(t.Notes, "runs chained execution "+id)
	var res PipelineResult
	err = ResultFrom(f.Get(ctx, &res), &res)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &contract.Failure{Category: aborted, Message: "aborted"}
	case err != nil:
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("chained execution %s: %v", id, err)}
	case res.Status == status.Aborted:
		return nil, &contract.Failure{Category: aborted, Message: fmt.Sprintf("chained execution %s was aborted", id)}
	case res.Status.Final() && !failed(res.Status):
		return res.Outputs, nil
	}
	msg := fmt.Sprintf("chained execution %s ended %s", id, res.Status)
	if res.Tree != nil {
		msg = fmt.Sprintf("chained execution %s: %s", id, failureMessage(res.Status, res.Tree))
	}
	return res.Outputs, &contract.Failure{Category: contract.Unknown, Message: msg}
}

// chainOutputs renders a chained execution's outputs in its own context as it ends (nil
// when it has none); an output that does not resolve is null.
func chainOutputs(outs []plan.Output, root map[string]any) map[string]any {
	if len(outs) == 0 {
		return nil
	}
	m := make(map[string]any, len(outs))
	for _, o := range outs {
		v, err := expressions.Render(o.Value, expressions.Text, expressions.NewScope(root, "pipeline"), expressions.Options{})
		if err != nil {
			m[o.Name] = nil
			continue
		}
		if sr, ok := v.(expressions.SecretRef); ok {
			v = sr.String() // a reference, never a value
		}
		m[o.Name] = v
	}
	return m
}
