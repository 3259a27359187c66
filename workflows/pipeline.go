package workflows

import (
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// Pipeline is the pipeline workflow: it runs the stages in order (parallel blocks at once), each
// as a child workflow, and returns the final node tree.
func Pipeline(ctx workflow.Context, in PipelineInput) (*PipelineResult, error) {
	if in.Plan == nil {
		return nil, fmt.Errorf("pipeline workflow started without a plan")
	}
	p := newPipelineRun(ctx, in)
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return p.tree, nil }); err != nil {
		return nil, err
	}
	p.upsert(ctx, status.Running)
	if err := renderVariables(in.Plan.Variables, child(p.data, "variables"), p.root, "pipeline"); err != nil {
		p.tree.Failure = &activities.Failure{Category: activities.Unknown, Message: err.Error()}
		p.finish(ctx, status.Errored)
		return &PipelineResult{Status: p.tree.Status, Tree: p.tree}, nil
	}
	for i, n := range in.Plan.Stages {
		p.runElement(ctx, n, p.tree.Children[i])
	}
	p.finish(ctx, rollupChildren(p.tree.Children))
	return &PipelineResult{Status: p.tree.Status, Tree: p.tree}, nil
}

type pipelineRun struct {
	in       PipelineInput
	id       string
	root     map[string]any
	data     map[string]any
	tree     *Node
	running  []string // identifiers of running stages, for the GantryStage attribute
	terminal []status.Status
}

func newPipelineRun(ctx workflow.Context, in PipelineInput) *pipelineRun {
	info := workflow.GetInfo(ctx)
	pl := in.Plan
	if in.Settings.HeartbeatTimeout == 0 {
		in.Settings.HeartbeatTimeout = DefaultSettings.HeartbeatTimeout
	}
	if in.Settings.InfraAttempts == 0 {
		in.Settings.InfraAttempts = DefaultSettings.InfraAttempts
	}
	now := workflow.Now(ctx)
	data := map[string]any{
		"identifier": pl.Identifier, "name": pl.Name, "description": pl.Description, "tags": pl.Tags,
		"sequenceId": in.SequenceID, "executionId": info.WorkflowExecution.ID,
		"startTs": now.UnixMilli(), "status": string(status.Running), "currentStatus": string(status.Succeeded),
		"triggerType": in.Trigger.Type, "triggeredBy": map[string]any{"name": in.Trigger.User},
		"variables": map[string]any{}, "stages": map[string]any{},
	}
	tree := &Node{Path: "", ID: pl.Identifier, Name: pl.Name, Kind: "pipeline", Status: status.Running, StartedAt: &now}
	tree.Children = newTree(pl.Stages, "")
	return &pipelineRun{in: in, id: info.WorkflowExecution.ID, root: map[string]any{"pipeline": data}, data: data, tree: tree}
}

func (p *pipelineRun) runElement(ctx workflow.Context, n *plan.Node, t *Node) {
	if n.Kind != plan.KindParallel {
		p.runStage(ctx, n, t)
		return
	}
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	wg := workflow.NewWaitGroup(ctx)
	for i, c := range n.Children {
		i, c := i, c
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			p.runElement(ctx, c, t.Children[i])
		})
	}
	wg.Wait(ctx)
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = rollupChildren(t.Children), &end
}

func (p *pipelineRun) runStage(ctx workflow.Context, n *plan.Node, t *Node) {
	stages := child(p.data, "stages")
	ok, err := evalWhen(p.root, "pipeline.stages."+n.ID, n.When)
	if err != nil || !ok {
		st := status.Skipped
		var f *activities.Failure
		if err != nil {
			st, f = status.Errored, &activities.Failure{Category: activities.Unknown, Message: err.Error()}
		}
		now := workflow.Now(ctx)
		t.Status, t.EndedAt, t.Failure = st, &now, f
		stages[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(st)}
		p.ended(st)
		return
	}
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	p.running = append(p.running, n.ID)
	p.upsertStage(ctx)
	// The query shows the stage's own tree while it runs; the child serves it (see starter).
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          p.id + "/" + n.ID,
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		StaticSummary:       fmt.Sprintf("Stage %s (%s) of %s #%d", n.Name, n.Type, p.in.Plan.Name, p.in.SequenceID),
		StaticDetails:       stageDetails(n),
	})
	var res StageResult
	err = workflow.ExecuteChildWorkflow(cctx, StageName, StageInput{
		ExecutionID: p.id, Stage: n, Context: p.root, Settings: p.in.Settings,
	}).Get(ctx, &res)
	p.running = remove(p.running, n.ID)
	p.upsertStage(ctx)
	if err != nil || res.Tree == nil {
		end := workflow.Now(ctx)
		t.Status, t.EndedAt = status.Errored, &end
		t.Failure = &activities.Failure{Category: activities.Unknown, Message: fmt.Sprintf("stage workflow: %v", err)}
		stages[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(status.Errored)}
		p.ended(status.Errored)
		return
	}
	*t = *res.Tree
	stages[n.ID] = res.Data
	p.ended(t.Status)
}

// ended records a terminal stage for <+pipeline.currentStatus> (spec 4.3).
func (p *pipelineRun) ended(st status.Status) {
	p.terminal = append(p.terminal, st)
	p.data["currentStatus"] = string(status.Rollup(p.terminal))
}

func (p *pipelineRun) finish(ctx workflow.Context, st status.Status) {
	now := workflow.Now(ctx)
	p.tree.Status, p.tree.EndedAt = st, &now
	p.data["status"] = string(st)
	p.upsert(ctx, st)
}

func (p *pipelineRun) upsert(ctx workflow.Context, st status.Status) {
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrStatus.ValueSet(string(st)))
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** #%d: %s", p.in.Plan.Name, p.in.SequenceID, st))
}

func (p *pipelineRun) upsertStage(ctx workflow.Context) {
	cur := strings.Join(p.running, ",")
	if cur == "" {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrStage.ValueUnset())
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrStage.ValueSet(cur))
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** #%d: running stage %s", p.in.Plan.Name, p.in.SequenceID, cur))
}

// stageDetails lists a stage's steps for the Temporal UI.
func stageDetails(n *plan.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Stage `%s`, type %s.\n\nSteps:\n", n.ID, n.Type)
	plan.Walk(n.Children, nil, func(c *plan.Node, path []string) {
		if c.Kind == plan.KindStep {
			fmt.Fprintf(&b, "- `%s` (%s)\n", strings.Join(path, "."), c.Type)
		}
	})
	return b.String()
}

func remove(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
