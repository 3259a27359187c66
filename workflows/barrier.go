package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/stepspec"
)

// Barrier outcomes (spec 7.2).
const (
	barrierReleased  = "released"
	barrierAbandoned = "abandoned"
	barrierTimedOut  = "timeout"
)

// BarrierSignal is a stage's report about a barrier: "arrived" or "expired".
type BarrierSignal struct {
	Ref   string `json:"ref"`
	Stage string `json:"stage"`
	Event string `json:"event"`
}

// BarrierResult tells a stage how a barrier ended.
type BarrierResult struct {
	Ref    string `json:"ref"`
	Result string `json:"result"`
}

// barrierRefs lists the barriers the Barrier steps of a stage use.
func barrierRefs(stage *plan.Node) []string {
	var refs []string
	seen := map[string]bool{}
	plan.Walk(stage.Children, nil, func(n *plan.Node, _ []string) {
		if n.Kind != plan.KindStep || traitsOf(n).Builtin != "barrier" {
			return
		}
		sp, _ := specOf[stepspec.BarrierSpec](n.Spec)
		if ref := sp.BarrierRef; ref != "" && !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	})
	return refs
}

// barriers is the pipeline's view of every barrier: the state of each position (a stage, or
// an iteration of a looped stage) and how the barrier ended.
type barriers struct {
	refs      map[string][]string          // stage id → barrier refs it takes part in
	positions map[string]map[string]string // ref → stage id → "", arrived, abandoned, expired
	order     map[string][]string          // ref → stage ids in registration order
	broken    map[string]string            // ref → outcome once decided
}

func newBarriers(p *plan.Plan) *barriers {
	b := &barriers{refs: map[string][]string{}, positions: map[string]map[string]string{},
		order: map[string][]string{}, broken: map[string]string{}}
	plan.Walk(p.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind == plan.KindStage {
			for _, ref := range barrierRefs(n) {
				b.add(ref, n.ID)
			}
		}
	})
	return b
}

func (b *barriers) add(ref, stage string) {
	if b.positions[ref] == nil {
		b.positions[ref] = map[string]string{}
	}
	if _, ok := b.positions[ref][stage]; !ok {
		b.order[ref] = append(b.order[ref], stage)
		b.refs[stage] = append(b.refs[stage], ref)
	}
	b.positions[ref][stage] = ""
}

// expandLoop replaces a looped stage's position by one per iteration.
func (b *barriers) expandLoop(base string, iterations []string) {
	for _, ref := range b.refs[base] {
		delete(b.positions[ref], base)
		kept := b.order[ref][:0:0]
		for _, s := range b.order[ref] {
			if s != base {
				kept = append(kept, s)
			}
		}
		b.order[ref] = kept
		for _, it := range iterations {
			b.add(ref, it)
		}
	}
}

// set records a position's state and returns the barrier's outcome if it is now decided.
func (b *barriers) set(ref, stage, state string) string {
	pos := b.positions[ref]
	if pos == nil || b.broken[ref] != "" {
		return ""
	}
	if _, ok := pos[stage]; !ok {
		return ""
	}
	pos[stage] = state
	arrived := true
	for _, s := range b.order[ref] {
		switch pos[s] {
		case "abandoned":
			b.broken[ref] = barrierAbandoned
			return barrierAbandoned
		case "expired":
			b.broken[ref] = barrierTimedOut
			return barrierTimedOut
		case "arrived":
		default:
			arrived = false
		}
	}
	if arrived {
		b.broken[ref] = barrierReleased
		return barrierReleased
	}
	return ""
}

// stageEnded settles the positions of a finished stage on barriers still standing (spec 7.2:
// a positive final status counts as arrived, EXPIRED as timed out, anything else as
// abandoned). A stage that had arrived and then ended while the barrier stood gave up on it.
func (p *pipelineRun) stageEnded(ctx workflow.Context, stage string, st status.Status) {
	if p.segment {
		p.reportToPipeline(ctx, SegmentSignal{Stage: stage, Status: st})
		return
	}
	for _, ref := range p.barriers.refs[stage] {
		if cur := p.barriers.positions[ref][stage]; cur != "" && cur != "arrived" {
			continue
		}
		state := "abandoned"
		switch {
		case st.Positive():
			state = "arrived"
		case st == status.Expired:
			state = "expired"
		}
		p.decide(ctx, ref, p.barriers.set(ref, stage, state))
	}
}

// decide tells every running participant how a barrier ended.
func (p *pipelineRun) decide(ctx workflow.Context, ref, outcome string) {
	if outcome == "" {
		return
	}
	for _, id := range p.running {
		for _, r := range p.barriers.refs[id] {
			if f := p.children[id]; f != nil && r == ref { // a batched stage loop has no stage child
				f.SignalChildWorkflow(ctx, signalBarrierResult, BarrierResult{Ref: ref, Result: outcome})
			}
		}
	}
	// Iterations of batched stage loops run under their batch: those waiting at the barrier
	// hear from the pipeline directly; later arrivals get the outcome when they report.
	for _, id := range p.barriers.order[ref] {
		if p.loopOf[id] != "" && p.barriers.positions[ref][id] == "arrived" {
			workflow.SignalExternalWorkflow(ctx, p.id+"/"+id, "", signalBarrierResult, BarrierResult{Ref: ref, Result: outcome})
		}
	}
}

// listenBarriers handles the stages' barrier signals.
func (p *pipelineRun) listenBarriers(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, signalBarrier)
	for {
		var sig BarrierSignal
		if !ch.Receive(ctx, &sig) {
			return
		}
		if outcome := p.barriers.broken[sig.Ref]; outcome != "" {
			if f := p.children[sig.Stage]; f != nil {
				f.SignalChildWorkflow(ctx, signalBarrierResult, BarrierResult{Ref: sig.Ref, Result: outcome})
			} else if p.loopOf[sig.Stage] != "" {
				workflow.SignalExternalWorkflow(ctx, p.id+"/"+sig.Stage, "", signalBarrierResult, BarrierResult{Ref: sig.Ref, Result: outcome})
			}
			continue
		}
		p.decide(ctx, sig.Ref, p.barriers.set(sig.Ref, sig.Stage, sig.Event))
	}
}

// barrierStep waits at a barrier (spec 7.2): it reports its arrival to the pipeline and waits
// for the outcome or its own timeout.
func (s *stageRun) barrierStep(ctx workflow.Context, t *Node, spec any, timeout time.Duration) (map[string]any, *contract.Failure) {
	sp, err := specOf[stepspec.BarrierSpec](spec)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Barrier spec: %v", err)}
	}
	ref := sp.BarrierRef
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "a Barrier step needs to run inside a pipeline"}
	}
	if outcome := s.barriers[ref]; outcome == barrierAbandoned || outcome == barrierTimedOut {
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("barrier %s already broken (%s)", ref, outcome)}
	}
	t.Status = status.AsyncWaiting
	// The pipeline keeps the barriers; a loop batch's parent is its stage (or stage batch).
	pipeline := parent.ID
	if workflow.GetVersion(ctx, changeBatchBarriers, workflow.DefaultVersion, 1) == 1 {
		pipeline = s.in.ExecutionID
	}
	s.signal(ctx, pipeline, signalBarrier, BarrierSignal{Ref: ref, Stage: s.in.Stage.ID, Event: "arrived"})
	done, err := workflow.AwaitWithTimeout(ctx, timeout, func() bool { return s.barriers[ref] != "" })
	switch {
	case err != nil:
		return nil, &contract.Failure{Category: aborted, Message: "aborted"}
	case !done:
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		s.signal(dctx, pipeline, signalBarrier, BarrierSignal{Ref: ref, Stage: s.in.Stage.ID, Event: "expired"})
		return nil, &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("barrier %s did not release within %s", ref, timeout)}
	}
	switch s.barriers[ref] {
	case barrierAbandoned:
		return nil, &contract.Failure{Category: contract.Unknown, Message: "The barrier was abandoned"}
	case barrierTimedOut:
		return nil, &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("barrier %s timed out at another participant", ref)}
	}
	return map[string]any{"barrierRef": ref}, nil
}
