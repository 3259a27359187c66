package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// loadFor loads a pipeline file for a run, templates found as the CLI finds them.
func loadFor(t *testing.T, path string, opts load.Options) *load.Result {
	t.Helper()
	opts.ForRun = true
	r, err := load.File(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Plan == nil {
		t.Fatalf("%s does not load:\n%s", path, r.Diags.Render(r.Sources))
	}
	return r
}

func outputVar(t *testing.T, res *workflows.PipelineResult, path, name string) any {
	t.Helper()
	n := res.Tree.Find(path)
	if n == nil {
		t.Fatalf("no node %s", path)
	}
	outs, _ := n.Outputs["outputVariables"].(map[string]any)
	return outs[name]
}

// The templates example runs on a real server: a stage template used twice, its nested step
// and step group templates, and a pipeline template.
func TestTemplateExamples(t *testing.T) {
	for _, file := range []string{"pipeline.yaml", "pipeline-template.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			r := loadFor(t, filepath.Join("..", "examples", "templates", file), load.Options{})
			exec, res := runPlan(t, env.starter, r.Plan)
			if res.Status != status.Succeeded {
				t.Fatalf("%s: %s", exec.ID, res.Status)
			}
			if file == "pipeline.yaml" {
				for stage, want := range map[string]string{"release_eu": "ok-eu", "release_us": "ok-us"} {
					if got := outputVar(t, res, stage+".smoke", "RESULT"); got != want {
						t.Errorf("%s.smoke RESULT = %v, want %s", stage, got, want)
					}
				}
				if res.Tree.Find("release_us.checks.health") == nil {
					t.Error("the step group template's steps did not run")
				}
			}
		})
	}
}

// C99: expressions inside a template resolve where the template lands: relative references at
// every use site, a hard-coded FQN only where its node exists (verify runs before deploy, so
// there it is null).
func TestC99ExpressionsInsideTemplates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("templates/rel.yaml", `template:
  name: rel
  identifier: rel
  versionLabel: v1
  type: Stage
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step:
              type: ShellScript
              name: a
              identifier: a
              spec:
                shell: Sh
                source: {type: Inline, spec: {script: VER=1.4}}
                outputVariables: [{name: VER, type: String, value: VER}]
          - step:
              type: ShellScript
              name: b
              identifier: b
              spec:
                shell: Sh
                source: {type: Inline, spec: {script: 'OUT="<+execution.steps.a.output.outputVariables.VER>"'}}
                outputVariables: [{name: OUT, type: String, value: OUT}]
          - step:
              type: ShellScript
              name: c
              identifier: c
              spec:
                shell: Sh
                source: {type: Inline, spec: {script: 'OUT="<+pipeline.stages.deploy.spec.execution.steps.a.output.outputVariables.VER>"'}}
                outputVariables: [{name: OUT, type: String, value: OUT}]
`)
	write("pipeline.yaml", `pipeline:
  name: c99
  identifier: c99
  stages:
    - stage:
        name: verify
        identifier: verify
        template: {templateRef: account.rel, versionLabel: v1}
    - stage:
        name: deploy
        identifier: deploy
        template: {templateRef: account.rel, versionLabel: v1}
`)
	r := loadFor(t, filepath.Join(dir, "pipeline.yaml"), load.Options{})
	exec, res := runPlan(t, env.starter, r.Plan)
	if res.Status != status.Succeeded {
		t.Fatalf("%s: %s", exec.ID, res.Status)
	}
	for path, want := range map[string]string{"deploy.b": "1.4", "verify.b": "1.4", "deploy.c": "1.4", "verify.c": "null"} {
		if got := outputVar(t, res, path, "OUT"); got != want {
			t.Errorf("%s OUT = %v, want %s", path, got, want)
		}
	}

	// Variant: a matrix in the template loops each use site; iterations take postfixes of the
	// use-site identifier, and the hard-coded FQN (the base identifier) resolves nowhere.
	src, _ := os.ReadFile(filepath.Join(dir, "templates/rel.yaml"))
	write("templates/rel.yaml", strings.Replace(string(src), "    type: Custom\n", "    type: Custom\n    strategy:\n      matrix:\n        target: [x, y]\n", 1))
	r = loadFor(t, filepath.Join(dir, "pipeline.yaml"), load.Options{})
	exec, res = runPlan(t, env.starter, r.Plan)
	if res.Status != status.Succeeded {
		t.Fatalf("%s: %s", exec.ID, res.Status)
	}
	for _, stage := range []string{"deploy_0", "deploy_1", "verify_0", "verify_1"} {
		if got := outputVar(t, res, stage+".b", "OUT"); got != "1.4" {
			t.Errorf("%s.b OUT = %v", stage, got)
		}
		if got := outputVar(t, res, stage+".c", "OUT"); got != "null" {
			t.Errorf("%s.c OUT = %v, want null", stage, got)
		}
	}
}
