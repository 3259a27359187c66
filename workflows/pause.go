package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

// registerPause installs the pause and resume updates (spec 3.4 Pause / Resume): running steps
// finish their current attempt, nothing new starts while the execution is PAUSED, and timeout
// timers keep running.
func (p *pipelineRun) registerPause(ctx workflow.Context) error {
	for _, u := range []struct {
		name  string
		pause bool
	}{{UpdatePause, true}, {UpdateResume, false}} {
		err := workflow.SetUpdateHandlerWithOptions(ctx, u.name,
			func(ctx workflow.Context, req PauseRequest) (string, error) {
				p.setPaused(ctx, u.pause, req.User)
				if u.pause {
					return "paused by " + req.User, nil
				}
				return "resumed by " + req.User, nil
			},
			workflow.UpdateHandlerOptions{Validator: func(req PauseRequest) error {
				switch {
				case req.User == "":
					return refuse(ErrForbidden, "a pause or resume must name the user who asks for it")
				case p.aborted || p.expired || p.tree.EndedAt != nil:
					return refuse(ErrConflict, "execution %s is ending; it can no longer be paused or resumed", p.id)
				case u.pause && p.paused:
					return refuse(ErrConflict, "execution %s is already paused", p.id)
				case !u.pause && !p.paused:
					return refuse(ErrConflict, "execution %s is not paused", p.id)
				}
				return nil
			}})
		if err != nil {
			return err
		}
	}
	return nil
}

// setPaused pauses or resumes the execution and tells its running stages and loop batches.
func (p *pipelineRun) setPaused(ctx workflow.Context, pause bool, user string) {
	p.paused = pause
	st, event, verb := status.Running, contract.EventPipelineResumed, "resumed"
	if pause {
		st, event, verb = status.Paused, contract.EventPipelinePaused, "paused"
	}
	p.tree.Status = st
	p.tree.Notes = append(p.tree.Notes, fmt.Sprintf("%s by %s at %s", verb, user, workflow.Now(ctx).UTC().Format("15:04:05")))
	p.upsert(ctx, st)
	for _, id := range p.running {
		if f := p.children[id]; f != nil {
			f.SignalChildWorkflow(ctx, signalPause, pause)
		}
	}
	for _, id := range sortedIDs(p.batchRuns) {
		p.batchRuns[id].SignalChildWorkflow(ctx, signalPause, pause)
	}
	p.pipelineEvent(ctx, event, st)
}

// listenPause follows the pipeline's pause and resume in a stage, and passes them on to the
// stage's loop batches.
func (s *stageRun) listenPause(ctx workflow.Context) {
	followPause(ctx, func(pause bool) {
		s.paused = pause
		if !s.tree.Status.Final() { // shown while nothing of the stage runs any more
			s.tree.Status = status.Running
			if pause {
				s.tree.Status = status.Paused
			}
		}
	}, func() map[string]workflow.ChildWorkflowFuture { return s.batchRuns })
}

// followPause calls set at every pause (true) or resume (false) signal and passes the signal
// on to the running children.
func followPause(ctx workflow.Context, set func(bool), children func() map[string]workflow.ChildWorkflowFuture) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, signalPause)
		for {
			var pause bool
			if !ch.Receive(ctx, &pause) {
				return
			}
			set(pause)
			running := children()
			for _, id := range sortedIDs(running) {
				running[id].SignalChildWorkflow(ctx, signalPause, pause)
			}
		}
	})
}

// waitResumed holds a node back while the execution is paused; false means the stage stopped
// meanwhile and the node must not start.
func (s *stageRun) waitResumed(ctx workflow.Context, fr *frame) bool {
	if !s.paused {
		return true
	}
	_ = workflow.Await(ctx, func() bool { return !s.paused || s.aborted || s.expired })
	return !s.stopped(ctx, fr)
}
