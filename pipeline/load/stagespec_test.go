package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

func stagePipeline(typ, spec string) string {
	return "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: " + typ + "\n        spec:\n" + spec +
		"          execution:\n            steps:\n              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: \"true\"}}}}\n"
}

// Each stage type's spec is its own: a key of another stage type is an unknown key, ignored as
// the reference ignores it (its stage specs are open), at the key, naming the types that have it.
func TestStageSpecKeysOfAnotherType(t *testing.T) {
	for _, c := range []struct {
		typ, spec, key, owners string
	}{
		{"Custom", "          service: {serviceRef: web}\n", "service", "Deployment"},
		{"Custom", "          cloneCodebase: true\n", "cloneCodebase", "CI"},
		{"Approval", "          deploymentType: Kubernetes\n", "deploymentType", "Deployment"},
		{"Approval", "          infrastructure: {type: KubernetesDirect}\n", "infrastructure", "CI and Deployment"},
		{"Approval", "          environment: {environmentRef: dev}\n", "environment", "Custom and Deployment"},
	} {
		r := load.Bytes("p.yaml", []byte(stagePipeline(c.typ, c.spec)), load.Options{ForRun: true})
		unknown := codes(r.Diags, diag.Warning, diag.UnknownKey)
		if !r.OK() || len(unknown) != 1 || unknown[0].Pos.Line != 10 ||
			!strings.Contains(unknown[0].Message, `"`+c.key+`" in `+c.typ+" stage spec") || unknown[0].Hint != "`"+c.key+"` is a field of "+c.owners+" stages" {
			t.Errorf("%s stage with %s: want one unknown-key warning at line 10 naming %s:\n%s", c.typ, c.key, c.owners, r.Diags.Render(r.Sources))
		}
		if r.Plan != nil && len(r.Plan.Stages[0].Children) != 1 {
			t.Errorf("%s stage with %s: the ignored key changed the plan: %d steps", c.typ, c.key, len(r.Plan.Stages[0].Children))
		}
	}
	// --strict makes them errors, as every unknown key.
	r := load.Bytes("p.yaml", []byte(stagePipeline("Custom", "          service: {serviceRef: web}\n")), load.Options{Strict: true})
	if len(codes(r.Diags, diag.Error, diag.UnknownKey)) != 1 {
		t.Errorf("--strict: want an unknown-key error:\n%s", r.Diags.Render(r.Sources))
	}
}

// A Custom stage's environment is accepted and not acted on, which a warning says; with a
// provisioner, which would have to run, it is unsupported.
func TestCustomStageEnvironment(t *testing.T) {
	r := load.Bytes("p.yaml", []byte(stagePipeline("Custom", "          environment: {environmentRef: dev}\n")), load.Options{})
	if d := codes(r.Diags, diag.Warning, "ignored-field"); !r.OK() || len(d) != 1 || !strings.Contains(d[0].Message, "not acted on") {
		t.Errorf("want an ignored-field warning:\n%s", r.Diags.Render(r.Sources))
	}
	r = load.Bytes("p.yaml", []byte(stagePipeline("Custom", "          environment:\n            environmentRef: dev\n            provisioner: {steps: []}\n")), load.Options{})
	if len(codes(r.Diags, diag.Unsupported, "unsupported-field")) != 1 || len(codes(r.Diags, diag.Warning, "ignored-field")) != 0 {
		t.Errorf("want the provisioner unsupported, and no second verdict:\n%s", r.Diags.Render(r.Sources))
	}
}
