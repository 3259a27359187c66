package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// chainFiles writes a parent pipeline whose stage `team` chains pipeline `<id>_child`, passing
// the parent's variable as an input and reading the child's output back; the child sleeps
// for `wait` seconds first. It returns the parent's file.
func chainFiles(t *testing.T, id string, wait int) string {
	dir := t.TempDir()
	child := id + "_child"
	writeFile(t, filepath.Join(dir, "parent.yaml"), `pipeline:
  name: `+id+`
  identifier: `+id+`
  variables:
    - {name: version, type: String, value: "2.0.1"}
  stages:
    - stage:
        name: team
        identifier: team
        type: Pipeline
        spec:
          org: default
          project: default
          pipeline: `+child+`
          inputs:
            identifier: `+child+`
            variables:
              - {name: version, type: String, value: <+pipeline.variables.version>}
          outputs:
            - {name: deployed, value: <+pipeline.stages.deploy.spec.execution.steps.run.output.outputVariables.DEPLOYED>}
    - stage:
        name: after
        identifier: after
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: check, identifier: check, spec: {shell: Bash, source: {type: Inline, spec: {script: "test '<+pipeline.stages.team.output.deployed>' = v2.0.1"}}}}
`)
	writeFile(t, filepath.Join(dir, "child.yaml"), `pipeline:
  name: `+child+`
  identifier: `+child+`
  variables:
    - {name: version, type: String, value: <+input>}
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
                  timeout: 10m
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "sleep `+strconv.Itoa(wait)+`; DEPLOYED=v<+pipeline.variables.version>"}}
                    outputVariables:
                      - {name: DEPLOYED, type: String, value: DEPLOYED}
`)
	return filepath.Join(dir, "parent.yaml")
}

// Chained pipelines on the real server: the child runs as an execution of its own, linked
// both ways, and its output reaches the parent's next stage; an abort of the parent aborts
// the child, and an abort of the child aborts the parent.
func TestChainedPipelines(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := func(file string) string {
		t.Helper()
		exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "ann"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		return exec.ID
	}
	childOf := func(parent string) string {
		t.Helper()
		tree := waitFor(t, ctx, env.starter, parent, "team", status.Running)
		for ctx.Err() == nil {
			if n := tree.Find("team." + strings.Split(parent, "-")[0] + "_child"); n != nil && n.Chained != nil {
				return n.Chained.ExecutionID
			}
			time.Sleep(50 * time.Millisecond)
			tree, _ = env.starter.Tree(ctx, parent)
		}
		t.Fatalf("%s never named its chained execution", parent)
		return ""
	}

	t.Run("outputs", func(t *testing.T) {
		id := start(chainFiles(t, "chain_ok", 0))
		res, err := env.starter.Result(ctx, id)
		if err != nil || res.Status != status.Succeeded {
			t.Fatalf("parent %s: %v %v", id, res, err)
		}
		step := res.Tree.Find("team.chain_ok_child")
		if step == nil || step.Chained == nil || !strings.HasPrefix(step.Chained.ExecutionID, "chain_ok_child-") {
			t.Fatalf("the stage's step does not name its chained execution: %+v", step)
		}
		child, err := env.starter.Result(ctx, step.Chained.ExecutionID)
		if err != nil || child.Status != status.Succeeded {
			t.Fatalf("child %s: %v %v", step.Chained.ExecutionID, child, err)
		}
		if p := child.Tree.Parent; p == nil || p.ExecutionID != id || p.Stage != "team" {
			t.Errorf("the child does not name its parent: %+v", p)
		}
		if step.Outputs["deployed"] != "v2.0.1" {
			t.Errorf("outputs %v", step.Outputs)
		}
	})
	t.Run("under a limit of one", func(t *testing.T) {
		// The child runs in its parent's place: it would wait for ever for one of its own.
		exec, err := env.starter.Start(ctx, loadRun(t, chainFiles(t, "chain_limit", 0)), workflows.Trigger{Type: "MANUAL", User: "ann"}, workflows.Settings{MaxRunning: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Succeeded {
			t.Fatalf("parent %s under a server-wide limit of one: %v %v", exec.ID, res, err)
		}
	})
	t.Run("abort parent", func(t *testing.T) {
		id := start(chainFiles(t, "chain_pa", 300))
		child := childOf(id)
		waitFor(t, ctx, env.starter, child, "deploy.run", status.Running)
		if err := env.starter.Abort(ctx, id, "ann", "wrong version"); err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{id, child} {
			if res, err := env.starter.Result(ctx, e); err != nil || res.Status != status.Aborted {
				t.Errorf("%s: %v %v, want ABORTED", e, res, err)
			}
		}
	})
	t.Run("abort child", func(t *testing.T) {
		id := start(chainFiles(t, "chain_ca", 300))
		child := childOf(id)
		waitFor(t, ctx, env.starter, child, "deploy.run", status.Running)
		if err := env.starter.Abort(ctx, child, "ann", "stop the team deploy"); err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{child, id} {
			if res, err := env.starter.Result(ctx, e); err != nil || res.Status != status.Aborted {
				t.Errorf("%s: %v %v, want ABORTED", e, res, err)
			}
		}
	})
}
