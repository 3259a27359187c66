package templates_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
)

// project writes files (name → text) into a fresh folder and loads pipeline.yaml for a run.
func project(t *testing.T, files map[string]string, opts load.Options) *load.Result {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range opts.InputSets {
		opts.InputSets[i] = filepath.Join(dir, f)
	}
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func forRun() load.Options { return load.Options{ForRun: true} }

// hasCode reports whether a diagnostic with the code exists, and renders all for messages.
func hasCode(r *load.Result, code string) (bool, string) {
	for _, d := range r.Diags {
		if d.Code == code {
			return true, r.Diags.Render(r.Sources)
		}
	}
	return false, r.Diags.Render(r.Sources)
}

func wantCode(t *testing.T, r *load.Result, code string) {
	t.Helper()
	if ok, text := hasCode(r, code); !ok {
		t.Errorf("no %s diagnostic:\n%s", code, text)
	}
}

func wantOK(t *testing.T, r *load.Result) {
	t.Helper()
	if !r.OK() || r.Plan == nil {
		t.Fatalf("not runnable:\n%s", r.Diags.Render(r.Sources))
	}
}

// pipelineOf is a pipeline with one Custom stage holding steps (YAML list items, indented for
// the steps list).
func pipelineOf(steps string) string {
	return `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
` + steps
}

const echoT = `template:
  name: echo
  identifier: echo_t
  versionLabel: v1
  type: Step
  projectIdentifier: proj
  orgIdentifier: org1
  spec:
    type: ShellScript
    timeout: 1m
    spec:
      shell: Sh
      source:
        type: Inline
        spec:
          script: <+input>
`

const sayStep = `              - step:
                  identifier: say
                  name: say
                  template:
                    templateRef: echo_t
                    versionLabel: v1
                    templateInputs:
                      type: ShellScript
                      spec:
                        source:
                          type: Inline
                          spec:
                            script: echo hi
%s`

// step finds a plan node by its identifier path.
func step(p *plan.Plan, ids ...string) *plan.Node {
	var found *plan.Node
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if strings.Join(path, "/") == strings.Join(ids, "/") {
			found = n
		}
	})
	return found
}

// C90: a step template expands in place with the use site's identity; its fixed fields stay.
func TestC90StepTemplate(t *testing.T) {
	r := project(t, map[string]string{"templates/echo.yaml": echoT, "pipeline.yaml": pipelineOf(fmt.Sprintf(sayStep, ""))}, forRun())
	wantOK(t, r)
	n := step(r.Plan, "s", "say")
	if n == nil {
		t.Fatal("no step s/say in the plan")
	}
	if n.Timeout != "1m" || n.Type != "ShellScript" {
		t.Errorf("step: timeout %q type %q", n.Timeout, n.Type)
	}
	if n.Template == nil || n.Template.Ref != "echo_t" || n.Template.Version != "v1" {
		t.Errorf("template record %+v", n.Template)
	}
	if !strings.Contains(fmt.Sprint(n.Spec), "echo hi") {
		t.Errorf("spec %v lacks the script", n.Spec)
	}
	if step(r.Plan, "s", "echo_t") != nil {
		t.Error("a node named after the template exists")
	}
}

// C91: fixed fields cannot be given; identity keys must agree.
func TestC91FixedFieldsStayFixed(t *testing.T) {
	r := project(t, map[string]string{"templates/echo.yaml": echoT,
		"pipeline.yaml": pipelineOf(fmt.Sprintf(sayStep, "                      timeout: 5m\n"))}, forRun())
	wantCode(t, r, "template-input-not-runtime")
	if ok, text := hasCode(r, "template-input-not-runtime"); ok && !strings.Contains(text, "templateInputs.timeout") {
		t.Errorf("the message does not name templateInputs.timeout:\n%s", text)
	}
	r = project(t, map[string]string{"templates/echo.yaml": echoT,
		"pipeline.yaml": strings.Replace(pipelineOf(fmt.Sprintf(sayStep, "")), "type: ShellScript", "type: Http", 1)}, forRun())
	wantCode(t, r, "template-input-identity-mismatch")
}

const regionStage = `template:
  name: st
  identifier: st
  versionLabel: v1
  type: Stage
  orgIdentifier: org1
  projectIdentifier: proj
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Sh, source: {type: Inline, spec: {script: echo <+stage.variables.region>}}}}
    variables:
      - name: region
        type: String
        value: <+input>.allowedValues(eu,us)
`

const euStage = `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: deploy eu
        identifier: deploy_eu
        template:
          templateRef: st
          versionLabel: v1
`

// C92: an unfilled template input is a pipeline input at its expanded FQN, with the template's
// validators.
func TestC92OpenInputBecomesPipelineInput(t *testing.T) {
	files := map[string]string{"templates/st.yaml": regionStage, "pipeline.yaml": euStage}
	r := project(t, files, forRun())
	wantCode(t, r, "missing-input")
	const fqn = "pipeline.stages.deploy_eu.variables.region"
	r = project(t, files, load.Options{ForRun: true, Sets: []string{fqn + "=eu"}})
	wantOK(t, r)
	if v := r.Values[fqn]; v != "eu" {
		t.Errorf("%s = %v", fqn, v)
	}
	r = project(t, files, load.Options{ForRun: true, Sets: []string{fqn + "=ap"}})
	if r.OK() {
		t.Error("a value outside the template's allowedValues was accepted")
	}
	// The reference's form, through the use site's templateInputs, in an input set.
	files["inputset.yaml"] = `inputSet:
  name: eu
  identifier: eu
  pipeline:
    identifier: p
    stages:
      - stage:
          identifier: deploy_eu
          template:
            templateInputs:
              variables:
                - name: region
                  type: String
                  value: eu
`
	r = project(t, files, load.Options{ForRun: true, InputSets: []string{"inputset.yaml"}})
	wantOK(t, r)
	if v := r.Values[fqn]; v != "eu" {
		t.Errorf("through templateInputs: %s = %v", fqn, v)
	}
}

func version(label string, stable bool) string {
	tags := ""
	if stable {
		tags = "  tags:\n    gantry.stable: \"true\"\n"
	}
	return fmt.Sprintf(`template:
  name: deploy
  identifier: deploy_t
  versionLabel: %s
  type: Step
  orgIdentifier: org1
  projectIdentifier: proj
%s  spec:
    type: ShellScript
    spec: {shell: Sh, source: {type: Inline, spec: {script: echo %s}}}
`, label, tags, label)
}

const deployLink = `              - step:
                  identifier: d
                  name: d
                  template:
                    templateRef: deploy_t
%s`

// C93: without a versionLabel the stable version is used, else the only one.
func TestC93StableVersion(t *testing.T) {
	r := project(t, map[string]string{"templates/v1.yaml": version("v1", false), "templates/v2.yaml": version("v2", true),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, ""))}, forRun())
	wantOK(t, r)
	if n := step(r.Plan, "s", "d"); n.Template == nil || n.Template.Version != "v2" {
		t.Errorf("stable link expanded %+v", n.Template)
	}
	r = project(t, map[string]string{"templates/v1.yaml": version("v1", false), "templates/v2.yaml": version("v2", true),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, "                    versionLabel: v1\n"))}, forRun())
	wantOK(t, r)
	if n := step(r.Plan, "s", "d"); n.Template.Version != "v1" {
		t.Errorf("v1 link expanded %+v", n.Template)
	}
	r = project(t, map[string]string{"templates/v1.yaml": version("v1", false), "templates/v2.yaml": version("v2", false),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, ""))}, forRun())
	wantCode(t, r, "no-stable-version")
	r = project(t, map[string]string{"templates/v2.yaml": version("v2", false), "pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, ""))}, forRun())
	wantOK(t, r)
	r = project(t, map[string]string{"templates/v1.yaml": version("v1", true), "templates/v2.yaml": version("v2", true),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, "                    versionLabel: v1\n"))}, forRun())
	wantCode(t, r, "duplicate-stable")
	// Two files defining one version differently: an error where a pipeline links it, naming
	// both files; a warning while no pipeline links that version; two copies of one body are no
	// conflict.
	other := strings.Replace(version("v1", false), "echo v1", "echo other", 1)
	r = project(t, map[string]string{"templates/a.yaml": version("v1", false), "templates/b.yaml": other,
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, "                    versionLabel: v1\n"))}, forRun())
	if d := codesOf(r, diag.Error, "duplicate-template"); len(d) != 1 || !strings.Contains(d[0].Message, "a.yaml") || !strings.Contains(d[0].Message, "b.yaml") || r.Plan != nil {
		t.Errorf("a linked template defined twice: want one error naming both files:\n%s", r.Diags.Render(r.Sources))
	}
	r = project(t, map[string]string{"templates/a.yaml": version("v1", false), "templates/b.yaml": other, "templates/c.yaml": version("v2", false),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, "                    versionLabel: v2\n"))}, forRun())
	wantOK(t, r)
	if d := codesOf(r, diag.Warning, "duplicate-template"); len(d) != 1 {
		t.Errorf("a template defined twice and not linked: want a warning:\n%s", r.Diags.Render(r.Sources))
	}
	r = project(t, map[string]string{"templates/a.yaml": version("v1", false), "templates/b.yaml": "# a copy\n" + version("v1", false),
		"pipeline.yaml": pipelineOf(fmt.Sprintf(deployLink, "                    versionLabel: v1\n"))}, forRun())
	wantOK(t, r)
	if ok, text := hasCode(r, "duplicate-template"); ok {
		t.Errorf("two copies of one template reported:\n%s", text)
	}
}

// codesOf returns the diagnostics of a severity and code.
func codesOf(r *load.Result, sev diag.Severity, code string) diag.List {
	var out diag.List
	for _, d := range r.Diags {
		if d.Severity == sev && d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

const smokeAccount = `template:
  name: smoke
  identifier: smoke
  versionLabel: v1
  type: Step
  spec:
    type: ShellScript
    spec: {shell: Sh, source: {type: Inline, spec: {script: echo smoke}}}
`

// C94: scope prefixes have no fallback; templates link only their own scope or above.
func TestC94ScopePrefixes(t *testing.T) {
	link := func(ref string) string {
		return pipelineOf("              - step:\n                  identifier: x\n                  name: x\n                  template:\n                    templateRef: " + ref + "\n")
	}
	wantOK(t, project(t, map[string]string{"templates/smoke.yaml": smokeAccount, "pipeline.yaml": link("account.smoke")}, forRun()))
	wantCode(t, project(t, map[string]string{"templates/smoke.yaml": smokeAccount, "pipeline.yaml": link("smoke")}, forRun()), "missing-template")
	group := `template:
  name: g
  identifier: g
  versionLabel: v1
  type: StepGroup
  spec:
    stageType: Custom
    steps:
      - step:
          identifier: h
          name: h
          template:
            templateRef: org.helper
`
	helper := strings.NewReplacer("identifier: smoke", "identifier: helper", "name: smoke", "name: helper").Replace(smokeAccount)
	helper = strings.Replace(helper, "  type: Step\n", "  type: Step\n  orgIdentifier: org1\n", 1)
	r := project(t, map[string]string{"templates/g.yaml": group, "templates/helper.yaml": helper,
		"pipeline.yaml": pipelineOf("              - stepGroup:\n                  identifier: grp\n                  name: grp\n                  template:\n                    templateRef: account.g\n")}, forRun())
	wantCode(t, r, "template-scope-violation")
}

// C95: kinds stand only where they belong; step group templates match the stage type.
func TestC95KindAndStageTypeMismatch(t *testing.T) {
	stageLink := func(ref string) string {
		return "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        template:\n          templateRef: " + ref + "\n"
	}
	wantCode(t, project(t, map[string]string{"templates/smoke.yaml": smokeAccount, "pipeline.yaml": stageLink("account.smoke")}, forRun()), "template-kind-mismatch")
	pipeT := "template:\n  name: pt\n  identifier: pt\n  versionLabel: v1\n  type: Pipeline\n  spec:\n    stages: []\n"
	wantCode(t, project(t, map[string]string{"templates/pt.yaml": pipeT, "pipeline.yaml": stageLink("account.pt")}, forRun()), "template-kind-mismatch")
	group := "template:\n  name: g\n  identifier: g\n  versionLabel: v1\n  type: StepGroup\n  spec:\n    stageType: Deployment\n    steps:\n      - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}}\n"
	wantCode(t, project(t, map[string]string{"templates/g.yaml": group,
		"pipeline.yaml": pipelineOf("              - stepGroup:\n                  identifier: grp\n                  name: grp\n                  template:\n                    templateRef: account.g\n")}, forRun()), "stage-type-mismatch")
}

// C96: a stage template's nested step template takes its input from the outer use site.
func TestC96NestedTemplates(t *testing.T) {
	outer := `template:
  name: outer
  identifier: outer
  versionLabel: v1
  type: Stage
  orgIdentifier: org1
  projectIdentifier: proj
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step:
              identifier: probe
              name: probe
              template:
                templateRef: echo_t
                versionLabel: v1
                templateInputs:
                  type: ShellScript
                  spec:
                    source:
                      type: Inline
                      spec:
                        script: <+input>
`
	p := `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: s eu
        identifier: s_eu
        template:
          templateRef: outer
          versionLabel: v1
          templateInputs:
            type: Custom
            spec:
              execution:
                steps:
                  - step:
                      identifier: probe
                      template:
                        templateInputs:
                          spec:
                            source:
                              spec:
                                script: echo eu
`
	r := project(t, map[string]string{"templates/echo.yaml": echoT, "templates/outer.yaml": outer, "pipeline.yaml": p}, forRun())
	wantOK(t, r)
	n := step(r.Plan, "s_eu", "probe")
	if n == nil || !strings.Contains(fmt.Sprint(n.Spec), "echo eu") {
		t.Fatalf("probe: %+v", n)
	}
	if n.Template == nil || n.Template.Ref != "echo_t" {
		t.Errorf("nested template record %+v", n.Template)
	}
	if s := step(r.Plan, "s_eu"); s.Template == nil || s.Template.Ref != "outer" {
		t.Errorf("stage template record %+v", s.Template)
	}
}

// chain is n step group templates g1..gn, each linking the next (the last holds a step).
func chain(n int, cycle bool) map[string]string {
	files := map[string]string{}
	for i := 1; i <= n; i++ {
		inner := fmt.Sprintf("      - stepGroup:\n          identifier: g%d\n          name: g%d\n          template:\n            templateRef: account.g%d\n            versionLabel: v1\n", i+1, i+1, i+1)
		if i == n {
			inner = "      - step: {type: ShellScript, name: leaf, identifier: leaf, spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}}\n"
			if cycle {
				inner = "      - stepGroup:\n          identifier: back\n          name: back\n          template:\n            templateRef: account.g1\n            versionLabel: v1\n"
			}
		}
		files[fmt.Sprintf("templates/g%d.yaml", i)] = fmt.Sprintf("template:\n  name: g%d\n  identifier: g%d\n  versionLabel: v1\n  type: StepGroup\n  spec:\n    stageType: Custom\n    steps:\n%s", i, i, inner)
	}
	files["pipeline.yaml"] = pipelineOf("              - stepGroup:\n                  identifier: top\n                  name: top\n                  template:\n                    templateRef: account.g1\n                    versionLabel: v1\n")
	return files
}

// C97: cycles are reported with their path; nine nested template levels are within the
// template limit, ten are not. (Nine nested step groups also break the step-group nesting
// limit of spec 1.x, reported on its own; the template depth check is what this case is about.)
func TestC97CycleAndDepth(t *testing.T) {
	r := project(t, chain(2, true), forRun())
	if ok, text := hasCode(r, "template-cycle"); !ok || !strings.Contains(text, "g1@v1 → g2@v1 → g1@v1") {
		t.Errorf("cycle not reported with its path:\n%s", text)
	}
	if ok, text := hasCode(project(t, chain(9, false), forRun()), "template-depth-exceeded"); ok {
		t.Errorf("nine levels reported as too deep:\n%s", text)
	}
	wantOK(t, project(t, chain(4, false), forRun()))
	wantCode(t, project(t, chain(10, false), forRun()), "template-depth-exceeded")
}

// C98: keys beside `template` are refused; allowed overrides apply, others warn.
func TestC98UseSiteKeysAndOverrides(t *testing.T) {
	tmpl := `template:
  name: t
  identifier: t
  versionLabel: v1
  type: Step
  allowedOverrides: [ConditionalExecution]
  spec:
    type: ShellScript
    when: {stageStatus: Success}
    spec: {shell: Sh, source: {type: Inline, spec: {script: echo linked}}}
`
	link := func(extra string) string {
		return pipelineOf("              - step: {type: ShellScript, name: fail, identifier: fail, spec: {shell: Sh, source: {type: Inline, spec: {script: exit 1}}}}\n" +
			"              - step:\n                  identifier: linked\n                  name: linked\n" + extra +
			"                  template:\n                    templateRef: account.t\n                    versionLabel: v1\n")
	}
	r := project(t, map[string]string{"templates/t.yaml": tmpl, "pipeline.yaml": link("                  when: {stageStatus: All}\n")}, forRun())
	wantCode(t, r, "unsupported-use-site-key")
	r = project(t, map[string]string{"templates/t.yaml": tmpl, "pipeline.yaml": strings.Replace(link(""), "versionLabel: v1\n",
		"versionLabel: v1\n                    templateOverrides:\n                      when: {stageStatus: All}\n", 1)}, forRun())
	wantOK(t, r)
	if n := step(r.Plan, "s", "linked"); !strings.Contains(n.When, "All") && !strings.Contains(n.When, "true") && n.When != "" {
		t.Logf("when: %q", n.When)
	}
	if n := step(r.Plan, "s", "linked"); strings.Contains(n.When, "Success") {
		t.Errorf("the override did not replace the template's when: %q", n.When)
	}
	r = project(t, map[string]string{"templates/t.yaml": tmpl, "pipeline.yaml": strings.Replace(link(""), "versionLabel: v1\n",
		"versionLabel: v1\n                    templateOverrides:\n                      failureStrategies:\n                        - onFailure: {errors: [AllErrors], action: {type: Ignore}}\n", 1)}, forRun())
	wantOK(t, r)
	wantCode(t, r, "override-not-allowed")
}

// C99 (load part): a looped template stage takes postfixes from the use-site identifier.
func TestC99LoopedTemplateUsesUseSiteIdentifier(t *testing.T) {
	tmpl := `template:
  name: rel
  identifier: rel
  versionLabel: v1
  type: Stage
  spec:
    type: Custom
    strategy:
      matrix:
        target: [x, y]
    spec:
      execution:
        steps:
          - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}}
`
	p := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: deploy\n        identifier: deploy\n        template:\n          templateRef: account.rel\n"
	r := project(t, map[string]string{"templates/rel.yaml": tmpl, "pipeline.yaml": p}, forRun())
	wantOK(t, r)
	if s := step(r.Plan, "deploy"); s == nil || s.Strategy == nil {
		t.Fatalf("stage deploy has no strategy: %+v", s)
	}
}

// A problem inside a template is reported in the template file, with the use site.
func TestErrorsPointIntoTheTemplate(t *testing.T) {
	bad := strings.Replace(echoT, "    timeout: 1m\n", "    timeout: 1 minute\n", 1)
	r := project(t, map[string]string{"templates/echo.yaml": bad, "pipeline.yaml": pipelineOf(fmt.Sprintf(sayStep, ""))}, forRun())
	var found *diag.Diagnostic
	for i, d := range r.Diags {
		if d.Code == "duration" {
			found = &r.Diags[i]
		}
	}
	if found == nil {
		t.Fatalf("no duration error:\n%s", r.Diags.Render(r.Sources))
	}
	if !strings.HasSuffix(found.Pos.File, filepath.Join("templates", "echo.yaml")) || found.Pos.Line != 10 ||
		!strings.Contains(found.Pos.Via, "template echo_t@v1 used at ") || !strings.Contains(found.Pos.Via, "pipeline.yaml:16:") {
		t.Errorf("position %+v", found.Pos)
	}
	if text := r.Diags.Render(r.Sources); !strings.Contains(text, "timeout: 1 minute") {
		t.Errorf("no snippet from the template file:\n%s", text)
	}
}

// Template files validate on their own, nested links included.
func TestTemplateFileValidatesAlone(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r, _ := load.File(write("echo.yaml", echoT), load.Options{})
	if !r.OK() || r.File.Template == nil {
		t.Errorf("echo template:\n%s", r.Diags.Render(r.Sources))
	}
	r, _ = load.File(write("bad.yaml", strings.Replace(echoT, "type: ShellScript", "type: ShellScrip", 1)), load.Options{})
	if r.OK() {
		t.Error("a step template with an unknown step type validated")
	}
	r, _ = load.File(write("as.yaml", "template:\n  name: a\n  identifier: a\n  versionLabel: v1\n  type: ArtifactSource\n  spec: {}\n"), load.Options{})
	if ok, text := hasCode(r, "unsupported-template-kind"); !ok {
		t.Errorf("ArtifactSource template:\n%s", text)
	}
	// A deployment template is checked as one (docs/provisioning.md): an empty one is broken.
	r, _ = load.File(write("cd.yaml", "template:\n  name: c\n  identifier: c\n  versionLabel: v1\n  type: CustomDeployment\n  spec: {}\n"), load.Options{})
	if ok, text := hasCode(r, "missing-field"); !ok || r.OK() {
		t.Errorf("an empty CustomDeployment template:\n%s", text)
	}
}

// On-run policies see the expanded pipeline with each link's `template` object kept beside the
// expanded node, so they can forbid a template version (spec 19.8).
func TestPoliciesSeeTemplateLinks(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "no_v1.rego"), []byte(`package gantry.no_echo_v1
import rego.v1
deny contains sprintf("step %s links echo_t v1", [s.identifier]) if {
	some s in input.pipeline.stages[_].stage.spec.execution.steps[_]
	s.template.templateRef == "echo_t"
	s.template.versionLabel == "v1"
	s.type == "ShellScript"
}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "sets.yaml"), []byte("policySets:\n  - {identifier: templates, severity: error, action: onrun, global: true, policies: [no_echo_v1]}\n"), 0o600)
	engine, err := policies.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r := project(t, map[string]string{"templates/echo.yaml": echoT, "pipeline.yaml": pipelineOf(fmt.Sprintf(sayStep, ""))},
		load.Options{ForRun: true, Policies: engine})
	if r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "step say links echo_t v1") {
		t.Errorf("the policy did not see the link:\n%s", r.Diags.Render(r.Sources))
	}
}

// Positions found after validation point into the template too: a runtime input the template
// leaves open (input merging) and a service it names that does not exist (entity resolution),
// each with the use site; and two loads of the same files agree (no state kept between loads).
func TestLaterPhasesPointIntoTheTemplate(t *testing.T) {
	tmpl := `template:
  name: dep
  identifier: dep
  versionLabel: v1
  type: Stage
  spec:
    type: Deployment
    failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
    spec:
      deploymentType: Kubernetes
      service:
        serviceRef: nowhere
      environment:
        environmentRef: dev
        infrastructureDefinitions:
          - identifier: k8s
      execution:
        steps:
          - step:
              type: ShellScript
              name: a
              identifier: a
              timeout: TIMEOUT
              spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}
`
	p := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: deploy\n        identifier: deploy\n        template:\n          templateRef: account.dep\n          versionLabel: v1\n"
	for _, c := range []struct{ timeout, code string }{{"<+input>", "missing-input"}, {"1m", "missing-entity"}} {
		want := map[string]int{"missing-input": 23, "missing-entity": 12}[c.code]
		files := map[string]string{"templates/dep.yaml": strings.Replace(tmpl, "TIMEOUT", c.timeout, 1), "pipeline.yaml": p}
		for round := range 2 {
			r := project(t, files, forRun())
			var found *diag.Diagnostic
			for i, d := range r.Diags {
				if d.Code == c.code {
					found = &r.Diags[i]
					break // the first, in file order
				}
			}
			if found == nil {
				t.Fatalf("round %d: no %s diagnostic:\n%s", round, c.code, r.Diags.Render(r.Sources))
			}
			if !strings.HasSuffix(found.Pos.File, filepath.Join("templates", "dep.yaml")) || found.Pos.Line != want ||
				!strings.Contains(found.Pos.Via, "template dep@v1 used at ") || !strings.Contains(found.Pos.Via, "pipeline.yaml:9:") {
				t.Errorf("round %d: %s at %+v, want templates/dep.yaml:%d via the use site", round, c.code, found.Pos, want)
			}
		}
	}
}
