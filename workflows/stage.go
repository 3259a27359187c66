package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// Stage is the stage child workflow: it runs one stage's execution steps and returns the
// stage's node tree and expression data.
func Stage(ctx workflow.Context, in StageInput) (*StageResult, error) {
	s := newStageRun(ctx, in)
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return s.tree, nil }); err != nil {
		return nil, err
	}
	s.run(ctx)
	return &StageResult{Tree: s.tree, Data: s.data}, nil
}

// stageRun is one stage's interpreter state.
type stageRun struct {
	in       StageInput
	root     map[string]any // {"pipeline": ...}: what expressions read
	data     map[string]any // this stage's node in root
	tree     *Node
	fqn      string // pipeline.stages.<id>
	terminal []status.Status
}

func newStageRun(ctx workflow.Context, in StageInput) *stageRun {
	st := in.Stage
	root := in.Context
	if root == nil {
		root = map[string]any{}
	}
	stages := child(child(root, "pipeline"), "stages")
	data := map[string]any{
		"identifier": st.ID, "name": st.Name, "type": st.Type, "description": st.Description,
		"tags": st.Tags, "status": string(status.Running), "currentStatus": string(status.Succeeded),
		"variables": map[string]any{},
	}
	stages[st.ID] = data
	now := workflow.Now(ctx)
	tree := &Node{Path: st.ID, ID: st.ID, Name: st.Name, Kind: string(plan.KindStage), Type: st.Type,
		Status: status.Running, StartedAt: &now}
	tree.Children = newTree(st.Children, st.ID)
	return &stageRun{in: in, root: root, data: data, tree: tree, fqn: "pipeline.stages." + st.ID}
}

func (s *stageRun) run(ctx workflow.Context) {
	st := s.in.Stage
	if err := renderVariables(st.Variables, child(s.data, "variables"), s.root, s.fqn); err != nil {
		s.finish(ctx, status.Errored, &activities.Failure{Category: activities.Unknown, Message: err.Error()})
		return
	}
	steps := child(child(child(s.data, "spec"), "execution"), "steps")
	s.runList(ctx, st.Children, s.tree.Children, s.fqn+".spec.execution.steps", steps)
	s.finish(ctx, rollupChildren(s.tree.Children), nil)
}

func (s *stageRun) finish(ctx workflow.Context, st status.Status, f *activities.Failure) {
	now := workflow.Now(ctx)
	s.tree.Status, s.tree.EndedAt, s.tree.Failure = st, &now, f
	s.data["status"] = string(st)
	s.data["currentStatus"] = string(st)
}

// runList runs a list of step elements in order. prefix is the FQN of the list's container and
// container its data map.
func (s *stageRun) runList(ctx workflow.Context, nodes []*plan.Node, tree []*Node, prefix string, container map[string]any) {
	for i, n := range nodes {
		s.runNode(ctx, n, tree[i], prefix, container)
	}
}

func (s *stageRun) runNode(ctx workflow.Context, n *plan.Node, t *Node, prefix string, container map[string]any) {
	if n.Kind == plan.KindParallel {
		s.runParallel(ctx, n, t, prefix, container)
		return
	}
	fqn := prefix + "." + n.ID
	ok, err := evalWhen(s.root, fqn, n.When)
	if err != nil {
		s.end(ctx, t, status.Errored, &activities.Failure{Category: activities.Unknown, Message: err.Error()})
		container[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Errored)}
		return
	}
	if !ok {
		s.end(ctx, t, status.Skipped, nil)
		container[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Skipped)}
		return
	}
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	if n.Kind == plan.KindGroup {
		s.runGroup(ctx, n, t, fqn, container)
		return
	}
	s.runStep(ctx, n, t, fqn, container)
}

func (s *stageRun) runParallel(ctx workflow.Context, n *plan.Node, t *Node, prefix string, container map[string]any) {
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	wg := workflow.NewWaitGroup(ctx)
	for i, c := range n.Children {
		i, c := i, c
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			s.runNode(ctx, c, t.Children[i], prefix, container)
		})
	}
	wg.Wait(ctx)
	end := workflow.Now(ctx)
	t.Status, t.EndedAt = rollupChildren(t.Children), &end
}

func (s *stageRun) runGroup(ctx workflow.Context, n *plan.Node, t *Node, fqn string, container map[string]any) {
	data := map[string]any{"identifier": n.ID, "name": n.Name, "status": string(status.Running), "variables": map[string]any{}}
	container[n.ID] = data
	if err := renderVariables(n.Variables, child(data, "variables"), s.root, fqn); err != nil {
		s.end(ctx, t, status.Errored, &activities.Failure{Category: activities.Unknown, Message: err.Error()})
		data["status"] = string(status.Errored)
		return
	}
	s.runList(ctx, n.Children, t.Children, fqn+".steps", child(data, "steps"))
	st := rollupChildren(t.Children)
	data["status"] = string(st)
	s.end(ctx, t, st, nil)
}

// end records a node's final status and updates the stage's currentStatus (spec 4.3).
func (s *stageRun) end(ctx workflow.Context, t *Node, st status.Status, f *activities.Failure) {
	now := workflow.Now(ctx)
	t.Status, t.EndedAt, t.Failure = st, &now, f
	s.terminal = append(s.terminal, st)
	s.data["currentStatus"] = string(status.Rollup(s.terminal))
}
