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
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// githubWithAPI is a Github connector whose API access reports commit statuses.
const githubWithAPI = "connector:\n  name: gh\n  identifier: gh\n  type: Github\n  spec:\n    url: https://github.com/acme/app.git\n    type: Repo\n" +
	"    authentication: {type: Http, spec: {type: UsernameToken, spec: {username: bot, tokenRef: gh_pat}}}\n    apiAccess: {type: Token, spec: {tokenRef: gh_api}}\n"

// A CI stage reports pending once its clone names the commit, then its outcome, in that
// order; a report the provider refuses is a note on the stage, not a failed build.
func TestCommitStatusPendingThenOutcome(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"cluster.yaml": "connector:\n  name: c\n  identifier: cluster\n  type: K8sCluster\n  spec: {credential: {type: InheritFromDelegate}}\n",
		"github.yaml":  githubWithAPI,
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
          infrastructure: {type: KubernetesDirect, spec: {connectorRef: cluster, namespace: ci}}
          execution:
            steps:
              - step: {type: Run, name: unit, identifier: unit, spec: {image: golang:1.26, shell: Sh, command: go test ./...}}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := load.File(filepath.Join(dir, "build.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	env.OnActivity(contract.PodStart, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(contract.PodStop, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(contract.ContainerStep, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.StepInput) (contract.StepResult, error) {
			if in.Type == "GitClone" {
				return contract.StepResult{Outputs: map[string]any{"commitSha": sha}}, nil
			}
			return contract.StepResult{}, nil
		})
	var mu sync.Mutex
	var reports []contract.CommitStatusInput
	env.OnActivity(contract.CommitStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.CommitStatusInput) error {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, in)
			if in.State == contract.CommitPending {
				return temporal.NewNonRetryableApplicationError("POST https://api.github.com/repos/acme/app/statuses/x: 403 Forbidden", "CommitStatus", nil)
			}
			return nil
		})
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: r.Plan, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL"},
		Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
	var res workflows.PipelineResult
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("status %s: a refused report must not fail the build", res.Status)
	}
	if len(reports) != 2 || reports[0].State != contract.CommitPending || reports[1].State != contract.CommitSuccess {
		t.Fatalf("reports %+v, want pending then success", reports)
	}
	for _, in := range reports {
		if in.SHA != sha || in.Context != "gantry/build/test" || in.Repo.RepoURL() != "https://github.com/acme/app.git" || in.Repo.Connector.API.TokenRef != "gh_api" {
			t.Errorf("report %+v", in)
		}
	}
	notes := strings.Join(res.Tree.Find("test").Notes, "\n")
	if !strings.Contains(notes, "pending commit status of 0123456789ab could not be reported: POST") || !strings.Contains(notes, "403") {
		t.Errorf("notes %q", notes)
	}
}
