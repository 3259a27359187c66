package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

func compile(t *testing.T, name, src string) *plan.Plan {
	t.Helper()
	r := load.Bytes(name, []byte(src), load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("%s does not load:\n%s", name, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// run executes a pipeline in the Temporal test suite with the real step activities.
func run(t *testing.T, p *plan.Plan) *workflows.PipelineResult {
	t.Helper()
	return runWith(t, p, workflows.Settings{})
}

// runWith is run with engine settings; the heartbeat timeout is always a minute.
func runWith(t *testing.T, p *plan.Plan, set workflows.Settings) *workflows.PipelineResult {
	t.Helper()
	return runPrepared(t, p, set, nil)
}

// runPrepared is runWith with the test environment set up further by prepare (mocked
// activities).
func runPrepared(t *testing.T, p *plan.Plan, set workflows.Settings, prepare func(*testsuite.TestWorkflowEnvironment)) *workflows.PipelineResult {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // steps really run: some sleep for seconds
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	if prepare != nil {
		prepare(env)
	}
	// The test environment does not see heartbeats of long steps in time: give them room.
	set.HeartbeatTimeout = time.Minute
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL"},
		Settings: set})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var res workflows.PipelineResult
	closeErr := env.GetWorkflowError()
	if closeErr == nil {
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
	} else if err := workflows.ResultFrom(closeErr, &res); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	checkClose(t, res.Status, closeErr)
	return &res
}

// checkClose checks that Temporal's own outcome of a pipeline workflow tells its status:
// Failed with the status as the error type, Canceled when aborted, Completed otherwise.
func checkClose(t *testing.T, st status.Status, closeErr error) {
	t.Helper()
	var app *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch st {
	case status.Failed, status.Errored, status.Expired, status.ApprovalRejected, status.FreezeFailed:
		if !errors.As(closeErr, &app) || app.Type() != string(st) || !strings.HasPrefix(app.Error(), "pipeline "+string(st)) {
			t.Errorf("pipeline %s closed with %v, want an application error of type %s", st, closeErr, st)
		}
	case status.Aborted:
		if !errors.As(closeErr, &canceled) {
			t.Errorf("pipeline %s closed with %v, want canceled", st, closeErr)
		}
	default:
		if closeErr != nil {
			t.Errorf("pipeline %s closed with %v, want completed", st, closeErr)
		}
	}
}

func TestConformanceProgression(t *testing.T) {
	for _, c := range conformance.Progression(1) {
		t.Run(c.ID, func(t *testing.T) {
			res := run(t, compile(t, c.ID+".yaml", c.YAML))
			conformance.Check(t, res.Tree, c.Want)
			if res.Status != c.Want[""] {
				t.Errorf("result status %s, want %s", res.Status, c.Want[""])
			}
		})
	}
}

// The cases run with short steps on the fast path (local activities) and as regular activities.
func TestConformanceConditionsAndFailures(t *testing.T) {
	for _, mode := range []struct {
		name string
		set  workflows.Settings
	}{{"fast-path", workflows.Settings{}}, {"regular", workflows.Settings{NoFastPath: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			cases := append(conformance.Conditions(), conformance.Failures(t.TempDir())...)
			cases = append(cases, conformance.Loops(t.TempDir())...)
			cases = append(cases, conformance.Barriers()...)
			for _, c := range cases {
				if len(c.Interventions) > 0 {
					continue // needs a user: end to end only (e2e)
				}
				t.Run(c.ID, func(t *testing.T) {
					res := runWith(t, compile(t, c.ID+".yaml", c.YAML), mode.set)
					conformance.Verify(t, res.Tree, c)
				})
			}
		})
	}
}

func TestOutputsFlowBetweenStepsAndStages(t *testing.T) {
	src := `pipeline:
  name: outputs
  identifier: outputs
  variables:
    - {name: base, type: String, value: "41"}
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        variables:
          - {name: flavour, type: String, value: "<+pipeline.variables.base>-x"}
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: version
                  identifier: version
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "V=$((BASE + 1)); F=<+stage.variables.flavour>"}}
                    environmentVariables:
                      - {name: BASE, type: String, value: <+pipeline.variables.base>}
                    outputVariables:
                      - {name: version, type: String, value: V}
                      - {name: flavour, type: String, value: F}
              - step:
                  type: ShellScript
                  name: echo
                  identifier: echo
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "OUT=<+execution.steps.version.output.outputVariables.version>/<+steps.version.spec.environmentVariables.BASE>"}}
                    outputVariables:
                      - {name: out, type: String, value: OUT}
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: use
                  identifier: use
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "R='<+pipeline.stages.build.spec.execution.steps.echo.output.outputVariables.out> <+pipeline.stages.build.spec.execution.steps.version.output.outputVariables.flavour> <+pipeline.sequenceId> <+pipeline.stages.build.status>'"}}
                    outputVariables:
                      - {name: r, type: String, value: R}
`
	res := run(t, compile(t, "outputs.yaml", src))
	if res.Status != status.Succeeded {
		t.Fatalf("status %s: %+v", res.Status, res.Tree.Find("build.version").Failure)
	}
	got := res.Tree.Find("deploy.use").Outputs["outputVariables"].(map[string]any)["r"]
	if got != "42/41 41-x 1 SUCCEEDED" {
		t.Errorf("deploy.use output = %q", got)
	}
}

func TestWaitStepIsADurableTimer(t *testing.T) {
	src := `pipeline:
  name: wait
  identifier: wait
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: Wait, name: soak, identifier: soak, spec: {duration: 2h}}
`
	res := run(t, compile(t, "wait.yaml", src))
	n := res.Tree.Find("s.soak")
	if n.Status != status.Succeeded || n.EndedAt.Sub(*n.StartedAt).Hours() < 2 {
		t.Errorf("wait: %s after %s", n.Status, n.EndedAt.Sub(*n.StartedAt))
	}
}

func TestStepTimeoutExpires(t *testing.T) {
	src := `pipeline:
  name: timeout
  identifier: timeout
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: slow, identifier: slow, timeout: 1s 1ms, spec: {shell: Bash, source: {type: Inline, spec: {script: "sleep 30"}}}}
`
	res := run(t, compile(t, "timeout.yaml", src))
	n := res.Tree.Find("s.slow")
	if n.Status != status.Expired || n.Failure == nil || n.Failure.Category != "Timeout" {
		t.Errorf("slow: %s %+v", n.Status, n.Failure)
	}
	if res.Status != status.Expired {
		t.Errorf("pipeline %s, want EXPIRED", res.Status)
	}
}

// Step nodes name the worker process that ran them, whether they succeeded or failed, on the
// fast path (1m) and as regular activities (10m).
func TestStepNodesNameTheirWorker(t *testing.T) {
	src := `pipeline:
  name: who
  identifier: who
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: Ignore}}
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: "true"}}}}
              - step: {type: ShellScript, name: b, identifier: b, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: "exit 3"}}}}
              - step: {type: ShellScript, name: c, identifier: c, timeout: 10m, spec: {shell: Sh, source: {type: Inline, spec: {script: "true"}}}}
              - step: {type: ShellScript, name: d, identifier: d, timeout: 10m, spec: {shell: Sh, source: {type: Inline, spec: {script: "exit 3"}}}}
`
	res := run(t, compile(t, "who.yaml", src))
	for _, path := range []string{"s.a", "s.b", "s.c", "s.d"} {
		n := res.Tree.Find(path)
		if n == nil || !strings.Contains(n.Worker, "/") {
			t.Errorf("%s: worker %q", path, n.Worker)
		}
	}
}

// A Queue key whose expression does not resolve fails the step, naming the expression and the
// missing path, rather than queueing on a lock called "null" that unrelated pipelines share.
func TestQueueKeyThatDoesNotResolveFailsTheStep(t *testing.T) {
	p := compile(t, "q.yaml", `pipeline:
  name: q
  identifier: q
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: Queue, name: q, identifier: q, timeout: 1m, spec: {key: "db-<+pipeline.variables.nothere>", scope: Pipeline}}
              - step: {type: ShellScript, name: after, identifier: after, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`)
	res := run(t, p)
	q := res.Tree.Find("s.q")
	if res.Status != status.Failed || q == nil || q.Status != status.Failed || q.Failure == nil ||
		!strings.Contains(q.Failure.Message, "Queue key db-<+pipeline.variables.nothere> does not resolve") ||
		!strings.Contains(q.Failure.Message, "pipeline.variables.nothere") {
		t.Fatalf("want the Queue step failed naming its key:\n%+v", q)
	}
	if a := res.Tree.Find("s.after"); a == nil || a.Status == status.Succeeded {
		t.Errorf("the step after the failed Queue step ran: %+v", a)
	}
}
