package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

const benchSteps = 100

// rawStepsName is the baseline: a hand-written workflow that runs the same ShellScript
// activity benchSteps times with no engine logic (no plan, expressions, tree or child).
const rawStepsName = "bench.RawSteps"

func rawSteps(ctx workflow.Context, in activities.StepInput, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    workflows.DefaultSettings.HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, activities.ShellScript, in).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func benchPipeline(n int) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: bench\n  identifier: bench\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "              - step: {type: ShellScript, name: s%d, identifier: s%d, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}\n", i, i)
	}
	return b.String()
}

// BenchmarkGantry100Steps runs a 100-step sequential pipeline of `exit 0` ShellScript steps.
func BenchmarkGantry100Steps(b *testing.B) {
	r := load.Bytes("bench.yaml", []byte(benchPipeline(benchSteps)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := env.starter.Result(ctx, exec.ID)
		if err != nil || res.Status != status.Succeeded {
			b.Fatalf("%v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*benchSteps), "ms/step")
}

// BenchmarkRaw100Steps runs the same 100 activities from a hand-written workflow on the same
// server and worker.
func BenchmarkRaw100Steps(b *testing.B) {
	spec, _ := json.Marshal(map[string]any{"shell": "Bash", "source": map[string]any{"type": "Inline", "spec": map[string]any{"script": "exit 0"}}})
	in := activities.StepInput{ExecutionID: "raw", StepPath: "s.step", Type: "ShellScript", Spec: spec, Timeout: time.Minute}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run, err := env.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: workflows.TaskQueue}, rawStepsName, in, benchSteps)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*benchSteps), "ms/step")
}
