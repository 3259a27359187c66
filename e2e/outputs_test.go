package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// bigOutputStep is a ShellScript step whose output variable v holds size bytes.
func bigOutputStep(id string, size int, ignore bool) string {
	fs := ""
	if ignore {
		fs = ", failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: Ignore}}}]"
	}
	return fmt.Sprintf(`{step: {type: ShellScript, name: %[1]s, identifier: %[1]s%[3]s, spec: {shell: Bash, source: {type: Inline, spec: {script: 'V=$(head -c %[2]d /dev/zero | tr "\0" a)'}}, outputVariables: [{name: v, type: String, value: V}]}}}`, id, size, fs)
}

// workflowTaskFailures counts the failed workflow tasks in a workflow's history.
func workflowTaskFailures(t *testing.T, id string) int {
	t.Helper()
	it := env.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
			n++
		}
	}
	return n
}

// Output variables are kept up to workflows.ExecutionOutputLimit per execution: a step whose
// outputs would take its stage over its share fails with the limit named, and no workflow task
// ever carries more than Temporal accepts (before, six fast-path steps of 400 KB each failed the
// stage's first workflow task on every attempt, and the run hung).
func TestOutputsOverTheLimitFailTheStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var lastID string
	finish := func(t *testing.T, id string) *workflows.PipelineResult {
		lastID = id
		res, err := env.starter.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		workflowIDs := []string{id}
		res.Tree.Walk(func(n *workflows.Node) {
			if n.Kind == "stage" && !slices.Contains(n.Notes, "copied from the resumed execution") {
				workflowIDs = append(workflowIDs, id+"/"+n.ID)
			}
		})
		for _, wf := range workflowIDs {
			if n := workflowTaskFailures(t, wf); n > 0 {
				t.Errorf("%s: %d failed workflow tasks", wf, n)
			}
		}
		return res
	}
	run := func(t *testing.T, id, stages string) *workflows.PipelineResult {
		src := fmt.Sprintf("pipeline:\n  name: %[1]s\n  identifier: %[1]s\n  stages:\n%[2]s", id, stages)
		exec, err := env.starter.Start(ctx, compile(t, id+".yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		return finish(t, exec.ID)
	}
	over := func(t *testing.T, res *workflows.PipelineResult, path string) {
		t.Helper()
		n := res.Tree.Find(path)
		if n == nil || n.Failure == nil || !strings.Contains(n.Failure.Message, fmt.Sprintf("bytes this stage may keep (%d for a whole execution", workflows.ExecutionOutputLimit)) ||
			n.Outputs != nil {
			t.Errorf("%s: %+v, want a failure naming the limit and no outputs kept", path, n)
		}
	}

	t.Run("steps of one stage", func(t *testing.T) {
		var steps []string
		for i := range 6 {
			steps = append(steps, bigOutputStep(fmt.Sprintf("a%d", i), 400_000, true))
		}
		res := run(t, "outputs_stage", "    - stage: {name: s, identifier: s, type: Custom, spec: {execution: {steps: ["+strings.Join(steps, ", ")+"]}}}\n")
		if res.Status != status.IgnoreFailed {
			t.Errorf("run ended %s, want IGNORE_FAILED", res.Status)
		}
		if n := res.Tree.Find("s.a0"); n == nil || n.Status != status.Succeeded || len(n.Outputs["outputVariables"].(map[string]any)["v"].(string)) != 400_000 {
			t.Errorf("s.a0: %v, want its 400,000-byte output kept", n)
		}
		for i := 1; i < 6; i++ {
			over(t, res, fmt.Sprintf("s.a%d", i))
		}
	})

	t.Run("stages of one execution", func(t *testing.T) {
		stage := func(id string) string {
			return fmt.Sprintf("{stage: {name: %[1]s, identifier: %[1]s, type: Custom, spec: {execution: {steps: [%[2]s]}}}}", id, bigOutputStep("a", 200_000, false))
		}
		res := run(t, "outputs_stages", "    - parallel: ["+stage("p0")+", "+stage("p1")+"]\n    - "+stage("s2")+"\n")
		if res.Status != status.Failed {
			t.Errorf("run ended %s, want FAILED", res.Status)
		}
		for _, p := range []string{"p0.a", "p1.a"} { // each half of the limit: both fit
			if n := res.Tree.Find(p); n == nil || n.Status != status.Succeeded {
				t.Errorf("%s: %v", p, n)
			}
		}
		over(t, res, "s2.a") // 400 KB kept before it: 200 KB more is over

		// A retry from s2 copies p0's and p1's outputs, which still count.
		retried, err := env.starter.Retry(ctx, lastID, "", workflows.Trigger{Type: "MANUAL"})
		if err != nil {
			t.Fatal(err)
		}
		res = finish(t, retried.ID)
		if n := res.Tree.Find("p0.a"); n == nil || n.Status != status.Succeeded || !strings.Contains(strings.Join(res.Tree.Find("p0").Notes, " "), "copied") {
			t.Errorf("retry: p0 %v, want copied", res.Tree.Find("p0"))
		}
		over(t, res, "s2.a")
	})
}

// TestRecordOutputLimitHistories records an execution whose stage refused a step's outputs
// over a lowered limit (changeOutputLimit), with -update-histories.
func TestRecordOutputLimitHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := "pipeline:\n  name: outputs_record\n  identifier: outputs_record\n  stages:\n    - stage: {name: s, identifier: s, type: Custom, spec: {execution: {steps: [" +
		bigOutputStep("a", 400, false) + ", " + bigOutputStep("b", 400, true) + "]}}}\n"
	exec, err := env.starter.Start(ctx, compile(t, "outputs.yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{OutputLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Tree.Find("s.b").Failure == nil {
		t.Fatalf("%v %v", res, err)
	}
	recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
}
