package starter

import (
	"context"

	"github.com/gantry-cd/gantry/workflows"
)

// StartActivity is the activity (workflows.StartActivity) that starts a pipeline from a worker,
// for cron triggers; it is idempotent per request key.
type StartActivity struct {
	Starter *Starter
}

// Run starts the pipeline at most once per key and returns the execution ID.
func (a *StartActivity) Run(ctx context.Context, req workflows.StartRequest) (string, error) {
	exec, _, err := a.Starter.StartOnce(ctx, req.Key, req.Plan, req.Trigger, req.Settings)
	if err != nil {
		return "", err
	}
	return exec.ID, nil
}
