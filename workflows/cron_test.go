package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/workflows"
)

// A fire of a pipeline kept in Git starts the plan a server reads at the fire, acting as the
// identity it returns; a fire of a local pipeline starts the plan of the last synchronisation
// and reads nothing. A read that fails fails the fire and starts nothing.
func TestCronFireReadsPipelinesKeptInGitAtTheFire(t *testing.T) {
	synced := &plan.Plan{Identifier: "release", Name: "synced"}
	read := &plan.Plan{Identifier: "release", Name: "read at the fire"}
	for _, tc := range []struct {
		name     string
		fromGit  bool
		readErr  error
		wantPlan string
		wantUser string
		wantErr  bool
	}{
		{name: "local", wantPlan: "synced", wantUser: "svc"},
		{name: "from Git", fromGit: true, wantPlan: "read at the fire", wantUser: "release-bot"},
		{name: "read fails", fromGit: true, readErr: errors.New("app@abc:.harness/release.yaml:4:3: broken"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(workflows.Cron, workflow.RegisterOptions{Name: workflows.CronName})
			var reads []workflows.LoadCronRequest
			env.RegisterActivityWithOptions(func(ctx context.Context, req workflows.LoadCronRequest) (workflows.CronLoaded, error) {
				reads = append(reads, req)
				if tc.readErr != nil {
					return workflows.CronLoaded{}, tc.readErr
				}
				return workflows.CronLoaded{Plan: read, User: "release-bot"}, nil
			}, activity.RegisterOptions{Name: workflows.LoadCronActivity})
			var started []workflows.StartRequest
			env.RegisterActivityWithOptions(func(ctx context.Context, req workflows.StartRequest) (string, error) {
				started = append(started, req)
				return "release-1", nil
			}, activity.RegisterOptions{Name: workflows.StartActivity})
			env.SetTestTimeout(time.Minute)
			env.ExecuteWorkflow(workflows.CronName, workflows.CronInput{Trigger: "nightly", Plan: synced, User: "svc", FromGit: tc.fromGit})
			err := env.GetWorkflowError()
			if tc.wantErr {
				if err == nil || len(started) != 0 {
					t.Fatalf("a failed read: %v, started %d", err, len(started))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 0, true: 1}[tc.fromGit]; len(reads) != want {
				t.Errorf("%d reads, want %d", len(reads), want)
			}
			if len(started) != 1 || started[0].Plan.Name != tc.wantPlan || started[0].Trigger.User != tc.wantUser {
				t.Errorf("started %+v", started)
			}
		})
	}
}
