package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

const benchSteps = 100

// rawStepsName is the baseline: a hand-written workflow that runs the same ShellScript
// activity benchSteps times with no engine logic (no plan, expressions, tree or child).
const rawStepsName = "bench.RawSteps"

func rawSteps(ctx workflow.Context, in contract.StepInput, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    workflows.DefaultSettings.HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	for i := 0; i < n; i++ {
		if err := workflow.ExecuteActivity(ctx, contract.ShellScript, in).Get(ctx, nil); err != nil {
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
	in := contract.StepInput{ExecutionID: "raw", StepPath: "s.step", Type: "ShellScript", Spec: spec, Timeout: time.Minute}
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

const fanout, fanoutConcurrency = 200, 20

// rawFanoutName is the baseline of the matrix benchmark: the same 200 activities, at most 20
// in flight, from a hand-written workflow.
const rawFanoutName = "bench.RawFanout"

func rawFanout(ctx workflow.Context, in contract.StepInput, n, limit int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    workflows.DefaultSettings.HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	running := 0
	var firstErr error
	wg := workflow.NewWaitGroup(ctx)
	for i := 0; i < n; i++ {
		if err := workflow.Await(ctx, func() bool { return running < limit }); err != nil {
			return err
		}
		running++
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if err := workflow.ExecuteActivity(ctx, contract.ShellScript, in).Get(ctx, nil); err != nil && firstErr == nil {
				firstErr = err
			}
			running--
		})
	}
	wg.Wait(ctx)
	return firstErr
}

func matrixPipeline(n, limit int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = strconv.Itoa(i)
	}
	return fmt.Sprintf(`pipeline:
  name: fanout
  identifier: fanout
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: t
                  identifier: t
                  strategy: {matrix: {n: [%s], maxConcurrency: %d}}
                  spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}
`, strings.Join(vals, ", "), limit)
}

// historyEvents counts the events of a workflow's history.
func historyEvents(b *testing.B, id string) int {
	it := env.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// BenchmarkGantryMatrix200 runs a matrix of 200 `exit 0` steps, 20 at a time; it reports the
// history events per step of the stage workflow.
func BenchmarkGantryMatrix200(b *testing.B) {
	r := load.Bytes("fanout.yaml", []byte(matrixPipeline(fanout, fanoutConcurrency)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	ctx := context.Background()
	var last string
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
		last = exec.ID
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64(historyEvents(b, last+"/s"))/fanout, "events/step")
}

// BenchmarkRawFanout200 is the hand-written baseline of BenchmarkGantryMatrix200.
func BenchmarkRawFanout200(b *testing.B) {
	spec, _ := json.Marshal(map[string]any{"shell": "Bash", "source": map[string]any{"type": "Inline", "spec": map[string]any{"script": "exit 0"}}})
	in := contract.StepInput{ExecutionID: "raw", StepPath: "s.step", Type: "ShellScript", Spec: spec, Timeout: time.Minute}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run, err := env.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: workflows.TaskQueue}, rawFanoutName, in, fanout, fanoutConcurrency)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
}

// BenchmarkGantryMatrix5000 runs a 5,000-step matrix once per iteration and reports its wall
// time and the largest single workflow history, in events.
func BenchmarkGantryMatrix5000(b *testing.B) {
	r := load.Bytes("big.yaml", []byte(matrixPipeline(5000, 100)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	ctx := context.Background()
	largest := 0
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
		b.StopTimer()
		largest = max(largest, historyEvents(b, exec.ID), historyEvents(b, exec.ID+"/s"))
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64(largest), "max-history-events")
}

// runSucceeds starts a plan on the embedded engine and waits for its success, within timeout.
func runSucceeds(tb testing.TB, p *plan.Plan, timeout time.Duration) (starter.Execution, *workflows.PipelineResult) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		tb.Fatalf("run %s: %v %v", exec.ID, err, res)
	}
	return exec, res
}

// stagesPlan is a pipeline of n plain one-step Custom stages, each exporting its number.
func stagesPlan(b *testing.B, n int) *plan.Plan {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pipeline:\n  name: stages%d\n  identifier: stages%d\n  stages:\n", n, n)
	for i := range n {
		fmt.Fprintf(&sb, "    - {stage: {name: s%d, identifier: s%d, type: Custom, spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: 'V=%d'}}, outputVariables: [{name: v, type: String, value: V}]}}}]}}}}\n", i, i, i)
	}
	r := load.Bytes("stages.yaml", []byte(sb.String()), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// runStages runs a pipeline of plain stages once and returns its wall time and the largest
// history of its pipeline and segment workflows.
func runStages(b *testing.B, p *plan.Plan, n int) (time.Duration, int) {
	began := time.Now()
	exec, res := runSucceeds(b, p, time.Hour)
	took := time.Since(began)
	if len(res.Tree.Children) != n {
		b.Fatalf("%d stages in the result's tree, want %d", len(res.Tree.Children), n)
	}
	largest := historyEvents(b, exec.ID)
	for k := 0; k*workflows.SegmentSize < n && n > workflows.SegmentSize; k++ {
		largest = max(largest, historyEvents(b, fmt.Sprintf("%s/segment-%d", exec.ID, k)))
	}
	return took, largest
}

// BenchmarkStages5000 runs 5,000 plain stages (25 segments of 200) and, as its baseline, a
// pipeline of 100 (one workflow) before and after each: the time per stage may not grow with
// the length of the pipeline (ms/stage against baseline-ms/stage, target <= 1.2x).
func BenchmarkStages5000(b *testing.B) {
	const n, base = 5000, 100
	long, short := stagesPlan(b, n), stagesPlan(b, base)
	var spent, baseline time.Duration
	largest := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before, _ := runStages(b, short, base)
		took, events := runStages(b, long, n)
		after, _ := runStages(b, short, base)
		spent, baseline, largest = spent+took, baseline+before+after, max(largest, events)
	}
	b.ReportMetric(float64(spent.Milliseconds())/float64(b.N*n), "ms/stage")
	b.ReportMetric(float64(baseline.Milliseconds())/float64(2*b.N*base), "baseline-ms/stage")
	b.ReportMetric(float64(largest), "max-history-events")
}
