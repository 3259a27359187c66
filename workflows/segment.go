package workflows

import (
	"encoding/json"
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// SegmentName is the workflow that runs a slice of a long pipeline's stages. Each stage
// costs the workflow that starts it about a dozen history events and its tree a few hundred
// bytes, so a pipeline of thousands of stages would outgrow Temporal's 51,200-event history
// and 2 MB payload limits; cut into segments of SegmentSize stages, every history and result
// stays small however long the pipeline is.
const SegmentName = "gantry.PipelineSegment"

// SegmentSize is the most stages one segment runs; a pipeline of more stages runs in segments.
const SegmentSize = 200

// segmentBytes bounds the plan one segment carries, so a segment of heavy stages stays well
// inside the payload limit.
const segmentBytes = 512 << 10

// SegmentInput is one slice of a long pipeline: top-level elements run in order, or, for a
// wide parallel block, some of its branches run at once.
type SegmentInput struct {
	ExecutionID string     `json:"executionId"`
	Plan        *plan.Plan `json:"plan"` // the pipeline's plan with only this segment's elements
	SequenceID  int64      `json:"sequenceId"`
	Settings    Settings   `json:"settings"`
	// Root is the expression root at the segment's start, with the earlier stages its
	// elements name (see contextFor).
	Root     map[string]any `json:"root"`
	Parallel bool           `json:"parallel,omitempty"`
	// Terminal are the distinct statuses of the stages that ended before, for
	// <+pipeline.currentStatus> (a roll-up reads a set).
	Terminal []status.Status `json:"terminal,omitempty"`
	Resume   *Resume         `json:"resume,omitempty"` // the copies of this segment's stages
	Notify   *Notifications  `json:"notify,omitempty"`
	// OutputLimit is the segment's share of ExecutionOutputLimit (0: all of it).
	OutputLimit int `json:"outputLimit,omitempty"`
}

// SegmentResult is what a segment returns: its elements' trees (Tree's children) and data,
// plus what the pipeline needs from the stages that ran.
type SegmentResult struct {
	StageResult
	// Ended are the statuses of the stages that ended, in order (<+pipeline.currentStatus>).
	Ended []status.Status `json:"ended,omitempty"`
	// Rollbacks are the stages that ran and have a rollback section, in start order.
	Rollbacks []*plan.Node `json:"rollbacks,omitempty"`
	// Pins are the commits and digests the Deployment stages that ran deployed, for their
	// pipeline rollback.
	Pins map[string]*Node `json:"pins,omitempty"`
}

// SegmentSignal is a segment's report to its pipeline about a stage that takes part in a
// barrier: it ended (Status) or expanded into loop iterations (Iterations).
type SegmentSignal struct {
	Stage      string        `json:"stage"`
	Status     status.Status `json:"status,omitempty"`
	Iterations []string      `json:"iterations,omitempty"`
}

// signalSegment carries a SegmentSignal.
const signalSegment = "segment"

// PipelineSegment runs one segment of a long pipeline with the pipeline's own code: its
// stages are the same stage workflows, with the same IDs, as when the pipeline runs them.
// Abort reaches it as a cancellation, pause and expiry as the signals loop batches get;
// barrier positions stay with the pipeline, which it tells when its stages end.
func PipelineSegment(ctx workflow.Context, in SegmentInput) (*SegmentResult, error) {
	backfillTraits(in.Plan.Stages)
	ctx = contract.WithSecretRoutes(ctx, in.Plan.Secrets)
	data := copyMap(child(in.Root, "pipeline"))
	earlier := child(data, "stages")
	data["stages"] = copyMap(earlier)
	root := copyMap(in.Root)
	root["pipeline"] = data
	p := &pipelineRun{in: PipelineInput{Plan: in.Plan, SequenceID: in.SequenceID, Settings: in.Settings, Resume: in.Resume},
		id: in.ExecutionID, root: root, data: data, segment: true, terminal: slices.Clone(in.Terminal),
		tree:     &Node{Kind: "segment", Status: status.Running, Children: newTree(in.Plan.Stages, "")},
		children: map[string]workflow.ChildWorkflowFuture{}, waiting: map[string]map[string]WaitingSignal{},
		loopOf: map[string]string{}, batchRuns: map[string]workflow.ChildWorkflowFuture{},
		barriers: newBarriers(in.Plan), raiser: newRaiser(in.Notify), outputs: newOutputBudget(in.OutputLimit)}
	if err := workflow.SetQueryHandler(ctx, QueryTree, func() (*Node, error) { return p.tree, nil }); err != nil {
		return nil, err
	}
	followPause(ctx, func(pause bool) { p.paused = pause }, p.runningChildren)
	workflow.Go(ctx, func(ctx workflow.Context) {
		workflow.GetSignalChannel(ctx, signalExpire).Receive(ctx, nil)
		p.expireRunning(ctx)
	})
	switch {
	case in.Parallel && in.Resume != nil: // a wide block before the stage to retry from
		for i, n := range in.Plan.Stages {
			p.copyElement(n, p.tree.Children[i])
		}
	case in.Parallel:
		t := &Node{Children: p.tree.Children}
		p.runElement(ctx, &plan.Node{Kind: plan.KindParallel, Children: in.Plan.Stages}, t)
	default:
		resuming := in.Resume != nil
		for i, n := range in.Plan.Stages {
			if p.stopped(ctx) || p.rollback {
				break
			}
			if resuming && containsStage(n, in.Resume.FromStage) {
				resuming = false
			}
			if resuming {
				p.copyElement(n, p.tree.Children[i])
				continue
			}
			p.runElement(ctx, n, p.tree.Children[i])
		}
	}
	p.stopped(ctx)
	p.tree.Status = rollupChildren(p.tree.Children)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, f := range p.signals { // the pipeline has every report before the segment ends
		_ = f.Get(dctx, nil)
	}
	res := &SegmentResult{StageResult: StageResult{Tree: p.tree, Data: map[string]any{}, Aborted: p.aborted,
		PipelineRollback: p.rollback, Locks: p.locks, OutputBytes: p.outputs.total}, Ended: p.terminal[len(in.Terminal):]}
	for id, d := range p.resultStages() {
		if _, ok := earlier[id]; !ok {
			res.Data[id] = d
		}
	}
	for _, n := range p.ran {
		if len(n.Rollback) > 0 {
			res.Rollbacks = append(res.Rollbacks, n)
		}
		if t := p.tree.Find(n.ID); t != nil && (len(t.Manifests) > 0 || t.Artifact != "") {
			if res.Pins == nil {
				res.Pins = map[string]*Node{}
			}
			res.Pins[n.ID] = &Node{Manifests: t.Manifests, Artifact: t.Artifact}
		}
	}
	return res, nil
}

// segmentUnit is what one segment workflow runs: top-level elements in order, or some
// branches of a wide parallel block at once (parallel is the block's index then, else -1).
type segmentUnit struct {
	elems    []*plan.Node
	parallel int
}

// segmentPlan cuts the pipeline's stages into segments when there are more than a segment
// holds; nil when the pipeline runs its stages itself.
func (p *pipelineRun) segmentPlan(ctx workflow.Context) []segmentUnit {
	size := p.in.Settings.segmentSize()
	// A pipeline of few but heavy stages segments too: its tree, which its result carries,
	// grows with its plan (20 stages of 1,000 steps make a 10 MB tree).
	if countStages(p.in.Plan.Stages) <= size && plannedBytes(p.in.Plan.Stages) <= segmentBytes ||
		workflow.GetVersion(ctx, changeSegments, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	return cutSegments(p.in.Plan.Stages, size)
}

// cutSegments cuts top-level elements into segments of at most size stages and segmentBytes
// of plan; a parallel block of more stages is cut into segments of its branches.
func cutSegments(elems []*plan.Node, size int) []segmentUnit {
	var units []segmentUnit
	var cur []*plan.Node
	stages, bytes := 0, 0
	flush := func() {
		if len(cur) > 0 {
			units = append(units, segmentUnit{elems: cur, parallel: -1})
		}
		cur, stages, bytes = nil, 0, 0
	}
	for i, e := range elems {
		if e.Kind == plan.KindParallel && countStages(e.Children) > size {
			flush()
			var branch []*plan.Node
			n, b := 0, 0
			for _, c := range e.Children {
				cn, cb := countStages([]*plan.Node{c}), jsonSize(c)
				if len(branch) > 0 && (n+cn > size || b+cb > segmentBytes) {
					units = append(units, segmentUnit{elems: branch, parallel: i})
					branch, n, b = nil, 0, 0
				}
				branch, n, b = append(branch, c), n+cn, b+cb
			}
			units = append(units, segmentUnit{elems: branch, parallel: i})
			continue
		}
		n, b := countStages([]*plan.Node{e}), jsonSize(e)
		if len(cur) > 0 && (stages+n > size || bytes+b > segmentBytes) {
			flush()
		}
		cur, stages, bytes = append(cur, e), stages+n, bytes+b
	}
	flush()
	return units
}

func countStages(nodes []*plan.Node) int {
	n := 0
	for _, e := range nodes {
		if e.Kind == plan.KindParallel {
			n += countStages(e.Children)
		} else {
			n++
		}
	}
	return n
}

// plannedBytes is the size of elements' plans as JSON.
func plannedBytes(elems []*plan.Node) int {
	n := 0
	for _, e := range elems {
		n += jsonSize(e)
	}
	return n
}

func jsonSize(n *plan.Node) int {
	b, _ := json.Marshal(n)
	return len(b)
}

// runSegments runs a long pipeline's stages segment by segment. The tree holds a placeholder
// per segment (Source names its workflow), which the starter expands; the branches of a wide
// parallel block run as several segments at once under the block's node.
func (p *pipelineRun) runSegments(ctx workflow.Context, units []segmentUnit, resuming bool) {
	p.segmented, p.pins = true, map[string]*Node{}
	p.tree.Children = nil
	placeholders := make([]*Node, len(units))
	var block *Node // the tree node of the wide parallel block being laid out
	for k, u := range units {
		ph := &Node{Path: fmt.Sprintf("segment_%d", k), ID: fmt.Sprintf("segment_%d", k), Kind: "segment",
			Status: status.NotStarted, Source: fmt.Sprintf("%s/segment-%d", p.id, k), Name: segmentName(u.elems)}
		placeholders[k] = ph
		if u.parallel < 0 {
			p.tree.Children, block = append(p.tree.Children, ph), nil
			continue
		}
		if block == nil || k == 0 || units[k-1].parallel != u.parallel {
			n := p.in.Plan.Stages[u.parallel]
			block = &Node{Path: n.ID, ID: n.ID, Name: n.Name, Kind: string(n.Kind), Status: status.NotStarted}
			p.tree.Children = append(p.tree.Children, block)
		}
		block.Children = append(block.Children, ph)
	}
	workflow.Go(ctx, p.listenSegments)
	stages := child(p.data, "stages")
	for k := 0; k < len(units); {
		if p.stopped(ctx) || p.rollback {
			break
		}
		u := units[k]
		if u.parallel < 0 {
			var resume *Resume
			if resuming {
				resume = p.resumeOf(u.elems)
				resuming = !containsAny(u.elems, p.in.Resume.FromStage)
			}
			p.runSegment(ctx, u, placeholders[k], resume, stages)
			k++
			continue
		}
		// Every segment of one wide block runs at once.
		end := k
		for end < len(units) && units[end].parallel == u.parallel {
			end++
		}
		var resume *Resume
		if resuming && !containsStage(p.in.Plan.Stages[u.parallel], p.in.Resume.FromStage) {
			resume = p.resumeOf(p.in.Plan.Stages[u.parallel].Children)
		}
		resuming = resume != nil
		blockNode := p.blockOf(placeholders[k])
		now := workflow.Now(ctx)
		blockNode.Status, blockNode.StartedAt = status.Running, &now
		wg := workflow.NewWaitGroup(ctx)
		for j := k; j < end; j++ {
			wg.Add(1)
			workflow.Go(sharing(ctx, end-k), func(ctx workflow.Context) {
				p.runSegment(ctx, units[j], placeholders[j], resume, stages)
				wg.Done() // not deferred: see stageRun.runStep
			})
		}
		wg.Wait(ctx)
		e := workflow.Now(ctx)
		blockNode.Status, blockNode.EndedAt = rollupChildren(blockNode.Children), &e
		k = end
	}
}

// blockOf is the parallel block node that holds a segment's placeholder.
func (p *pipelineRun) blockOf(ph *Node) *Node {
	for _, c := range p.tree.Children {
		if slices.Contains(c.Children, ph) {
			return c
		}
	}
	return ph
}

// runSegment runs one segment workflow and takes its stages' outcomes into the pipeline.
func (p *pipelineRun) runSegment(ctx workflow.Context, u segmentUnit, ph *Node, resume *Resume, stages map[string]any) {
	ids := stageIDs(u.elems)
	for _, id := range ids { // reached by their workflow IDs, as the iterations of a batched loop
		p.loopOf[id] = ph.Source
	}
	now := workflow.Now(ctx)
	ph.Status, ph.StartedAt = status.Running, &now
	pl := *p.in.Plan
	pl.Stages, pl.Notifications = u.elems, nil
	var terminal []status.Status
	for _, st := range p.terminal {
		if !slices.Contains(terminal, st) {
			terminal = append(terminal, st)
		}
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: ph.Source, TaskQueue: workflow.GetInfo(ctx).TaskQueueName, WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_TERMINATE,
		WorkflowTaskTimeout: stageTaskTimeout(p.in.Settings),
		StaticSummary:       fmt.Sprintf("%s of %s #%d", ph.Name, p.in.Plan.Name, p.in.SequenceID),
	})
	f := workflow.ExecuteChildWorkflow(cctx, SegmentName, SegmentInput{ExecutionID: p.id, Plan: &pl, SequenceID: p.in.SequenceID,
		Settings: p.in.Settings, Root: p.contextForNodes(u.elems, p.root), Parallel: u.parallel >= 0, Terminal: terminal,
		Resume: resume, Notify: p.notifications(), OutputLimit: p.outputs.share(sharesOf(ctx))})
	p.batchRuns[ph.Source] = f
	p.segmentsRunning = append(p.segmentsRunning, ph.Source)
	var res SegmentResult
	err := ResultFrom(f.Get(ctx, &res), &res)
	delete(p.batchRuns, ph.Source)
	p.segmentsRunning = remove(p.segmentsRunning, ph.Source)
	p.outputs.add(ph.Path, res.OutputBytes)
	end := workflow.Now(ctx)
	ph.EndedAt = &end
	if err != nil || res.Tree == nil {
		ph.Status, ph.Source = status.Errored, ""
		if ctx.Err() != nil {
			ph.Status = status.Aborted
		}
		ph.Failure = &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("pipeline segment workflow: %v", err)}
		p.ended(ph.Status)
		for _, id := range ids { // nobody waits at a barrier for a stage that cannot arrive
			p.stageEnded(ctx, id, ph.Status)
		}
		return
	}
	ph.Status = rollupChildren(res.Tree.Children)
	for _, id := range sortedKeys(res.Data) {
		stages[id] = res.Data[id]
	}
	for _, st := range res.Ended {
		p.ended(st)
	}
	p.ran = append(p.ran, res.Rollbacks...)
	for _, id := range sortedIDs(res.Pins) {
		p.pins[id] = res.Pins[id]
	}
	p.rollback = p.rollback || res.PipelineRollback
	p.aborted = p.aborted || res.Aborted
	p.locks = append(p.locks, res.Locks...)
}

// listenSegments takes the segments' reports on stages that take part in barriers.
func (p *pipelineRun) listenSegments(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, signalSegment)
	for {
		var sig SegmentSignal
		if !ch.Receive(ctx, &sig) {
			return
		}
		if sig.Iterations != nil {
			p.barriers.expandLoop(sig.Stage, sig.Iterations)
			for _, it := range sig.Iterations {
				p.loopOf[it] = p.loopOf[sig.Stage]
			}
			continue
		}
		p.stageEnded(ctx, sig.Stage, sig.Status)
	}
}

// reportToPipeline is a segment's side of the barriers: the pipeline keeps their positions.
func (p *pipelineRun) reportToPipeline(ctx workflow.Context, sig SegmentSignal) {
	if len(p.barriers.refs[sig.Stage]) == 0 {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	p.signals = append(p.signals, workflow.SignalExternalWorkflow(dctx, p.id, "", signalSegment, sig))
}

// resumeOf is the part of the resumed execution's copies that concerns some elements.
func (p *pipelineRun) resumeOf(elems []*plan.Node) *Resume {
	r := *p.in.Resume
	r.Stages = map[string]StageCopy{}
	for _, id := range stageIDs(elems) {
		if c, ok := p.in.Resume.Stages[id]; ok {
			r.Stages[id] = c
		}
	}
	return &r
}

// runningChildren are the running stage and batch workflows, for a pause to reach.
func (p *pipelineRun) runningChildren() map[string]workflow.ChildWorkflowFuture {
	out := make(map[string]workflow.ChildWorkflowFuture, len(p.children)+len(p.batchRuns))
	for id, f := range p.children {
		out[id] = f
	}
	for id, f := range p.batchRuns {
		out[id] = f
	}
	return out
}

// stageIDs lists the stages among elements (the branches of parallel blocks included).
func stageIDs(elems []*plan.Node) []string {
	var ids []string
	for _, e := range elems {
		if e.Kind == plan.KindParallel {
			ids = append(ids, stageIDs(e.Children)...)
		} else {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func containsAny(elems []*plan.Node, id string) bool {
	for _, e := range elems {
		if containsStage(e, id) {
			return true
		}
	}
	return false
}

// segmentName names a segment by its first and last stage.
func segmentName(elems []*plan.Node) string {
	ids := stageIDs(elems)
	if len(ids) == 1 {
		return "stage " + ids[0]
	}
	return fmt.Sprintf("stages %s to %s", ids[0], ids[len(ids)-1])
}
