package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A rerun runs the template versions the first run expanded, even after the file changed
// (spec 19.4.2: the expanded pipeline is snapshotted into the execution).
func TestRerunKeepsTemplateVersions(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "templates", "say.yaml")
	if err := os.MkdirAll(filepath.Dir(tmpl), 0o755); err != nil {
		t.Fatal(err)
	}
	body := func(word string) []byte {
		return []byte(`template:
  name: say
  identifier: say
  versionLabel: v1
  type: Step
  spec:
    type: ShellScript
    spec:
      shell: Sh
      source: {type: Inline, spec: {script: WORD=` + word + `}}
      outputVariables: [{name: WORD, type: String, value: WORD}]
`)
	}
	if err := os.WriteFile(tmpl, body("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(`pipeline:
  name: rerun
  identifier: rerun_templates
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {name: say, identifier: say, template: {templateRef: account.say}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	exec, res := runPlan(t, env.starter, loadFor(t, p, load.Options{}).Plan)
	if got := outputVar(t, res, "s.say", "WORD"); got != "first" {
		t.Fatalf("first run WORD = %v", got)
	}
	if err := os.WriteFile(tmpl, body("second"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	again, err := env.starter.Rerun(ctx, exec.ID, workflows.Trigger{Type: "MANUAL", User: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := env.starter.Result(ctx, again.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := outputVar(t, res2, "s.say", "WORD"); got != "first" {
		t.Errorf("rerun WORD = %v, want the first run's template body", got)
	}
	if n := res2.Tree.Find("s.say"); n.Template == nil || n.Template.Version != "v1" {
		t.Errorf("rerun tree template %+v", n.Template)
	}
}
