package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// An execution started with a number taken ahead records its key before anything runs: when
// the key is its own it runs; when the key started another execution first it ends SKIPPED,
// with no stage run.
func TestKeyTakenAheadIsRecordedFirst(t *testing.T) {
	p := compile(t, "keyed.yaml", `pipeline:
  name: keyed
  identifier: keyed
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: "true"}}}}
`)
	for _, first := range []int64{7, 3} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetTestTimeout(time.Minute)
		worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
		var asked []workflows.BindRequest
		env.RegisterActivityWithOptions(func(ctx context.Context, req workflows.BindRequest) (int64, error) {
			asked = append(asked, req)
			return first, nil
		}, activity.RegisterOptions{Name: workflows.BindActivity})
		env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 7, Key: "delivery/Github/t/abc",
			Trigger: workflows.Trigger{Type: "WEBHOOK"}, Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
		var res workflows.PipelineResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 1 || asked[0] != (workflows.BindRequest{Pipeline: "keyed", Key: "delivery/Github/t/abc", Number: 7}) {
			t.Errorf("bind requests %+v", asked)
		}
		stage := res.Tree.Children[0]
		switch first {
		case 7:
			if res.Status != status.Succeeded || stage.Status != status.Succeeded {
				t.Errorf("own key: %s, stage %s", res.Status, stage.Status)
			}
		default:
			if res.Status != status.Skipped || stage.Status != status.NotStarted ||
				!strings.Contains(strings.Join(res.Tree.Notes, " "), "which started execution keyed-3") {
				t.Errorf("repeated key: %s, stage %s, notes %q", res.Status, stage.Status, res.Tree.Notes)
			}
		}
	}
}
