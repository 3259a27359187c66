package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

// chainStage is a pipeline `id` whose one stage chains pipeline `child` with extra spec keys
// (indented for the spec).
func chainStage(id, child, spec string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  variables:
    - {name: v, type: String, value: "7"}
  stages:
    - stage:
        name: c
        identifier: c
        type: Pipeline
        spec:
          org: default
          project: demo
          pipeline: ` + child + `
` + spec
}

const chainChild = `pipeline:
  name: child
  identifier: child
  orgIdentifier: default
  projectIdentifier: demo
  variables:
    - {name: v, type: String, value: <+input>}
    - {name: region, type: String, value: "<+input>.allowedValues(eu,us)"}
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: r, identifier: r, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo <+pipeline.variables.v>"}}}}
`

const chainInputs = `          inputs:
            identifier: child
            variables:
              - {name: v, type: String, value: "<+pipeline.variables.v>-x"}
              - {name: region, type: String, value: eu}
          outputs:
            - {name: out, value: <+pipeline.variables.v>}
`

// A Pipeline stage compiles to one step that carries the child's plan, its inputs applied:
// literal values in place, the parent's expressions as placeholders bound when the stage
// starts; its outputs are kept for the child to read.
func TestChainCompilesTheChildPlan(t *testing.T) {
	r := loadIn(t, map[string]string{"pipeline.yaml": chainStage("p", "child", chainInputs), "child.yaml": chainChild}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	step := r.Plan.Stages[0].Children[0]
	ch := step.Chain
	if step.Type != "Pipeline" || step.ID != "child" || ch == nil || ch.Plan == nil || ch.Plan.Identifier != "child" {
		t.Fatalf("chain step %+v", step)
	}
	tok := plan.ChainPlaceholder(1)
	if ch.Inputs[tok] != "<+pipeline.variables.v>-x" || len(ch.Inputs) != 1 {
		t.Errorf("placeholders %v", ch.Inputs)
	}
	if got := ch.Plan.Variables; got[0].Value != tok || got[1].Value != "eu" {
		t.Errorf("child variables %+v", got)
	}
	if len(ch.Outputs) != 1 || ch.Outputs[0].Name != "out" {
		t.Errorf("outputs %+v", ch.Outputs)
	}
	bound, err := ch.Bind(map[string]string{tok: "7-x"})
	if err != nil || bound.Variables[0].Value != "7-x" || ch.Plan.Variables[0].Value != tok {
		t.Errorf("bound %+v (%v); the compiled plan must stay as it was", bound.Variables, err)
	}
	if chains := plan.Chains(r.Plan); len(chains) != 1 || chains[0] != ch {
		t.Errorf("plan.Chains = %v", chains)
	}
}

// What is wrong with a chain is said before the run, at the line that says it.
func TestChainErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		code  string
		text  string
	}{
		{"missing", map[string]string{"pipeline.yaml": chainStage("p", "nosuch", "")}, "missing-entity", "chains pipeline default/demo/nosuch, which is not found"},
		{"other project", map[string]string{"pipeline.yaml": chainStage("p", "child", chainInputs),
			"child.yaml": strings.Replace(chainChild, "projectIdentifier: demo", "projectIdentifier: other", 1)}, "missing-entity", "in another org or project"},
		{"self", map[string]string{"pipeline.yaml": chainStage("p", "p", "")}, "chain-cycle", "p → p"},
		{"cycle", map[string]string{"pipeline.yaml": chainStage("p", "q", ""), "q.yaml": chainStage("q", "p", "")}, "chain-cycle", "p → q → p"},
		{"deeper", map[string]string{"pipeline.yaml": chainStage("p", "q", ""), "q.yaml": chainStage("q", "child", chainInputs), "child.yaml": chainChild},
			"chain-depth", "a chained pipeline may not chain further"},
		{"bad input", map[string]string{"pipeline.yaml": chainStage("p", "child", strings.Replace(chainInputs, "value: eu", "value: asia", 1)), "child.yaml": chainChild},
			"", "asia"},
		{"input set missing", map[string]string{"pipeline.yaml": chainStage("p", "child", chainInputs+"          inputSetReferences: [nope]\n"), "child.yaml": chainChild},
			"missing-entity", "input set nope of pipeline child"},
		{"duplicate output", map[string]string{"pipeline.yaml": chainStage("p", "child", chainInputs+"            - {name: out, value: x}\n"), "child.yaml": chainChild},
			"duplicate-identifier", `output "out" of stage c`},
		{"inputs list", map[string]string{"pipeline.yaml": chainStage("p", "child", "          inputs: [a]\n"), "child.yaml": chainChild},
			"wrong-type", "must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := loadIn(t, c.files, "pipeline.yaml", load.Options{ForRun: true})
			var found bool
			for _, d := range r.Diags.Errors() {
				if (c.code == "" || d.Code == c.code) && strings.Contains(d.Message+" "+d.Hint, c.text) && d.Pos.Line > 0 {
					found = true
				}
			}
			if !found || r.Plan != nil {
				t.Errorf("want an error %s %q at a line, and no plan:\n%s", c.code, c.text, r.Diags.Render(r.Sources))
			}
		})
	}
	// A plain validate only warns that a run needs the missing pipeline.
	r := loadIn(t, map[string]string{"pipeline.yaml": chainStage("p", "nosuch", "")}, "pipeline.yaml", load.Options{})
	if r.Diags.HasErrors() || len(codesOf(r.Diags, diag.Warning)) != 1 {
		t.Errorf("validate of a missing chained pipeline:\n%s", r.Diags.Render(r.Sources))
	}
}

// inputSetReferences apply the child's input sets, found by identifier beside it, before the
// stage's own inputs.
func TestChainInputSetReferences(t *testing.T) {
	set := "inputSet:\n  name: eu\n  identifier: eu_set\n  orgIdentifier: default\n  projectIdentifier: demo\n  pipeline:\n    identifier: child\n    variables:\n      - {name: region, type: String, value: us}\n      - {name: v, type: String, value: from-set}\n"
	spec := "          inputSetReferences: [eu_set]\n          inputs:\n            identifier: child\n            variables:\n              - {name: v, type: String, value: mine}\n"
	r := loadIn(t, map[string]string{"pipeline.yaml": chainStage("p", "child", spec), "child.yaml": chainChild, "set.yaml": set}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	vars := r.Plan.Stages[0].Children[0].Chain.Plan.Variables
	if vars[0].Value != "mine" || vars[1].Value != "us" {
		t.Errorf("child variables %+v, want the stage's v over the set's, the set's region", vars)
	}
}
