package workflows_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// A CI stage that names a runtime, on a build machine: its workspace is made before the first
// step, every container step runs there (MachineStep, with the workspace), a failed step fails
// the build, the workspace is removed all the same, and the commit status goes pending, then
// failure.
func TestBuildMachineStageWorkspaceAndStatuses(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"github.yaml": githubWithAPI,
		"build.yaml": `pipeline:
  name: build
  identifier: build
  properties:
    ci:
      codebase: {connectorRef: gh, build: {type: branch, spec: {branch: main}}}
  stages:
    - stage:
        name: test
        identifier: test
        type: CI
        spec:
          cloneCodebase: true
          runtime: {type: Cloud, spec: {}}
          platform: {os: Linux, arch: Amd64}
          execution:
            steps:
              - step: {type: Run, name: unit, identifier: unit, spec: {shell: Sh, command: go test ./...}}
              - step: {type: ShellScript, name: note, identifier: note, spec: {shell: Bash, source: {type: Inline, spec: {script: echo}}}}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := load.File(filepath.Join(dir, "build.yaml"), load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Machines: true}})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const ws = "/machines/gantry-test/work"
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	env.SetWorkerOptions(sdkworker.Options{EnableSessionWorker: true})
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	var mu sync.Mutex
	var calls []string
	record := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, what)
	}
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.PodInput) (contract.Workspace, error) {
		record("start " + in.Pod.Machine.OS + "/" + in.Pod.Machine.Arch)
		return contract.Workspace{Dir: ws, Machine: "builder/1"}, nil
	}, activity.RegisterOptions{Name: contract.WorkspaceStart})
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.PodInput) error {
		record("stop " + in.Workspace)
		return nil
	}, activity.RegisterOptions{Name: contract.WorkspaceStop})
	env.RegisterActivityWithOptions(func(_ context.Context, in contract.StepInput) (contract.StepResult, error) {
		record(in.Type + " in " + in.Pod.Pod.Workspace)
		if in.Type == "GitClone" {
			return contract.StepResult{Outputs: map[string]any{"commitSha": sha}}, nil
		}
		return contract.StepResult{}, contract.Fail(contract.Unknown, "build machine builder/1: the command exited with code 1")
	}, activity.RegisterOptions{Name: contract.MachineStep})
	var reports []string
	env.OnActivity(contract.CommitStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.CommitStatusInput) error {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, in.State)
			return nil
		})
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: r.Plan, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL"},
		Settings: workflows.Settings{HeartbeatTimeout: time.Minute, InfraAttempts: 1}})
	var res workflows.PipelineResult
	if err := workflows.ResultFrom(env.GetWorkflowError(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Failed || res.Tree.Find("test.unit").Status != status.Failed {
		t.Fatalf("pipeline %s, step unit %s: want the failed step to fail the build", res.Status, res.Tree.Find("test.unit").Status)
	}
	want := []string{"start Linux/Amd64", "GitClone in " + ws, "Run in " + ws, "stop " + ws}
	if strings.Join(calls, "; ") != strings.Join(want, "; ") {
		t.Errorf("activities %q, want %q", calls, want)
	}
	if len(reports) != 2 || reports[0] != contract.CommitPending || reports[1] != contract.CommitFailure {
		t.Errorf("commit statuses %v, want pending then failure", reports)
	}
	if notes := strings.Join(res.Tree.Find("test").Notes, "; "); !strings.Contains(notes, "on build machine builder/1, workspace "+ws) {
		t.Errorf("stage notes %q do not name the machine", notes)
	}
}
