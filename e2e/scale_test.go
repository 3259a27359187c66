package e2e

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Temporal's limits per workflow run.
const (
	maxHistoryEvents = 51200
	maxHistoryBytes  = 50 << 20
)

// historyStats returns a workflow's history length in events and (approximate) bytes.
func historyStats(t *testing.T, id string) (int, int) {
	t.Helper()
	it := env.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	n, size := 0, 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n++
		size += len(ev.String())
	}
	return n, size
}

func checkHistories(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		n, size := historyStats(t, id)
		t.Logf("%s: %d events, %d bytes", id, n, size)
		if n > maxHistoryEvents/2 || size > maxHistoryBytes/2 {
			t.Errorf("%s: %d events, %d bytes: too close to Temporal's limits", id, n, size)
		}
	}
}

func TestScaleMatrixOf5000Steps(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	vals := make([]string, 5000)
	for i := range vals {
		vals[i] = fmt.Sprint(i)
	}
	src := bigMatrixPipeline + strings.Join(vals, ", ") + `]}}
                  spec: {shell: Bash, source: {type: Inline, spec: {script: "V=<+matrix.n>"}}, outputVariables: [{name: v, type: String, value: V}]}
              - step: {type: ShellScript, name: last, identifier: last, spec: {shell: Bash, source: {type: Inline, spec: {script: "L=<+execution.steps.t_4999.output.outputVariables.v>"}}, outputVariables: [{name: l, type: String, value: L}]}}
`
	p := compile(t, "big.yaml", []byte(src), load.Options{})
	exec, res := runSucceeds(t, p, 10*time.Minute)
	if err := env.starter.Complete(context.Background(), exec.ID, res.Tree); err != nil {
		t.Fatal(err)
	}
	if n := len(res.Tree.Find("s.t").Children); n != 5000 {
		t.Errorf("%d iterations in the tree", n)
	}
	if got := res.Tree.Find("s.last").Outputs["outputVariables"].(map[string]any)["l"]; got != "4999" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/s", exec.ID+"/s/s.t/batch-0", exec.ID+"/s/s.t/batch-24")
}

func TestScalePipelineOf500Stages(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	var b strings.Builder
	b.WriteString("pipeline:\n  name: many\n  identifier: many_stages\n  stages:\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "    - {stage: {name: s%d, identifier: s%d, type: Custom, spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: 'V=%d'}}, outputVariables: [{name: v, type: String, value: V}]}}}]}}}}\n", i, i, i)
	}
	b.WriteString("    - {stage: {name: last, identifier: last, type: Custom, spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: 'L=<+pipeline.stages.s499.spec.execution.steps.a.output.outputVariables.v>'}}, outputVariables: [{name: l, type: String, value: L}]}}}]}}}}\n")
	p := compile(t, "many.yaml", []byte(b.String()), load.Options{})
	exec, res := runSucceeds(t, p, 10*time.Minute)
	if n := len(res.Tree.Children); n != 501 {
		t.Errorf("%d stages in the tree", n)
	}
	if got := res.Tree.Find("last.a").Outputs["outputVariables"].(map[string]any)["l"]; got != "499" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/last")
}

// A stage matrix of 3,000 iterations runs in stage batch workflows: no history comes near
// Temporal's limits, every iteration is in the tree, and later stages read iterations' outputs.
// It runs in `make stress`: about 3 minutes on 2 cores, more than 10 under the race detector.
// TestStageLoopInBatches covers the same code with small batches in `make test`.
func TestScaleStageMatrixOf3000(t *testing.T) {
	if os.Getenv("GANTRY_STRESS") == "" {
		t.Skip("set GANTRY_STRESS=1 (make stress)")
	}
	vals := make([]string, 3000)
	for i := range vals {
		vals[i] = fmt.Sprint(i)
	}
	src := `pipeline:
  name: stage matrix
  identifier: stage_matrix
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        strategy: {matrix: {n: [` + strings.Join(vals, ", ") + `]}}
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: "V=<+matrix.n>"}}, outputVariables: [{name: v, type: String, value: V}]}}
    - stage:
        name: last
        identifier: last
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: "L=<+pipeline.stages.s_2999.spec.execution.steps.a.output.outputVariables.v>"}}, outputVariables: [{name: l, type: String, value: L}]}}
`
	p := compile(t, "stage_matrix.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		res.Tree.Walk(func(n *workflows.Node) {
			if n.Failure != nil {
				t.Errorf("%s %s: %s", n.Path, n.Status, n.Failure.Message)
			}
		})
		t.Fatalf("status %s", res.Status)
	}
	if err := env.starter.Complete(context.Background(), exec.ID, res.Tree); err != nil {
		t.Fatal(err)
	}
	if n := len(res.Tree.Find("s").Children); n != 3000 {
		t.Errorf("%d iterations in the tree", n)
	}
	if got := res.Tree.Find("s_1234.a").Outputs["outputVariables"].(map[string]any)["v"]; got != "1234" {
		t.Errorf("s_1234.a output %v", got)
	}
	if got := res.Tree.Find("last.a").Outputs["outputVariables"].(map[string]any)["l"]; got != "2999" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/s/batch-0", exec.ID+"/s/batch-14")
	// Temporal warns above 512 KB per payload and refuses 2 MB: the pipeline's result leaves
	// the iterations' data to the batches.
	it := env.client.GetWorkflowHistory(context.Background(), exec.ID, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ev.String()); n > 512<<10 {
			t.Errorf("event %d (%s) of the pipeline is %d bytes", ev.EventId, ev.EventType, n)
		}
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/big_matrix.yaml
var bigMatrixPipeline string

// A stage of validate.MaxStageSteps steps, each exporting an output, runs in one stage workflow
// whose history stays under half of Temporal's limits, and its result (the tree of every step,
// with outputs of nearly the execution's limit) inside one payload: the limit is one Gantry can keep. About a
// minute on 2 cores, several under the race detector, so it runs in `make stress`.
func TestScaleStageOfMaxSteps(t *testing.T) {
	if os.Getenv("GANTRY_STRESS") == "" {
		t.Skip("set GANTRY_STRESS=1 (make stress)")
	}
	// Outputs of all the steps but the last take nearly the execution's whole limit.
	outputEach := workflows.ExecutionOutputLimit/validate.MaxStageSteps - 40
	var b strings.Builder
	b.WriteString("pipeline:\n  name: long\n  identifier: long_stage\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n")
	for i := 0; i < validate.MaxStageSteps-1; i++ {
		fmt.Fprintf(&b, "              - %s\n", bigOutputStep(fmt.Sprintf("a%d", i), outputEach, false))
	}
	b.WriteString("              - step: {type: ShellScript, name: last, identifier: last, spec: {shell: Bash, source: {type: Inline, spec: {script: 'L=<+execution.steps.a0.output.outputVariables.v>'}}, outputVariables: [{name: l, type: String, value: L}]}}\n")
	p := compile(t, "long.yaml", []byte(b.String()), load.Options{})
	exec, res := runSucceeds(t, p, 20*time.Minute)
	if n := len(res.Tree.Find("s").Children); n != validate.MaxStageSteps {
		t.Errorf("%d steps in the tree", n)
	}
	if got := res.Tree.Find("s.last").Outputs["outputVariables"].(map[string]any)["l"]; got != strings.Repeat("a", outputEach) {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/s")
	if size := childResultBytes(t, exec.ID); size == 0 || size > 7<<18 {
		t.Errorf("the stage's result takes %d bytes: over 1.75 MiB, too near one payload's 2 MiB", size)
	} else {
		t.Logf("the stage's result: %d bytes", size)
	}
}

// childResultBytes is the size of the largest child-workflow result in a workflow's history.
func childResultBytes(t *testing.T, id string) int {
	t.Helper()
	it := env.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	largest := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetChildWorkflowExecutionCompletedEventAttributes(); a != nil {
			n := 0
			for _, p := range a.GetResult().GetPayloads() {
				n += len(p.GetData())
			}
			largest = max(largest, n)
		}
	}
	return largest
}

// A pipeline of 20,000 steps (20 stages of validate.MaxStageSteps) finishes, every
// history under half of Temporal's limits. Minutes on 2 cores: `make stress`.
func TestScalePipelineOf20000Steps(t *testing.T) {
	if os.Getenv("GANTRY_STRESS") == "" {
		t.Skip("set GANTRY_STRESS=1 (make stress)")
	}
	const stages = 20
	var b strings.Builder
	b.WriteString("pipeline:\n  name: steps\n  identifier: many_steps\n  stages:\n")
	for s := range stages {
		fmt.Fprintf(&b, "    - stage:\n        name: s%[1]d\n        identifier: s%[1]d\n        type: Custom\n        spec:\n          execution:\n            steps:\n", s)
		for i := range validate.MaxStageSteps {
			fmt.Fprintf(&b, "              - step: {type: ShellScript, name: a%[1]d, identifier: a%[1]d, spec: {shell: Bash, source: {type: Inline, spec: {script: 'true'}}}}\n", i)
		}
	}
	p := compile(t, "steps.yaml", []byte(b.String()), load.Options{})
	began := time.Now()
	exec, res := runSucceeds(t, p, 30*time.Minute)
	t.Logf("%d steps in %s", stages*validate.MaxStageSteps, time.Since(began))
	ids := []string{exec.ID}
	for s := range stages {
		if n := len(res.Tree.Find(fmt.Sprintf("s%d", s)).Children); n != validate.MaxStageSteps {
			t.Errorf("s%d: %d steps in the tree", s, n)
		}
		ids = append(ids, fmt.Sprintf("%s/s%d", exec.ID, s))
	}
	checkHistories(t, ids...)
}
