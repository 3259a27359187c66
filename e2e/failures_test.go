package e2e

import (
	"context"
	_ "embed"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// runCase runs a conformance case on the embedded server, sending its interventions when
// their nodes reach the expected status.
func runCase(t *testing.T, c conformance.Case, set workflows.Settings) *workflows.PipelineResult {
	t.Helper()
	p := compile(t, c.ID+".yaml", []byte(c.YAML), load.Options{})
	// A bound on hangs, not a speed check: the cases run in parallel, under -race, and the
	// batched loop's 450 steps took over two minutes on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range c.Interventions {
		waitFor(t, ctx, env.starter, exec.ID, iv.Path, iv.When)
		if _, err := env.starter.Intervene(ctx, exec.ID, workflows.InterventionRequest{Path: iv.Path, Action: iv.Action, User: "tester"}); err != nil {
			t.Fatalf("intervene %s on %s: %v", iv.Action, iv.Path, err)
		}
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitFor polls the live tree until a node has a status; it returns the tree.
func waitFor(t testing.TB, ctx context.Context, s *starter.Starter, id, path string, want status.Status) *workflows.Node {
	t.Helper()
	for {
		tree, err := s.Tree(ctx, id)
		if err == nil {
			if n := tree.Find(path); n != nil && n.Status == want {
				return tree
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never reached %s (last error %v)", path, want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestConformanceConditionsAndFailures(t *testing.T) {
	for _, mode := range stepModes {
		t.Run(mode.name, func(t *testing.T) {
			cases := append(conformance.Conditions(), conformance.Failures(t.TempDir())...)
			cases = append(cases, conformance.Loops(t.TempDir())...)
			cases = append(cases, conformance.Barriers()...)
			for _, c := range cases {
				t.Run(c.ID, func(t *testing.T) {
					t.Parallel()
					conformance.Verify(t, runCase(t, c, mode.set).Tree, c)
				})
			}
		})
	}
}

// stepModes run a test with short steps on the fast path (local activities, the default) and
// with every step a regular activity.
var stepModes = []struct {
	name string
	set  workflows.Settings
}{{"fast-path", workflows.Settings{}}, {"regular", workflows.Settings{NoFastPath: true}}}

// While a node waits for intervention the stage and the pipeline show INTERVENTION_WAITING
// (live tree and search attribute), invalid decisions are refused with a reason, and a valid
// one resumes the pipeline.
func TestInterventionIsVisibleAndValidated(t *testing.T) {
	c := conformance.Failures(t.TempDir())[0] // placeholder replaced below
	c.YAML = `pipeline:
  name: waiting
  identifier: waiting
  stages:
    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  spec: {shell: Bash, source: {type: Inline, spec: {script: exit 1}}}
                  failureStrategies:
                    - onFailure: {errors: [AllErrors], action: {type: ManualIntervention, spec: {timeout: 1h, onTimeout: {action: {type: Abort}}}}}
`
	p := compile(t, "waiting.yaml", []byte(c.YAML), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tree := waitFor(t, ctx, env.starter, exec.ID, "s1.a", status.InterventionWaiting)
	if tree.Status != status.InterventionWaiting || tree.Find("s1").Status != status.InterventionWaiting {
		t.Errorf("live statuses: pipeline %s, stage %s", tree.Status, tree.Find("s1").Status)
	}
	for {
		list, err := env.starter.List(ctx, "waiting", 1)
		if err == nil && len(list) == 1 && list[0].Status == string(status.InterventionWaiting) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("GantryStatus never showed INTERVENTION_WAITING: %+v %v", list, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	bad := []workflows.InterventionRequest{
		{Path: "s1.a", Action: "RetryStepGroup", User: "tester"},
		{Path: "s1.a", Action: "StepGroupRollback", User: "tester"},
		{Path: "s1.nope", Action: "Ignore", User: "tester"},
		{Path: "s1.a", Action: "Ignore"},
	}
	for _, req := range bad {
		if _, err := env.starter.Intervene(ctx, exec.ID, req); err == nil {
			t.Errorf("%+v was accepted", req)
		} else {
			t.Logf("refused: %v", err)
		}
	}
	if _, err := env.starter.Intervene(ctx, exec.ID, workflows.InterventionRequest{Path: "s1.a", Action: "Ignore", User: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.IgnoreFailed {
		t.Fatalf("%+v %v", res, err)
	}
	if notes := strings.Join(res.Tree.Find("s1.a").Notes, "; "); !strings.Contains(notes, "Ignore chosen by tester") {
		t.Errorf("notes %q", notes)
	}
}

// Aborting a pipeline while a 10-minute sleep runs kills the process within 5 seconds, ends
// the step and stage ABORTED, starts nothing else and records who aborted.
func TestAbortKillsRunningStep(t *testing.T) {
	// A 1m step runs on the fast path, a 1h one as a regular activity.
	for _, timeout := range []string{"1m", "1h"} {
		t.Run(timeout, func(t *testing.T) { abortRunningStep(t, timeout) })
	}
}

func abortRunningStep(t *testing.T, timeout string) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	src := abortMePipeline + timeout + `, spec: {shell: Bash, source: {type: Inline, spec: {script: "sleep 600 & echo $! > ` + pidFile + `; wait"}}}}
              - step: {type: ShellScript, name: b, identifier: b, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
            rollbackSteps:
              - step: {type: ShellScript, name: r, identifier: r, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
    - stage:
        name: s2
        identifier: s2
        type: Custom
        when: {pipelineStatus: All}
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: c, identifier: c, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
`
	p := compile(t, "abort.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if ctx.Err() != nil {
			t.Fatal("the step never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A regular step hears the abort at its next heartbeat. A fast step hears it when the
	// stage's workflow task is extended, every 3.2 s, and only then is the new task with the
	// cancellation dispatched and run: on a loaded machine under -race that took 5.0 s, so
	// the bound is the extension interval plus room for that.
	bound := 5 * time.Second
	if timeout == "1m" {
		bound = 8 * time.Second
	}
	start := time.Now()
	if err := env.starter.Abort(ctx, exec.ID, "tester", "wrong build"); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		if time.Since(start) > bound {
			t.Fatalf("sleep %d still running %s after the abort", pid, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("process gone %s after the abort", time.Since(start).Round(time.Millisecond))
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "s1": status.Aborted, "s1.a": status.Aborted,
		"s1.b": status.NotStarted, "s1.rollbackSteps.r": status.NotStarted, "s2": status.NotStarted})
	if a := res.Tree.Abort; a == nil || a.By != "tester" || a.Reason != "wrong build" {
		t.Errorf("abort record %+v", a)
	}
	for _, id := range []string{exec.ID, exec.ID + "/s1"} {
		if st, _ := closedAs(t, id); st != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Errorf("aborted workflow %s closed %s, want Canceled", id, st)
		}
	}
	if err := env.starter.Abort(ctx, exec.ID, "tester", ""); err == nil {
		t.Error("aborting a finished execution succeeded")
	}
}

// Cancelling the workflow through Temporal (as the Temporal UI does) aborts it too.
func TestTemporalCancelAborts(t *testing.T) {
	src := cancelMePipeline
	p := compile(t, "cancel.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "s1.w", status.WaitStepRunning)
	if err := env.client.CancelWorkflow(ctx, exec.ID, ""); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "s1.w": status.Aborted})
	if res.Tree.Abort == nil || res.Tree.Abort.By != "Temporal cancellation request" {
		t.Errorf("abort record %+v", res.Tree.Abort)
	}
}

// Retry from a stage copies the earlier stages (statuses and outputs) and runs the rest.
func TestRetryFromStageAndRerun(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "fixed")
	src := retryMePipeline + marker + ` || exit 1; D=<+pipeline.stages.build.spec.execution.steps.v.output.outputVariables.v>/<+pipeline.resumedExecutionId>"}}, outputVariables: [{name: d, type: String, value: D}]}}
`
	p := compile(t, "retry.yaml", []byte(src), load.Options{})
	first, res := runPlan(t, env.starter, p)
	if res.Status != status.Failed {
		t.Fatalf("first run %s", res.Status)
	}
	built := res.Tree.Find("build.v").Outputs["outputVariables"].(map[string]any)["v"]
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	retried, err := env.starter.Retry(ctx, first.ID, "", workflows.Trigger{Type: "MANUAL"})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := env.starter.Result(ctx, retried.ID)
	if err != nil || res2.Status != status.Succeeded {
		t.Fatalf("retry: %+v %v", res2, err)
	}
	got := res2.Tree.Find("deploy.d").Outputs["outputVariables"].(map[string]any)["d"]
	if got != built.(string)+"/"+first.ID {
		t.Errorf("retry used %v, want the first run's build output %v and resumed id %s", got, built, first.ID)
	}
	if _, err := env.starter.Retry(ctx, retried.ID, "", workflows.Trigger{Type: "MANUAL"}); err == nil {
		t.Error("retrying a succeeded execution was accepted")
	}
	rerun, err := env.starter.Rerun(ctx, first.ID, workflows.Trigger{Type: "MANUAL"})
	if err != nil {
		t.Fatal(err)
	}
	res3, err := env.starter.Result(ctx, rerun.ID)
	if err != nil || res3.Status != status.Succeeded || rerun.SequenceID != retried.SequenceID+1 {
		t.Fatalf("rerun: %+v %v seq %d", res3, err, rerun.SequenceID)
	}
	if v := res3.Tree.Find("build.v").Outputs["outputVariables"].(map[string]any)["v"]; v == built {
		t.Logf("rerun built the same random value (unlikely but possible)")
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/abort_me.yaml
var abortMePipeline string

//go:embed testdata/pipelines/cancel_me.yaml
var cancelMePipeline string

//go:embed testdata/pipelines/retry_me.yaml
var retryMePipeline string
