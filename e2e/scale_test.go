package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
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
	src := `pipeline:
  name: big
  identifier: big_matrix
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
                  strategy: {matrix: {n: [` + strings.Join(vals, ", ") + `]}}
                  spec: {shell: Bash, source: {type: Inline, spec: {script: "V=<+matrix.n>"}}, outputVariables: [{name: v, type: String, value: V}]}
              - step: {type: ShellScript, name: last, identifier: last, spec: {shell: Bash, source: {type: Inline, spec: {script: "L=<+execution.steps.t_4999.output.outputVariables.v>"}}, outputVariables: [{name: l, type: String, value: L}]}}
`
	p := compile(t, "big.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	if err := env.starter.Complete(ctx, exec.ID, res.Tree); err != nil {
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	if n := len(res.Tree.Children); n != 501 {
		t.Errorf("%d stages in the tree", n)
	}
	if got := res.Tree.Find("last.a").Outputs["outputVariables"].(map[string]any)["l"]; got != "499" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, exec.ID, exec.ID+"/last")
}
