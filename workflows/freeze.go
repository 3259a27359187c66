package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// changeFreeze: a Deployment stage checks deployment freezes before it deploys.
const changeFreeze = "deployment-freeze"

// GlobalFreeze is the global deployment freeze's workflow (contract.FreezeWorkflow): it runs
// while the freeze is on and ends when someone turns it off, whose name it returns. Its
// history is the freeze's record: who turned it on (the input), who off, and when.
func GlobalFreeze(ctx workflow.Context, on contract.GlobalFreeze) (string, error) {
	var by string
	workflow.GetSignalChannel(ctx, contract.SignalFreezeOff).Receive(ctx, &by)
	return by, nil
}

// checkFreeze refuses the stage's deployment, FREEZE_FAILED, while one of the freezes that
// match it holds or the global freeze is on, unless the execution was started with an
// override; false: the stage has finished.
func (s *stageRun) checkFreeze(ctx workflow.Context) bool {
	d := s.in.Stage.Deploy
	if d == nil || workflow.GetVersion(ctx, changeFreeze, workflow.DefaultVersion, 1) < 1 {
		return true
	}
	now := workflow.Now(ctx)
	who, why := activeFreeze(d.Freezes, now)
	if why == "" {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 5 * time.Minute, Summary: "global freeze",
		})
		var g contract.GlobalFreeze
		if err := workflow.ExecuteLocalActivity(lctx, contract.GlobalFreezeState).Get(ctx, &g); err != nil {
			// Not knowing is not a freeze: say so and deploy.
			s.tree.Notes = append(s.tree.Notes, "the global deployment freeze could not be read: "+err.Error())
		} else if g.On {
			who = "global"
			why = fmt.Sprintf("the global deployment freeze is on (since %s, by %s", g.Since.UTC().Format(time.RFC3339), g.By)
			if g.Reason != "" {
				why += ": " + g.Reason
			}
			why += ")"
		}
	}
	if why == "" {
		return true
	}
	if by := s.in.Settings.OverrideFreeze; by != "" {
		s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("deployed through a freeze, overridden by %s: %s", by, why))
		return true
	}
	s.tree.Freeze = who
	s.finish(ctx, status.FreezeFailed, &contract.Failure{Category: contract.Unknown,
		Message: fmt.Sprintf("deployment refused: %s; a user with the override-freeze permission can start it with --override-freeze", why)})
	return false
}

// activeFreeze names the first freeze that holds at t: its identifier, and it with its window
// for people ("": none).
func activeFreeze(fs []plan.Freeze, t time.Time) (string, string) {
	for _, f := range fs {
		if from, to, ok := f.ActiveAt(t); ok {
			name := f.ID
			if f.Name != "" && f.Name != f.ID {
				name = fmt.Sprintf("%s (%s)", f.Name, f.ID)
			}
			return f.ID, fmt.Sprintf("deployment freeze %s holds from %s to %s", name, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		}
	}
	return "", ""
}
