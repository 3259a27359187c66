package worker

import (
	"context"

	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// ServerSide is the worker of the activities only a server runs: reading a cron trigger's
// pipeline from Git at each fire (load, the server's). Start it beside the API; stop it with
// the process.
func ServerSide(st *starter.Starter, load func(context.Context, workflows.LoadCronRequest) (workflows.CronLoaded, error)) sdkworker.Worker {
	c, queue := st.ServerSide()
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterActivityWithOptions(load, activity.RegisterOptions{Name: workflows.LoadCronActivity})
	return w
}
