package inputs_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
)

func TestParseRuntimeInput(t *testing.T) {
	in, err := inputs.Parse(`<+input>.default(gold).allowedValues(gold,silver)`)
	if err != nil || *in.Default != "gold" || strings.Join(in.AllowedValues, "|") != "gold|silver" {
		t.Fatalf("got %+v %v", in, err)
	}
	in, err = inputs.Parse(`<+input>.regex(^v[0-9]+(,[0-9])?$).executionInput()`)
	if err != nil || in.Regex != `^v[0-9]+(,[0-9])?$` || !in.ExecutionInput {
		t.Fatalf("got %+v %v", in, err)
	}
	in, err = inputs.Parse(`<+input>.allowedValues(\'a,b\',c)`)
	if err != nil || strings.Join(in.AllowedValues, "|") != "a,b|c" {
		t.Fatalf("quoted commas: got %+v %v", in, err)
	}
	for src, want := range map[string]string{
		`<+input>.default(bronze).allowedValues(gold,silver)`: `default "bronze" is not one of the allowed values`,
		`<+input>.default(a).default(b)`:                      ".default() appears twice",
		`<+input>.defualt(a)`:                                 "unknown runtime input method .defualt()",
		`<+input>.default(*x)`:                                "may not start with *",
		`<+input>.regex([a-)`:                                 "invalid regex",
		`<+input>.default(a`:                                  "has no closing )",
		`<+input> trailing`:                                   "unexpected",
		`<+input>.default(v1).regex(v[0-9]+x)`:                "does not match regex",
	} {
		if _, err := inputs.Parse(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}

// C66: allowedValues and regex validators (full match).
func TestC66Validators(t *testing.T) {
	tier, _ := inputs.Parse(`<+input>.default(gold).allowedValues(gold,silver)`)
	if tier.Check("bronze") == nil || tier.Check("silver") != nil {
		t.Error("allowedValues is exact membership")
	}
	re, _ := inputs.Parse(`<+input>.regex(v[0-9]+)`)
	for v, ok := range map[string]bool{"v12": true, "xv12": false, "v12x": false} {
		if (re.Check(v) == nil) != ok {
			t.Errorf("regex check %q: want ok=%v", v, ok)
		}
	}
}

const c67Pipeline = `
identifier: p
variables:
  - {name: a, type: String, value: <+input>}
  - {name: b, type: String, value: <+input>}
  - {name: c, type: String, value: fixed}
  - {name: tier, type: String, value: "<+input>.default(gold).allowedValues(gold,silver)"}
stages:
  - stage:
      identifier: s1
      type: Custom
      timeout: <+input>
      variables:
        - {name: r, type: String, required: true, value: <+input>}
`

func source(t *testing.T, name, y string) *inputs.Source {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(y), &n); err != nil {
		t.Fatal(err)
	}
	return inputs.SourceFromTree(name, name, n.Content[0])
}

func merge(t *testing.T, sources ...*inputs.Source) *inputs.Result {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(c67Pipeline), &root); err != nil {
		t.Fatal(err)
	}
	res, diags := inputs.Merge(pipeline.Source{File: "p.yaml"}, root.Content[0], sources)
	if diags.HasErrors() {
		t.Fatalf("errors: %v", diags.Err())
	}
	return res
}

func value(r *inputs.Result, fqn string) string {
	if n := r.Values[fqn]; n != nil {
		return n.Value
	}
	return "<open>"
}

// C67: layering input sets, run values on top, values for fixed fields ignored.
func TestC67Layering(t *testing.T) {
	s1 := source(t, "S1", "variables: [{name: a, value: '1'}, {name: b, value: '1'}, {name: c, value: '9'}]")
	s2 := source(t, "S2", "variables: [{name: b, value: '2'}]")
	run := source(t, "run", "variables: [{name: a, value: '3'}]")
	r := merge(t, s1, s2, run)
	if value(r, "pipeline.variables.a") != "3" || value(r, "pipeline.variables.b") != "2" {
		t.Errorf("a=%s b=%s", value(r, "pipeline.variables.a"), value(r, "pipeline.variables.b"))
	}
	if c := pipeline.Field(r.Root.Content[3].Content[2], "value"); c.Value != "fixed" {
		t.Errorf("fixed field changed to %q", c.Value)
	}
	if value(r, "pipeline.variables.tier") != "gold" {
		t.Errorf("default not applied: %s", value(r, "pipeline.variables.tier"))
	}
}

// C68: a later <+input> does not erase an earlier value.
func TestC68InputDoesNotErase(t *testing.T) {
	r := merge(t, source(t, "S1", "variables: [{name: a, value: '1'}]"), source(t, "S2", "variables: [{name: a, value: <+input>}]"))
	if value(r, "pipeline.variables.a") != "1" {
		t.Errorf("a=%s", value(r, "pipeline.variables.a"))
	}
}

func TestOpenInputsAndStageValues(t *testing.T) {
	r := merge(t, source(t, "S1", "stages: [{stage: {identifier: s1, type: Custom, timeout: 30m}}]"))
	if value(r, "pipeline.stages.s1.timeout") != "30m" {
		t.Errorf("stage timeout = %s", value(r, "pipeline.stages.s1.timeout"))
	}
	var open []string
	for _, o := range r.Open {
		open = append(open, o.FQN)
	}
	// a and b are optional variables (spec 9.7 Decision: empty string); r is required.
	if strings.Join(open, ",") != "pipeline.stages.s1.variables.r" {
		t.Errorf("open = %v", open)
	}
	if value(r, "pipeline.variables.a") != "" {
		t.Errorf("optional variable should default to empty, got %q", value(r, "pipeline.variables.a"))
	}
}

func TestIdentityMismatchIgnored(t *testing.T) {
	var root yaml.Node
	_ = yaml.Unmarshal([]byte(c67Pipeline), &root)
	_, diags := inputs.Merge(pipeline.Source{File: "p.yaml"}, root.Content[0], []*inputs.Source{
		source(t, "S1", "stages: [{stage: {identifier: s1, type: CI, timeout: 30m}}]")})
	if len(diags) != 1 || !strings.Contains(diags[0].Message, `has type "Custom" in the pipeline but "CI" here`) {
		t.Fatalf("got %v", diags)
	}
}

// selectManyFrom (a reference runtime-input method) accepts a comma-separated subset.
func TestSelectManyFrom(t *testing.T) {
	in, err := inputs.Parse("<+input>.selectManyFrom(eu,us,ap).default(eu,us)")
	if err != nil {
		t.Fatal(err)
	}
	for v, ok := range map[string]bool{"eu": true, "eu,ap": true, "us, ap": true, "eu,xx": false, "": false} {
		if err := in.Check(v); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", v, err, ok)
		}
	}
	if _, err := inputs.Parse("<+input>.selectManyFrom(eu,us).default(eu,xx)"); err == nil {
		t.Error("a default outside the values was accepted")
	}
}

// A --set value is read as YAML: one whose aliases multiply past the document limit is
// refused at the flag, before anything follows them.
func TestSetFlagAliasBombRefused(t *testing.T) {
	v := "[&a0 [x, x, x, x, x, x, x, x, x, x]"
	for i := 1; i <= 6; i++ {
		v += ", &a" + string(rune('0'+i)) + " [" + strings.TrimSuffix(strings.Repeat("*a"+string(rune('0'+i-1))+", ", 10), ", ") + "]"
	}
	v += "]"
	s, diags := inputs.FromSetFlags([]string{"pipeline.variables.list=" + v, "pipeline.variables.ok=[a, b]"})
	if len(diags) != 1 || diags[0].Code != "alias-expansion" || !strings.Contains(diags[0].Message, "--set pipeline.variables.list") {
		t.Fatalf("diagnostics %v", diags)
	}
	if _, ok := s.Values["pipeline.variables.list"]; ok {
		t.Error("the bomb was kept as a value")
	}
	if _, ok := s.Values["pipeline.variables.ok"]; !ok {
		t.Error("the other value was dropped")
	}
}
