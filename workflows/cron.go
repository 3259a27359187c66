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
	// FromGit marks a pipeline kept in Git: each fire has a server read it again (its branch's
	// head, the policies kept in Git), and Plan is only what the last synchronisation read.
	FromGit bool `json:"fromGit,omitempty"`
}

// LoadCronActivity has a server read a cron trigger's pipeline kept in Git as it is now, and
// authorize its start (LoadCronRequest → CronLoaded). Only servers poll ServerQueue: they hold
// the registry of remote entities and the Git credentials.
const LoadCronActivity = "gantry.LoadCronPipeline"

// ServerQueue is the task queue of the activities only a server runs.
func ServerQueue(base string) string { return base + "-server" }

// LoadCronRequest names the trigger whose pipeline a fire reads.
type LoadCronRequest struct {
	Trigger string `json:"trigger"`
}

// CronLoaded is a fire's plan, read at the fire, and the identity its start acts as.
type CronLoaded struct {
	Plan *plan.Plan `json:"plan"`
	User string     `json:"user,omitempty"`
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
	if in.FromGit {
		// Read at the fire, by whichever server is up; a failed read fails the fire rather
		// than running what an earlier synchronisation read.
		lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: ServerQueue(info.TaskQueueName), ScheduleToCloseTimeout: 10 * time.Minute, StartToCloseTimeout: 3 * time.Minute,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}, Summary: "Read pipeline " + in.Plan.Identifier + " from Git for trigger " + in.Trigger,
		})
		var loaded CronLoaded
		if err := workflow.ExecuteActivity(lctx, LoadCronActivity, LoadCronRequest{Trigger: in.Trigger}).Get(ctx, &loaded); err != nil {
			return "", err
		}
		in.Plan, in.User = loaded.Plan, loaded.User
	}
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
