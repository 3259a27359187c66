package workflows

import (
	"encoding/json"
	"fmt"
	"sort"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// StageBatchName is the workflow that runs one slice of a looped stage's iterations (at most
// BatchSize), each as a stage workflow of its own: a stage matrix of thousands of iterations
// keeps every history, the pipeline's included, to a few thousand events.
const StageBatchName = "gantry.StageBatch"

// StageBatchInput is one slice of a looped stage's iterations.
type StageBatchInput struct {
	ExecutionID string      `json:"executionId"`
	Stage       *plan.Node  `json:"stage"` // the looped stage
	Iterations  []iteration `json:"iterations"`
	Total       int         `json:"total"`       // iterations of the whole loop
	Concurrency int         `json:"concurrency"` // 0: up to BatchSize at once
	SkipQueued  bool        `json:"skipQueued,omitempty"`
	// Root is the execution context the iterations start from (see contextFor).
	Root     map[string]any `json:"root"`
	Settings Settings       `json:"settings"`
	// Of names the execution in the stages' summaries ("<pipeline> #<sequence>").
	Of string `json:"of"`
	// Notify lets the batch raise its iterations' stage events.
	Notify *Notifications `json:"notify,omitempty"`
	// OutputLimit is the batch's share of ExecutionOutputLimit (0: all of it).
	OutputLimit int `json:"outputLimit,omitempty"`
}

// StageBatch runs a slice of a looped stage's iterations and returns their trees (Tree's
// children), their expression data by identifier (Data) and the identifiers of the
// iterations that ran (Ran), for a pipeline rollback.
func StageBatch(ctx workflow.Context, in StageBatchInput) (*StageResult, error) {
	backfillTraits([]*plan.Node{in.Stage})
	b := &stageBatch{in: in, running: map[string]workflow.ChildWorkflowFuture{}, raiser: newRaiser(in.Notify), outputs: newOutputBudget(in.OutputLimit)}
	b.tree = &Node{Kind: "batch", Status: status.Running}
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return b.tree, nil }); err != nil {
		return nil, err
	}
	followPause(ctx, func(pause bool) { b.paused = pause }, func() map[string]workflow.ChildWorkflowFuture { return b.running })
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, signalExpire).Receive(ctx, nil)
		b.expired = true
		for _, id := range sortedIDs(b.running) {
			b.running[id].SignalChildWorkflow(ctx, signalExpire, nil)
		}
	})
	children := make([]*plan.Node, len(in.Iterations))
	b.tree.Children = make([]*Node, len(in.Iterations))
	for i, it := range in.Iterations {
		c := iterationNode(in.Stage, it)
		children[i] = c
		b.tree.Children[i] = &Node{Path: c.ID, ID: c.ID, Name: c.Name, Kind: string(plan.KindStage), Type: c.Type, Status: status.NotStarted, Template: c.Template, Children: childTree(c, c.ID)}
	}
	data := map[string]any{}
	var ran []string
	// Every stage start carries the execution context; one workflow task's commands must stay
	// well inside gRPC's 4 MB message limit, so big contexts start their stages in waves.
	ctxJSON, _ := json.Marshal(in.Root)
	stageJSON, _ := json.Marshal(iterationNode(in.Stage, in.Iterations[0]))
	b.wave = max(1, min(len(in.Iterations), startBudget/(len(ctxJSON)+len(stageJSON)+1024)))
	lp := &loopPlan{iterations: in.Iterations, concurrency: in.Concurrency, skipQueued: in.SkipQueued}
	runIterations(ctx, lp, b.tree.Children,
		func(ctx workflow.Context) bool { return ctx.Err() != nil || b.aborted || b.rollback || b.expired },
		func(i int) {
			now := workflow.Now(ctx)
			b.tree.Children[i].Status, b.tree.Children[i].EndedAt = status.Skipped, &now
		},
		func(ctx workflow.Context, i int) {
			if b.paused {
				_ = workflow.Await(ctx, func() bool { return !b.paused || b.aborted || b.expired })
			}
			n, t := children[i], b.tree.Children[i]
			root := iterationRoot(in.Root, in.Stage.ID, in.Iterations[i], in.Total)
			ok, err := evalWhen(root, "pipeline.stages."+n.ID, n.When)
			if err != nil || !ok {
				st := status.Skipped
				if err != nil {
					st, t.Failure = status.Errored, &contract.Failure{Category: contract.Unknown, Message: err.Error()}
				}
				now := workflow.Now(ctx)
				t.Status, t.EndedAt = st, &now
				data[n.ID] = map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(st)}
				return
			}
			ran = append(ran, n.ID)
			res := b.runStage(ctx, n, t, StageInput{ExecutionID: in.ExecutionID, Stage: n, Context: root, Settings: in.Settings,
				OutputLimit: b.outputs.share(len(in.Iterations))})
			b.outputs.add(n.ID, res.OutputBytes)
			data[n.ID] = res.Data
			b.rollback = b.rollback || res.PipelineRollback
			b.aborted = b.aborted || res.Aborted
		})
	b.tree.Status = rollupChildren(b.tree.Children)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, f := range b.signals { // the pipeline has every event before the batch ends
		_ = f.Get(dctx, nil)
	}
	return &StageResult{Tree: b.tree, Data: data, Ran: ran, Aborted: b.aborted, PipelineRollback: b.rollback, Locks: b.locks,
		OutputBytes: b.outputs.total}, nil
}

// startBudget is the most bytes of stage inputs a stage batch starts in one workflow task.
const startBudget = 1 << 20

type stageBatch struct {
	in       StageBatchInput
	wave     int           // stages started per workflow task at most
	starting int           // stages whose start is not recorded yet
	locks    []HeldLock    // pipeline-scoped Queue keys its stages hold
	outputs  *outputBudget // outputs.go: the output variables its stages keep
	tree     *Node
	running  map[string]workflow.ChildWorkflowFuture // by stage identifier, for expiry
	aborted  bool
	rollback bool
	expired  bool
	paused   bool              // the execution is paused: no iteration starts
	raiser   *raiser           // nil without notification rules
	signals  []workflow.Future // notifications sent to the pipeline
}

// event raises a stage event of an iteration.
func (b *stageBatch) event(ctx workflow.Context, typ string, n *plan.Node, t *Node, root map[string]any) {
	if !b.raiser.wants("stage") {
		return
	}
	root = startingStage(typ, n, root)
	send := func(ctx workflow.Context, id, name string, arg any) {
		b.signals = append(b.signals, workflow.SignalExternalWorkflow(ctx, id, "", name, arg))
	}
	signalRaise(ctx, b.raiser, b.in.ExecutionID, stageEvent(typ, n, t, root), root, "pipeline.stages."+n.ID, send)
	if ev, ok := freezeRejection(typ, n, t, root); ok {
		signalRaise(ctx, b.raiser, b.in.ExecutionID, ev, root, "pipeline.stages."+n.ID, send)
	}
}

// runStage runs one iteration's stage workflow (the same ID it has outside a batch, so users
// and the starter reach it as any stage) and puts its tree in t.
func (b *stageBatch) runStage(ctx workflow.Context, n *plan.Node, t *Node, in StageInput) StageResult {
	now := workflow.Now(ctx)
	t.Status, t.StartedAt = status.Running, &now
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          b.in.ExecutionID + "/" + n.ID,
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		StaticSummary:       fmt.Sprintf("Stage %s (%s) of %s", n.Name, n.Type, b.in.Of),
		StaticDetails:       stageDetails(n),
		WorkflowTaskTimeout: stageTaskTimeout(b.in.Settings),
	})
	_ = workflow.Await(ctx, func() bool { return b.starting < b.wave })
	b.starting++
	in.Notify = b.in.Notify
	b.event(ctx, contract.EventStageStart, n, t, in.Context)
	f := workflow.ExecuteChildWorkflow(cctx, StageName, in)
	b.running[n.ID] = f
	_ = f.GetChildWorkflowExecution().Get(ctx, nil)
	b.starting--
	var res StageResult
	err := ResultFrom(f.Get(ctx, &res), &res)
	delete(b.running, n.ID)
	res = stageOutcome(ctx, n, t, res, err)
	b.locks = append(b.locks, res.Locks...)
	if typ := stageEndType(t.Status); typ != "" {
		b.event(ctx, typ, n, t, withStageData(in.Context, n.ID, res.Data))
	}
	return res
}

// sortedIDs returns a map's keys in order: workflow code must not range over a map.
func sortedIDs[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runStageBatches is the pipeline's side of a big stage loop: the strategy node gets one
// placeholder child per batch (Source names the batch workflow, which the starter expands).
func (p *pipelineRun) runStageBatches(ctx workflow.Context, n *plan.Node, t *Node, lp *loopPlan, children []*plan.Node) {
	byID := make(map[string]*plan.Node, len(children))
	for _, c := range children {
		byID[c.ID] = c
		p.loopOf[c.ID] = n.ID
	}
	batches := splitBatches(lp.iterations, p.in.Settings.batchSize())
	t.Children = p.batchNodes(n, batches)
	root := p.batchRoot(n)
	stages := child(p.data, "stages")
	// With maxConcurrency, one batch at a time runs that many iterations: never more at once.
	parallel := p.in.Settings.parallelBatches()
	if lp.concurrency > 0 {
		parallel = 1
	}
	running, failed := 0, false
	perBatch := p.outputs.share(sharesOf(ctx) * len(batches))
	wg := workflow.NewWaitGroup(ctx)
	for k, b := range batches {
		if err := workflow.Await(ctx, func() bool { return running < parallel }); err != nil || p.stopped(ctx) || p.rollback {
			break
		}
		ph := t.Children[k]
		if lp.skipQueued && failed {
			now := workflow.Now(ctx)
			ph.Status, ph.EndedAt, ph.Source = status.Skipped, &now, ""
			for _, it := range b {
				p.stageEnded(ctx, n.ID+it.Postfix, status.Skipped)
			}
			continue
		}
		if running == 0 {
			p.running = append(p.running, n.ID)
			p.upsertStage(ctx)
		}
		running++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			now := workflow.Now(ctx)
			ph.Status, ph.StartedAt = status.Running, &now
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID: ph.Source, TaskQueue: workflow.GetInfo(ctx).TaskQueueName, WaitForCancellation: true,
				ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_TERMINATE,
				StaticSummary:     fmt.Sprintf("Iterations %d-%d of stage %s", b[0].Index, b[len(b)-1].Index, n.ID),
			})
			f := workflow.ExecuteChildWorkflow(cctx, StageBatchName, StageBatchInput{ExecutionID: p.id, Stage: n, Iterations: b,
				Total: len(lp.iterations), Concurrency: lp.concurrency, SkipQueued: lp.skipQueued, Root: root, Settings: p.in.Settings,
				Of: fmt.Sprintf("%s #%d", p.in.Plan.Name, p.in.SequenceID), Notify: p.notifications(), OutputLimit: perBatch})
			p.batchRuns[ph.Source] = f
			var res StageResult
			err := ResultFrom(f.Get(ctx, &res), &res)
			delete(p.batchRuns, ph.Source)
			p.outputs.add(ph.Path, res.OutputBytes)
			if running--; running == 0 {
				p.running = remove(p.running, n.ID)
				dctx, _ := workflow.NewDisconnectedContext(ctx)
				p.upsertStage(dctx)
			}
			if p.batchEnded(ctx, ph, res, err, stages, byID) {
				failed = true
			}
			wg.Done() // not deferred: see stageRun.runStep
		})
	}
	wg.Wait(ctx)
}

// splitBatches cuts a loop's iterations into batches of size.
func splitBatches(its []iteration, size int) [][]iteration {
	var batches [][]iteration
	for i := 0; i < len(its); i += size {
		batches = append(batches, its[i:min(i+size, len(its))])
	}
	return batches
}

// batchNodes are the tree's placeholders of a loop's batches, one per batch workflow.
func (p *pipelineRun) batchNodes(n *plan.Node, batches [][]iteration) []*Node {
	out := make([]*Node, len(batches))
	for k, b := range batches {
		out[k] = &Node{Path: fmt.Sprintf("%s/batch_%d", n.ID, k), ID: fmt.Sprintf("batch_%d", k), Kind: "batch",
			Status: status.NotStarted, Source: fmt.Sprintf("%s/%s/batch-%d", p.id, n.ID, k),
			Name: fmt.Sprintf("%s iterations %d-%d", n.Name, b[0].Index, b[len(b)-1].Index)}
	}
	return out
}

// batchRoot is the expression root the batches start from: a snapshot, since the live root
// gains each finished iteration's data, which later batches' inputs must not carry.
func (p *pipelineRun) batchRoot(n *plan.Node) map[string]any {
	root := copyMap(p.contextFor(n, p.root))
	pd := copyMap(root["pipeline"].(map[string]any))
	pd["stages"] = copyMap(child(pd, "stages"))
	root["pipeline"] = pd
	return root
}

// batchEnded records a finished batch workflow: its placeholder's status, its iterations'
// data and statuses, the stages it ran and whether it asked for a pipeline rollback or was
// aborted. It reports whether the batch broke.
func (p *pipelineRun) batchEnded(ctx workflow.Context, ph *Node, res StageResult, err error, stages map[string]any, byID map[string]*plan.Node) bool {
	end := workflow.Now(ctx)
	ph.EndedAt = &end
	if err != nil || res.Tree == nil {
		ph.Status, ph.Source = status.Errored, ""
		if ctx.Err() != nil {
			ph.Status = status.Aborted
		}
		ph.Failure = &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("stage batch workflow: %v", err)}
		return true
	}
	ph.Status = rollupChildren(res.Tree.Children)
	for _, c := range res.Tree.Children {
		if d, ok := res.Data[c.ID]; ok {
			stages[c.ID] = d
		}
		p.stageEnded(ctx, c.ID, c.Status)
	}
	for _, id := range res.Ran {
		p.ran = append(p.ran, byID[id])
	}
	p.rollback = p.rollback || res.PipelineRollback
	p.aborted = p.aborted || res.Aborted
	p.locks = append(p.locks, res.Locks...)
	return ph.Status.Broke()
}
