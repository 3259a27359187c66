package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/plan"
)

// CronName is the workflow a cron trigger's Temporal Schedule starts: it starts the pipeline
// through an activity, once per fire.
const CronName = "gantry.Cron"

// StartActivity starts a pipeline execution from a worker (for cron triggers).
const StartActivity = "gantry.StartPipeline"

// CronInput is what a schedule hands its workflow: the trigger and the plan compiled when the
// schedule was last synchronised with the trigger files.
type CronInput struct {
	Trigger string     `json:"trigger"`
	Plan    *plan.Plan `json:"plan"`
	// User is the service identity the trigger acts as; "" names the trigger.
	User string `json:"user,omitempty"`
	// Settings are the server's settings for the executions it starts (its concurrency limits).
	Settings Settings `json:"settings,omitzero"`
}

// BindActivity records an execution's idempotency key with its pipeline's sequence workflow
// (BindRequest) and returns the number of the execution the key started first.
const BindActivity = "gantry.BindKey"

// BindRequest asks BindActivity to record that Key started execution Number of Pipeline.
type BindRequest struct {
	Pipeline string `json:"pipeline"`
	Key      string `json:"key"`
	Number   int64  `json:"number"`
}

// StartRequest asks StartActivity to start a pipeline at most once per key.
type StartRequest struct {
	Key      string     `json:"key"`
	Plan     *plan.Plan `json:"plan"`
	Trigger  Trigger    `json:"trigger"`
	Settings Settings   `json:"settings,omitzero"`
}

// Cron starts one execution for one schedule fire; its workflow ID makes the start idempotent
// even if the activity is retried.
func Cron(ctx workflow.Context, in CronInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 10},
		Summary:             "Start pipeline " + in.Plan.Identifier + " for trigger " + in.Trigger,
	})
	info := workflow.GetInfo(ctx)
	var id string
	user := in.User
	if user == "" {
		user = "trigger " + in.Trigger
	}
	err := workflow.ExecuteActivity(ctx, StartActivity, StartRequest{
		Key:      "cron/" + info.WorkflowExecution.ID,
		Plan:     in.Plan,
		Settings: in.Settings,
		Trigger: Trigger{Type: "SCHEDULER_CRON", User: user,
			Data: map[string]any{"type": "Scheduled", "identifier": in.Trigger}},
	}).Get(ctx, &id)
	return id, err
}
