package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// BatchSize is the most iterations of one loop a single workflow runs; bigger loops run in
// batch child workflows of this size, so a history holds at most a few thousand events
// however large the loop is (Temporal caps a run at 51,200 events and 2,000 pending
// activities), and every result stays small.
const BatchSize = 200

// runBatches runs a big loop's iterations in batch child workflows. The strategy node gets
// one placeholder child per batch (Source names the batch workflow); iteration data are
// merged into the container so later steps can read their outputs.
func (s *stageRun) runBatches(ctx workflow.Context, n *plan.Node, t *Node, lp *loopPlan, prefix, parent string, container, root map[string]any) {
	var batches [][]iteration
	size := s.in.Settings.batchSize()
	for i := 0; i < len(lp.iterations); i += size {
		batches = append(batches, lp.iterations[i:min(i+size, len(lp.iterations))])
	}
	t.Children = make([]*Node, len(batches))
	base := workflow.GetInfo(ctx).WorkflowExecution.ID + "/" + t.Path
	for k, b := range batches {
		t.Children[k] = &Node{Path: fmt.Sprintf("%s/batch_%d", t.Path, k), ID: fmt.Sprintf("batch_%d", k), Kind: "batch",
			Status: status.NotStarted, Source: fmt.Sprintf("%s/batch-%d", base, k), Name: fmt.Sprintf("%s iterations %d-%d", n.Name, b[0].Index, b[len(b)-1].Index)}
	}
	batchRoot := withoutIterations(root, prefix, lp.iterations, n.ID)
	// With maxConcurrency, one batch at a time runs that many iterations: never more at once.
	parallel := s.in.Settings.parallelBatches()
	if lp.concurrency > 0 {
		parallel = 1
	}
	running, failed := 0, false
	perBatch := s.outputs.share(len(batches))
	wg := workflow.NewWaitGroup(ctx)
	for k, b := range batches {
		if err := workflow.Await(ctx, func() bool { return running < parallel }); err != nil || s.aborted || s.expired {
			break
		}
		if lp.skipQueued && failed {
			now := workflow.Now(ctx)
			t.Children[k].Status, t.Children[k].EndedAt, t.Children[k].Source = status.Skipped, &now, ""
			continue
		}
		running++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			func() {
				ph := t.Children[k]
				now := workflow.Now(ctx)
				ph.Status, ph.StartedAt = status.Running, &now
				cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
					WorkflowID: ph.Source, TaskQueue: workflow.GetInfo(ctx).TaskQueueName, WaitForCancellation: true,
					WorkflowTaskTimeout: stageTaskTimeout(s.in.Settings),
					StaticSummary:       fmt.Sprintf("Iterations %d-%d of %s in stage %s", b[0].Index, b[len(b)-1].Index, t.Path, s.in.Stage.ID),
				})
				in := StageInput{ExecutionID: s.in.ExecutionID, Stage: s.in.Stage, Settings: s.in.Settings, Notify: s.in.Notify, OutputLimit: perBatch, Batch: &BatchInput{
					Node: n, Iterations: b, Total: len(lp.iterations), Concurrency: lp.concurrency, SkipQueued: lp.skipQueued,
					Prefix: prefix, ParentPath: parent, Root: batchRoot,
				}}
				f := workflow.ExecuteChildWorkflow(cctx, StageName, in)
				if s.batchRuns == nil {
					s.batchRuns = map[string]workflow.ChildWorkflowFuture{}
				}
				s.batchRuns[ph.Source] = f
				var res StageResult
				err := ResultFrom(f.Get(ctx, &res), &res)
				delete(s.batchRuns, ph.Source)
				end := workflow.Now(ctx)
				ph.EndedAt = &end
				if err != nil || res.Tree == nil {
					ph.Status, ph.Source = status.Errored, ""
					return
				}
				ph.Status = rollupChildren(res.Tree.Children)
				for id, d := range res.Data {
					container[id] = d
				}
				if ph.Status.Broke() {
					failed = true
				}
				s.outputs.add(ph.Path, res.OutputBytes)
				s.absorb(res)
			}()
			running--
			wg.Done() // not deferred: see runStep
		})
	}
	wg.Wait(ctx)
}

// withoutIterations copies root along the loop container's path, leaving out the loop's own
// iterations: a batch input must not carry the results of every earlier batch.
func withoutIterations(root map[string]any, prefix string, its []iteration, base string) map[string]any {
	skip := make(map[string]bool, len(its))
	for _, it := range its {
		skip[base+it.Postfix] = true
	}
	out := copyMap(root)
	cur := out
	segs := strings.Split(prefix, ".")
	for i, seg := range segs {
		next, _ := cur[seg].(map[string]any)
		if next == nil {
			return out
		}
		next = copyMap(next)
		if i == len(segs)-1 {
			for _, k := range sortedKeys(next) {
				if skip[k] {
					delete(next, k)
				}
			}
		}
		cur[seg] = next
		cur = next
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// absorb applies the flow decisions a batch reports to its stage.
func (s *stageRun) absorb(res StageResult) {
	s.constraint.inherited = append(s.constraint.inherited, res.Locks...)
	if res.Aborted {
		s.abort()
	}
	if res.StageRollback {
		s.stageRollback, s.forward.halted = true, true
	}
	if res.PipelineRollback {
		s.pipelineRollback, s.forward.halted = true, true
	}
}

// runBatch is the batch mode of the stage workflow: it runs a slice of a loop's iterations
// and returns their trees and expression data (without resolved specs, to stay small).
func runBatch(ctx workflow.Context, in StageInput) (*StageResult, error) {
	b := in.Batch
	root := b.Root
	stageData := child(child(child(root, "pipeline"), "stages"), in.Stage.ID)
	s := &stageRun{in: in, root: root, data: stageData, fqn: "pipeline.stages." + in.Stage.ID,
		tree:    &Node{Path: b.ParentPath, Kind: "batch", Status: status.Running},
		forward: &frame{}, running: map[string]*runningStep{},
		loopPaths: map[string]bool{}, barriers: map[string]string{}}
	s.withConcerns()
	if err := s.listen(ctx); err != nil {
		return nil, err
	}
	body, cancel := workflow.WithCancel(ctx)
	s.cancelBody = cancel
	defer cancel()
	container := root
	for _, seg := range strings.Split(b.Prefix, ".") {
		container = child(container, seg)
	}
	lp := &loopPlan{iterations: b.Iterations, concurrency: b.Concurrency, skipQueued: b.SkipQueued}
	children := make([]*plan.Node, len(b.Iterations))
	s.tree.Children = make([]*Node, len(b.Iterations))
	for i, it := range b.Iterations {
		c := iterationNode(b.Node, it)
		path := join(b.ParentPath, c.ID)
		children[i] = c
		s.tree.Children[i] = &Node{Path: path, ID: c.ID, Name: c.Name, Kind: string(c.Kind), Type: c.Type, Status: status.NotStarted, Template: c.Template, Children: childTree(c, path)}
		s.loopPaths[path] = true
	}
	runIterations(body, lp, s.tree.Children,
		func(ctx workflow.Context) bool { return s.stopped(ctx, s.forward) },
		func(i int) { s.end(ctx, s.tree.Children[i], status.Skipped, nil) },
		func(ctx workflow.Context, i int) {
			ifr := &frame{parent: s.forward, root: withInstance(iterationRoot(root, b.Node.ID, b.Iterations[i], b.Total), b.Iterations[i])}
			s.runNode(ctx, children[i], s.tree.Children[i], b.Prefix, container, ifr)
		})
	data := map[string]any{}
	for _, c := range children {
		if d, ok := container[c.ID].(map[string]any); ok {
			// What later expressions read of an iteration: its status and outputs.
			slim := map[string]any{}
			for _, k := range []string{"status", "output", "retryCount", "barrier"} {
				if v, ok := d[k]; ok {
					slim[k] = v
				}
			}
			data[c.ID] = slim
		}
	}
	s.tree.Status = rollupChildren(s.tree.Children)
	s.settle(ctx)
	return &StageResult{Tree: s.tree, Data: data, Aborted: s.aborted, StageRollback: s.stageRollback, PipelineRollback: s.pipelineRollback,
		Locks: s.constraint.releaseLocks(ctx), OutputBytes: s.outputs.total}, nil
}
