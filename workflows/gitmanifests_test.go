package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

const gitRollbackPipeline = `pipeline:
  name: git rollback
  identifier: git_rollback
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo <+manifests.web.commitId>"}}}}
            rollbackSteps:
              - step: {type: ShellScript, name: rb, identifier: rb, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
    - stage:
        name: verify
        identifier: verify
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: check, identifier: check, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: PipelineRollback}}
`

// A stage with a Git-stored manifest and a registry artifact fetches and resolves them once
// at its service phase and records the commit and the digest; a pipeline rollback runs the
// stage's rollback from that commit and digest, though the branch and tag have moved since.
func TestGitManifestsFetchedOnceAndPinnedForPipelineRollback(t *testing.T) {
	p := compile(t, "git_rollback.yaml", gitRollbackPipeline)
	store := &plan.GitStore{Type: "Github", Branch: "main", Paths: []string{"k8s"},
		Connector: plan.GitConnector{ID: "repo", Type: "Github", URL: "https://git.example.com/web.git", ConnectionType: "Repo"}}
	p.Stages[0].Deploy = &plan.Deployment{Type: "Kubernetes",
		Service: &plan.Service{ID: "web", Name: "web", Type: "Kubernetes", Manifests: []plan.Manifest{{ID: "web", Type: "K8sManifest", Store: store}},
			Artifact: &plan.Artifact{ID: "img", Type: "DockerRegistry", ImagePath: "team/web", Tag: "1.0",
				Connector: &plan.RegistryConnector{ID: "registry", URL: "https://registry.example.com"}}},
		Environment: &plan.Environment{ID: "dev", Name: "dev", Type: "PreProduction"},
		Infra:       &plan.Infrastructure{ID: "k", Name: "k", Namespace: "dev", Connector: plan.Connector{ID: "cluster"}}}

	var mu sync.Mutex
	var asked []string // the commit each fetch asked for ("" = the branch's head)
	heads := []string{"c1", "c2"}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
	env.OnActivity(contract.FetchManifests, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.FetchInput) (contract.Fetched, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, in.Store.Commit)
			commit := in.Store.Commit
			if commit == "" {
				commit, heads = heads[0], heads[1:]
			}
			return contract.Fetched{Commit: commit, Files: []plan.File{{Path: "k8s/cm.yaml", Text: "kind: ConfigMap\n"}}}, nil
		})
	var digests []string // the digest each resolution was pinned to
	env.OnActivity(contract.ResolveArtifact, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in contract.ResolveInput) (contract.Resolved, error) {
			mu.Lock()
			defer mu.Unlock()
			digests = append(digests, in.Artifact.Digest)
			d := in.Artifact.Digest
			if d == "" {
				d = "sha256:" + string(rune('a'+len(digests)))
			}
			return contract.Resolved{Tag: in.Artifact.Tag, Digest: d, Image: "registry.example.com/team/web:1.0@" + d}, nil
		})
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL"},
		Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
	var res workflows.PipelineResult
	if err := workflows.ResultFrom(env.GetWorkflowError(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Failed {
		t.Fatalf("status %s", res.Status)
	}
	if len(asked) != 2 || asked[0] != "" || asked[1] != "c1" {
		t.Errorf("fetches asked for %q, want the branch head, then c1 for the rollback", asked)
	}
	if len(digests) != 2 || digests[0] != "" || digests[1] != "sha256:b" {
		t.Errorf("resolutions pinned to %q, want none, then sha256:b for the rollback", digests)
	}
	for _, path := range []string{"deploy", "pipelineRollback.deploy"} {
		if n := res.Tree.Find(path); n == nil || n.Manifests["web"] != "c1" || n.Artifact != "sha256:b" {
			t.Errorf("%s fetched %v", path, n)
		}
	}
	if n := res.Tree.Find("pipelineRollback.deploy.rollbackSteps.rb"); n == nil || n.Status != status.Succeeded {
		t.Errorf("rollback step %v", n)
	}
}
