package workflows_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

const chainParent = `pipeline:
  name: release
  identifier: release
  variables:
    - {name: version, type: String, value: "1.2.3"}
  stages:
    - stage:
        name: team
        identifier: team
        type: Pipeline
        spec:
          org: default
          project: demo
          pipeline: team_deploy
          inputs:
            identifier: team_deploy
            variables:
              - {name: version, type: String, value: <+pipeline.variables.version>}
              - {name: mode, type: String, value: MODE}
          outputs:
            - {name: deployed, value: <+pipeline.stages.deploy.spec.execution.steps.run.output.outputVariables.DEPLOYED>}
        FAILURE
    - stage:
        name: after
        identifier: after
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: "test '<+pipeline.stages.team.output.deployed>' = v1.2.3"}}}}
`

const chainChild = `pipeline:
  name: team deploy
  identifier: team_deploy
  variables:
    - {name: version, type: String, value: <+input>}
    - {name: mode, type: String, value: <+input>}
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: run
                  identifier: run
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "case <+pipeline.variables.mode> in fail) exit 3;; wait) sleep 600;; esac; DEPLOYED=v<+pipeline.variables.version>"}}
                    outputVariables:
                      - {name: DEPLOYED, type: String, value: DEPLOYED}
`

// chainPlan loads the parent pipeline beside its child, with the child's mode and the
// parent stage's failure strategies.
func chainPlan(t *testing.T, mode, failure string) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	parent := strings.ReplaceAll(strings.ReplaceAll(chainParent, "MODE", mode), "FAILURE", failure)
	for name, src := range map[string]string{"release.yaml": parent, "team.yaml": chainChild} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := load.File(filepath.Join(dir, "release.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// chainEnv is a test environment whose chained executions are numbered by a counter that
// records the keys asked for (the real activity asks the pipeline's sequence workflow).
type chainEnv struct {
	env  *testsuite.TestWorkflowEnvironment
	mu   sync.Mutex
	keys []string
}

func newChainEnv(t *testing.T) *chainEnv {
	var s testsuite.WorkflowTestSuite
	c := &chainEnv{env: s.NewTestWorkflowEnvironment()}
	c.env.SetTestTimeout(time.Minute)
	worker.Register(c.env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	c.env.RegisterActivityWithOptions(func(_ context.Context, req workflows.ChainNumberRequest) (int64, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.keys = append(c.keys, req.Pipeline+" "+req.Key)
		return int64(len(c.keys)), nil
	}, activity.RegisterOptions{Name: workflows.ChainNumberActivity})
	return c
}

func (c *chainEnv) run(t *testing.T, p *plan.Plan) *workflows.PipelineResult {
	t.Helper()
	c.env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 7,
		Trigger: workflows.Trigger{Type: "MANUAL", User: "alice"}, Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
	if !c.env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var res workflows.PipelineResult
	if err := c.env.GetWorkflowError(); err != nil {
		if workflows.ResultFrom(err, &res) != nil {
			t.Fatalf("workflow error: %v", err)
		}
	} else if err := c.env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return &res
}

func chainNode(t *testing.T, res *workflows.PipelineResult) *workflows.Node {
	t.Helper()
	var step *workflows.Node
	res.Tree.Walk(func(n *workflows.Node) {
		if n.Path == "team.team_deploy" {
			step = n
		}
	})
	if step == nil {
		t.Fatalf("no step for the chained pipeline in %+v", res.Tree)
	}
	return step
}

// A Pipeline stage runs its pipeline as a child execution of its own, with the parent's
// expressions in its inputs rendered; the child's outputs are the stage's outputs.
func TestChainedPipelinePassesInputsAndOutputs(t *testing.T) {
	c := newChainEnv(t)
	res := c.run(t, chainPlan(t, "ok", ""))
	if res.Status != status.Succeeded {
		t.Fatalf("status %s, want SUCCEEDED: %s", res.Status, res.Tree.Failure)
	}
	step := chainNode(t, res)
	if step.Chained == nil || step.Chained.ExecutionID != "team_deploy-1" || step.Chained.Pipeline != "team_deploy" {
		t.Errorf("step links %+v, want team_deploy-1", step.Chained)
	}
	if got := step.Outputs["deployed"]; got != "v1.2.3" {
		t.Errorf("output deployed = %v, want v1.2.3", got)
	}
	if len(c.keys) != 1 || !strings.HasPrefix(c.keys[0], "team_deploy chain/") {
		t.Errorf("numbers asked: %q", c.keys)
	}
	team, _ := res.Stages["team"].(map[string]any)
	if out, _ := team["output"].(map[string]any); out["deployed"] != "v1.2.3" {
		t.Errorf("stage data %v has no output deployed", team)
	}
}

// A chained execution that fails fails its stage, with its failure in the message; a Retry
// strategy on the stage starts a new chained execution, with a number of its own.
func TestChainedFailureFailsTheStageAndRetryRunsANewChild(t *testing.T) {
	c := newChainEnv(t)
	retry := "failureStrategies:\n          - onFailure: {errors: [AllErrors], action: {type: Retry, spec: {retryCount: 1, retryIntervals: [10s], onRetryFailure: {action: {type: MarkAsFailure}}}}}"
	res := c.run(t, chainPlan(t, "fail", retry))
	if res.Status != status.Failed {
		t.Fatalf("status %s, want FAILED", res.Status)
	}
	step := chainNode(t, res)
	if step.Status != status.Failed || step.Failure == nil || !strings.Contains(step.Failure.Message, "team_deploy-2") || !strings.Contains(step.Failure.Message, "deploy.run") {
		t.Errorf("step %s failure %+v, want the second child's failure naming its step", step.Status, step.Failure)
	}
	if len(c.keys) != 2 || c.keys[0] == c.keys[1] {
		t.Errorf("numbers asked: %q, want two keys", c.keys)
	}
	if step.Attempts != 2 {
		t.Errorf("%d attempts, want 2", step.Attempts)
	}
}

// An abort of the parent aborts the chained execution it waits for.
func TestAbortOfTheParentAbortsTheChild(t *testing.T) {
	c := newChainEnv(t)
	c.env.RegisterDelayedCallback(func() {
		c.env.UpdateWorkflow(workflows.UpdateAbort, "abort-1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("abort refused: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			workflows.AbortRequest{User: "alice", Reason: "wrong version"})
	}, 5*time.Second)
	res := c.run(t, chainPlan(t, "wait", ""))
	if res.Status != status.Aborted {
		t.Fatalf("status %s, want ABORTED", res.Status)
	}
	if step := chainNode(t, res); step.Status != status.Aborted {
		t.Errorf("chained step %s, want ABORTED", step.Status)
	}
}
