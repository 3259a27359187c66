package validate

import (
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/steps"
)

// barrierUse is one position of a barrier: a Barrier step (spec 7.2).
type barrierUse struct {
	stage    *stageCtx
	step     *pipeline.Step
	rollback bool
	at       *yaml.Node
}

func (c *checker) barrierStep(ctx *stageCtx, s *pipeline.Step, b *steps.Barrier, rollback bool, groups []*pipeline.StepGroup) {
	at := pipeline.ValueAt(b.Node, "barrierRef")
	switch {
	case dynamic(b.BarrierRef):
		c.diags.Errorf(c.pos(at), "barrier-ref", "barrierRef cannot be an expression or runtime input").
			SetHint("name a barrier declared under pipeline.flowControl.barriers")
		return
	case !c.barriers[b.BarrierRef]:
		d := c.diags.Errorf(c.pos(at), "barrier-ref", "barrier %q is not declared in pipeline.flowControl.barriers", b.BarrierRef)
		if s := pipeline.Closest(b.BarrierRef, sortedKeys(c.barriers)); s != "" {
			d.SetHint("did you mean %q?", s)
		} else {
			d.SetHint("declare it: flowControl: {barriers: [{name: %s, identifier: %s}]}", b.BarrierRef, b.BarrierRef)
		}
		return
	}
	c.barrierUses[b.BarrierRef] = append(c.barrierUses[b.BarrierRef], barrierUse{stage: ctx, step: s, rollback: rollback, at: at})
}

// checkBarriers rejects barrier references whose positions cannot run concurrently, which
// would deadlock until the Barrier steps time out (spec 7.2 Decision).
func (c *checker) checkBarriers() {
	for _, ref := range sortedKeys(c.barrierUses) {
		uses := c.barrierUses[ref]
		first := uses[0]
		for _, u := range uses[1:] {
			switch {
			case u.rollback != first.rollback:
				c.diags.Errorf(c.pos(u.at), "barrier-deadlock", "Barrier Deadlock Detected: barrier %q is used in both steps and rollbackSteps (line %d)", ref, first.at.Line).
					SetHint("forward and rollback steps never run at the same time; use a separate barrier")
			case u.stage == first.stage || u.stage.stage == first.stage.stage:
				c.diags.Errorf(c.pos(u.at), "barrier-deadlock", "Barrier Deadlock Detected: barrier %q is used twice in stage %s (also line %d)", ref, u.stage.stage.Identifier, first.at.Line).
					SetHint("every Barrier step of one stage must use a distinct barrierRef")
			case u.stage.index != first.stage.index:
				c.diags.Errorf(c.pos(u.at), "barrier-deadlock", "Barrier Deadlock Detected: barrier %q is used by stages %s and %s, which run one after the other", ref, first.stage.stage.Identifier, u.stage.stage.Identifier).
					SetHint("put the stages that meet at a barrier in the same `parallel` block")
			}
		}
		stages := map[*stageCtx]bool{}
		for _, u := range uses {
			stages[u.stage] = true
			if u.stage.looped && !u.stage.concurrent {
				c.diags.Warnf(c.pos(u.at), "barrier-concurrency", "barrier %q is inside looped stage %s whose maxConcurrency is below its iteration count; early iterations will wait for ones that cannot start until the barrier times out", ref, u.stage.stage.Identifier)
			}
		}
		if len(stages) == 1 && !first.stage.looped && len(uses) == 1 {
			c.diags.Warnf(c.pos(first.at), "barrier-alone", "barrier %q is used only by stage %s, so it synchronises nothing", ref, first.stage.stage.Identifier).
				SetHint("add a Barrier step with the same barrierRef to a stage running in parallel")
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
