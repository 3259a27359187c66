package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/reference"
)

// Issue 50: every pipeline the reference accepts is accepted (warnings or unsupported, never an
// error), each class of it built from a minimal pipeline of that shape.

// loadIn writes files (name → text) into a fresh folder and loads pipeline.yaml, or the file named
// by opts' first input set when the pipeline is not the subject.
func loadIn(t *testing.T, files map[string]string, subject string, opts load.Options) *load.Result {
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
	r, err := load.File(filepath.Join(dir, subject), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// customStage is a pipeline of one Custom stage with the given steps (indented for `steps:`) and
// extra stage keys.
func customStage(stageExtra, steps string) string {
	return `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
` + stageExtra + `        spec:
          execution:
            steps:
` + steps
}

const waitStep = `              - step: {name: w, identifier: w, type: Wait, spec: {duration: 10s}}
`

// onlyWarnings fails unless the result has no error and no unsupported verdict, and returns the
// codes of its warnings.
func onlyWarnings(t *testing.T, r *load.Result) map[string]int {
	t.Helper()
	if r.Diags.HasErrors() {
		t.Fatalf("want warnings only:\n%s", r.Diags.Render(r.Sources))
	}
	out := map[string]int{}
	for _, d := range r.Diags {
		out[d.Code]++
	}
	return out
}

// Class 1: a template not among those found is a warning for a plain validate and an error for
// a run; gitBranch is accepted and said to be ignored.
func TestMissingTemplateIsAWarningUntilARun(t *testing.T) {
	pipelineFile := `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: deploy
        identifier: deploy
        template:
          templateRef: account.golden_deploy
          versionLabel: "3"
          gitBranch: main
    - stage:
        name: after
        identifier: after
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  name: smoke
                  identifier: smoke
                  template: {templateRef: org.smoke, versionLabel: v1}
` + waitStep
	files := map[string]string{"pipeline.yaml": pipelineFile}
	r := loadIn(t, files, "pipeline.yaml", load.Options{})
	got := onlyWarnings(t, r)
	if got["missing-template"] != 2 || got["ignored-field"] != 1 {
		t.Fatalf("want two missing-template warnings and gitBranch ignored, got %v\n%s", got, r.Diags.Render(r.Sources))
	}
	for _, d := range codes(r.Diags, diag.Warning, "missing-template") {
		if !strings.Contains(d.Message, "is not among the templates found; its body was not checked") || !strings.Contains(d.Hint, "looked in") {
			t.Errorf("message does not say what was not checked and where Gantry looked: %s (%s)", d.Message, d.Hint)
		}
	}
	if !strings.Contains(codes(r.Diags, diag.Warning, "missing-template")[0].Message, "account.golden_deploy@3") {
		t.Errorf("the warning names the template and version: %s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, files, "pipeline.yaml", load.Options{ForRun: true})
	if len(codes(r.Diags, diag.Error, "missing-template")) != 2 || r.Plan != nil {
		t.Fatalf("for a run a missing template is an error:\n%s", r.Diags.Render(r.Sources))
	}

	// A whole pipeline from a template not found: its stages are unknown, so a notification
	// rule's stage filter is not judged.
	whole := `pipeline:
  name: p
  identifier: p
  template: {templateRef: account.golden, versionLabel: "1"}
  notificationRules:
    - {name: n, identifier: n, enabled: true, pipelineEvents: [{type: StageFailed, forStages: [deploy]}], notificationMethod: {type: Email, spec: {recipients: [a@b.c]}}}
`
	r = loadIn(t, map[string]string{"pipeline.yaml": whole}, "pipeline.yaml", load.Options{})
	if got := onlyWarnings(t, r); len(got) != 1 || got["missing-template"] != 1 {
		t.Fatalf("a pipeline from a template not found: want only missing-template, got %v\n%s", got, r.Diags.Render(r.Sources))
	}

	// With the template present, its gitBranch is still reported as ignored and the link expands.
	files["templates/smoke.yaml"] = `template:
  name: smoke
  identifier: smoke
  versionLabel: v1
  type: Step
  orgIdentifier: o
  spec:
    type: Wait
    spec: {duration: 10s}
`
	files["templates/golden.yaml"] = `template:
  name: golden
  identifier: golden_deploy
  versionLabel: "3"
  type: Stage
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step: {name: w, identifier: w, type: Wait, spec: {duration: 10s}}
`
	r = loadIn(t, files, "pipeline.yaml", load.Options{ForRun: true})
	if r.Plan == nil || len(codes(r.Diags, diag.Warning, "ignored-field")) != 1 {
		t.Fatalf("templates found: want a plan and gitBranch reported as ignored:\n%s", r.Diags.Render(r.Sources))
	}
}

// Class 2: keys the reference does not define are warnings (with the nearest defined key), the
// shapes of the reference's own example pipelines included; --strict makes each an error, in
// pipelines and in entity files alike.
func TestUnknownKeysAreWarningsUnlessStrict(t *testing.T) {
	deploy := `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        sendGitStatus: true
        spec:
          deploymentType: Kubernetes
          serviceDependencies: []
          service: {serviceRef: web}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: dev_k8s}]
          execution:
            steps:
              - step:
                  name: swap
                  identifier: swap
                  type: K8sBGSwapServices
                  spec: {skipDryRun: false}
              - stepGroup:
                  name: g
                  identifier: g
                  spec: {}
                  steps:
                    - step: {name: w, identifier: w, type: Wait, spec: {duration: 10s}, timout: 1m}
    - stage:
        name: custom
        identifier: custom
        type: Custom
        spec:
          serviceDependencies: []
          execution:
            steps:
` + waitStep
	service := `service:
  name: web
  identifier: web
  owner: platform
  serviceDefinition:
    type: Kubernetes
    spec:
      manifests:
        - manifest:
            identifier: m
            type: K8sManifest
            spec:
              store:
                type: Local
                spec: {paths: [k8s]}
                skipResourceVersioning: false
                enableDeclarativeRollback: false
`
	files := map[string]string{"pipeline.yaml": deploy, "service.yaml": service, "k8s/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}
	r := loadIn(t, files, "pipeline.yaml", load.Options{})
	unknown := codes(r.Diags, diag.Warning, "unknown-key")
	onlyWarnings(t, r)
	want := []string{`"sendGitStatus"`, `"serviceDependencies" in Deployment`, `"serviceDependencies" in Custom`, `"skipDryRun" in K8sBGSwapServices`,
		`"spec" in stepGroup`, `"timout"`, `"owner"`, `"skipResourceVersioning" in store`, `"enableDeclarativeRollback" in store`}
	text := r.Diags.Render(r.Sources)
	for _, w := range want {
		if !strings.Contains(text, "unknown key "+w) {
			t.Errorf("no unknown-key warning for %s\n%s", w, text)
		}
	}
	if len(unknown) != len(want) {
		t.Errorf("want %d unknown-key warnings, got %d\n%s", len(want), len(unknown), text)
	}
	for _, d := range unknown {
		if !strings.Contains(d.Message, "ignored, as the reference ignores it") {
			t.Errorf("the warning says the key is ignored: %s", d.Message)
		}
		if strings.Contains(d.Message, "timout") && d.Hint != `did you mean "timeout"?` {
			t.Errorf("a typo gets the nearest defined key: %q", d.Hint)
		}
	}

	r = loadIn(t, files, "pipeline.yaml", load.Options{Strict: true})
	if n := len(codes(r.Diags, diag.Error, "unknown-key")); n != len(want) || len(codes(r.Diags, diag.Warning, "unknown-key")) != 0 {
		t.Errorf("--strict: want %d unknown-key errors, got %d\n%s", len(want), n, r.Diags.Render(r.Sources))
	}
}

// Class 2, entity files: service, environment, infrastructure, connector, template, input set and
// trigger files with a key their object does not define.
func TestUnknownKeysInEntityFiles(t *testing.T) {
	for name, src := range map[string]string{
		"service":        "service:\n  name: s\n  identifier: s\n  extra: 1\n  serviceDefinition:\n    type: Kubernetes\n    spec: {}\n",
		"environment":    "environment:\n  name: e\n  identifier: e\n  type: PreProduction\n  extra: 1\n",
		"infrastructure": "infrastructureDefinition:\n  name: i\n  identifier: i\n  environmentRef: e\n  deploymentType: Kubernetes\n  type: KubernetesDirect\n  extra: 1\n  spec: {connectorRef: k, namespace: n}\n",
		"connector":      "connector:\n  name: k\n  identifier: k\n  type: K8sCluster\n  extra: 1\n  spec:\n    credential: {type: InheritFromDelegate}\n",
		"template":       "template:\n  name: t\n  identifier: t\n  versionLabel: v1\n  type: Step\n  extra: 1\n  spec:\n    type: Wait\n    spec: {duration: 10s}\n",
		"input set":      "inputSet:\n  name: i\n  identifier: i\n  extra: 1\n  pipeline:\n    identifier: p\n",
		"trigger":        "trigger:\n  name: t\n  identifier: t\n  enabled: true\n  pipelineIdentifier: p\n  extra: 1\n  source:\n    type: Scheduled\n    spec:\n      type: Cron\n      spec: {expression: \"0 4 * * *\"}\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"subject.yaml": src}
			r := loadIn(t, files, "subject.yaml", load.Options{})
			if r.Diags.HasErrors() || len(codes(r.Diags, diag.Warning, "unknown-key")) != 1 {
				t.Errorf("want one unknown-key warning and no error:\n%s", r.Diags.Render(r.Sources))
			}
			r = loadIn(t, files, "subject.yaml", load.Options{Strict: true})
			if len(codes(r.Diags, diag.Error, "unknown-key")) != 1 {
				t.Errorf("--strict: want one unknown-key error:\n%s", r.Diags.Render(r.Sources))
			}
		})
	}
}

// Class 2: in an object the reference's schema closes (additionalProperties: false), an unknown
// key is an error without --strict. No object Gantry decodes is closed in the published schema
// (hack/refschema derives the list), so the test closes one.
func TestUnknownKeyInAClosedObjectIsAnError(t *testing.T) {
	saved := reference.Closed
	reference.Closed = append([]string{"stepspec.WaitSpec"}, saved...)
	defer func() { reference.Closed = saved }()
	src := customStage("", "              - step: {name: w, identifier: w, type: Wait, spec: {duration: 10s, extra: 1}}\n")
	r := loadIn(t, map[string]string{"pipeline.yaml": src}, "pipeline.yaml", load.Options{})
	if d := codes(r.Diags, diag.Error, "unknown-key"); len(d) != 1 || !strings.Contains(d[0].Message, "closes") {
		t.Fatalf("want an unknown-key error in a closed object:\n%s", r.Diags.Render(r.Sources))
	}
}

// Class 3: `spec:` with no value is the empty spec; empty lists and maps where the schema allows
// them, and `when:` with no value, are accepted.
func TestNullAndEmptyValues(t *testing.T) {
	src := `pipeline:
  name: p
  identifier: p
  tags: {}
  variables: []
  delegateSelectors: []
  notificationRules: []
  properties: {}
  flowControl: {barriers: []}
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        tags: {}
        variables: []
        failureStrategies: []
        when:
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: dev_k8s}]
          execution:
            steps:
              - step:
                  name: rollback
                  identifier: rollback
                  type: K8sRollingRollback
                  failureStrategies: []
                  spec:
            rollbackSteps: []
`
	r := loadIn(t, map[string]string{"pipeline.yaml": src}, "pipeline.yaml", load.Options{})
	got := onlyWarnings(t, r)
	for code := range got {
		if code != "missing-entity" {
			t.Errorf("unexpected %s:\n%s", code, r.Diags.Render(r.Sources))
		}
	}
	// A required field of an empty spec is still required.
	r = loadIn(t, map[string]string{"pipeline.yaml": customStage("", "              - step:\n                  name: b\n                  identifier: b\n                  type: Barrier\n                  spec:\n")},
		"pipeline.yaml", load.Options{})
	if d := codes(r.Diags, diag.Error, "missing-field"); len(d) != 1 || !strings.Contains(d[0].Message, "barrierRef") {
		t.Errorf("want barrierRef required in an empty Barrier spec:\n%s", r.Diags.Render(r.Sources))
	}
}

// Class 4: steps of different step groups may share an identifier; a relative reference that
// matches several is a warning naming their paths; siblings still may not share one.
func TestSameIdentifierInDifferentStepGroups(t *testing.T) {
	group := func(id string) string {
		return `              - stepGroup:
                  name: ` + id + `
                  identifier: ` + id + `
                  steps:
                    - step: {name: approve, identifier: approve, type: Wait, spec: {duration: 10s}}
`
	}
	uses := `              - step:
                  name: report
                  identifier: report
                  type: ShellScript
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "echo <+execution.steps.approve.status>"}}
`
	r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", group("canary")+group("prod"))}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil || len(r.Diags) != 0 {
		t.Fatalf("two groups with a step of the same identifier:\n%s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, map[string]string{"pipeline.yaml": customStage("", group("canary")+group("prod")+uses)}, "pipeline.yaml", load.Options{ForRun: true})
	amb := codes(r.Diags, diag.Warning, "ambiguous-reference")
	if !r.OK() || len(amb) != 1 ||
		!strings.Contains(amb[0].Message, "pipeline.stages.s.spec.execution.steps.canary.steps.approve") ||
		!strings.Contains(amb[0].Message, "pipeline.stages.s.spec.execution.steps.prod.steps.approve") {
		t.Fatalf("want an ambiguous-reference warning naming both steps:\n%s", r.Diags.Render(r.Sources))
	}
	// Inside a group, <+steps.approve> names the group's own step: not ambiguous.
	inside := strings.Replace(group("canary"), "                    - step: {name: approve", `                    - step: {name: use, identifier: use, type: ShellScript, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo <+steps.approve.status>"}}}}
                    - step: {name: approve`, 1)
	r = loadIn(t, map[string]string{"pipeline.yaml": customStage("", inside+group("prod"))}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || len(codes(r.Diags, diag.Warning, "ambiguous-reference")) != 0 {
		t.Fatalf("a reference to the group's own step is not ambiguous:\n%s", r.Diags.Render(r.Sources))
	}
	twice := strings.Replace(group("canary"), "                    - step:", "                    - step: {name: approve, identifier: approve, type: Wait, spec: {duration: 20s}}\n                    - step:", 1)
	r = loadIn(t, map[string]string{"pipeline.yaml": customStage("", twice)}, "pipeline.yaml", load.Options{})
	if len(codes(r.Diags, diag.Error, "duplicate-identifier")) != 1 {
		t.Fatalf("siblings sharing an identifier:\n%s", r.Diags.Render(r.Sources))
	}
}

// Class 5: a legacy service definition with parts missing once crashed validate; a service may be
// declared without a serviceDefinition, which only a run needs.
func TestLegacyPartialServiceAndServiceWithoutDefinition(t *testing.T) {
	for _, forRun := range []bool{false, true} {
		r, err := load.File("testdata/legacy/partial-service.yaml", load.Options{ForRun: forRun})
		if err != nil {
			t.Fatal(err)
		}
		if len(codes(r.Diags, diag.Unsupported, "unsupported-manifest-type")) != 1 || len(codes(r.Diags, diag.Error, "missing-field")) != 1 {
			t.Errorf("for run %v: want the manifest type unsupported and the bare manifest's spec missing:\n%s", forRun, r.Diags.Render(r.Sources))
		}
	}
	bare := "service:\n  name: web\n  identifier: web\n"
	pipe := strings.Replace(customStage("", waitStep), "type: Custom", "type: Deployment\n        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]", 1)
	pipe = strings.Replace(pipe, "        spec:\n", "        spec:\n          deploymentType: Kubernetes\n          service: {serviceRef: web}\n          environment: {environmentRef: dev, infrastructureDefinitions: [{identifier: k}]}\n", 1)
	files := map[string]string{"service.yaml": bare, "pipeline.yaml": pipe}
	if r := loadIn(t, files, "service.yaml", load.Options{}); r.Diags.HasErrors() {
		t.Errorf("a service without a definition is a valid file:\n%s", r.Diags.Render(r.Sources))
	}
	r := loadIn(t, files, "pipeline.yaml", load.Options{})
	onlyWarnings(t, r)
	if d := codes(r.Diags, diag.Warning, "missing-entity"); len(d) == 0 || !strings.Contains(r.Diags.Render(r.Sources), "has no serviceDefinition") {
		t.Errorf("deploying it: want a warning for a plain validate:\n%s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, files, "pipeline.yaml", load.Options{ForRun: true})
	if !strings.Contains(r.Diags.Errors().Sort().Render(r.Sources), "has no serviceDefinition") {
		t.Errorf("deploying it: want an error for a run:\n%s", r.Diags.Render(r.Sources))
	}
}

// Class 6: the step types Gantry runs are listed once per file, however many step types it does
// not run yet.
func TestUnsupportedStepTypesListRunnableOnce(t *testing.T) {
	step := func(id, typ string) string {
		return "              - step: {name: " + id + ", identifier: " + id + ", type: " + typ + ", spec: {}}\n"
	}
	src := customStage("", step("a", "AzureSlotDeployment")+step("b", "TerraformCloudRun")+step("c", "AzureSlotDeployment")+step("d", "AzureCreateARMResource"))
	r := loadIn(t, map[string]string{"pipeline.yaml": src}, "pipeline.yaml", load.Options{})
	uns := codes(r.Diags, diag.Unsupported, "unsupported-step-type")
	if len(uns) != 4 {
		t.Fatalf("want 4 unsupported-step-type, got:\n%s", r.Diags.Render(r.Sources))
	}
	listed := 0
	for _, d := range uns {
		if strings.Contains(d.Hint, "ShellScript") {
			listed++
		}
		if !strings.Contains(d.Hint, "--list-types") {
			t.Errorf("hint does not point to --list-types: %s", d.Hint)
		}
	}
	if listed != 1 {
		t.Errorf("the runnable step types are listed %d times, want once:\n%s", listed, r.Diags.Render(r.Sources))
	}
}

// A Deployment stage without failureStrategies is refused, as the reference refuses to save one
// (its schema requires the field; harness/harness-core#41800 made it mandatory, and its docs
// say "A failure strategy is always required in a CD stage"). A runtime input or an empty list
// is a value; a Custom stage needs none.
func TestDeploymentStageNeedsFailureStrategies(t *testing.T) {
	service := "service:\n  name: web\n  identifier: web\n"
	deployment := func(extra string) string {
		pipe := strings.Replace(customStage(extra, waitStep), "type: Custom", "type: Deployment", 1)
		return strings.Replace(pipe, "        spec:\n", "        spec:\n          deploymentType: Kubernetes\n          service: {serviceRef: web}\n          environment: {environmentRef: dev, infrastructureDefinitions: [{identifier: k}]}\n", 1)
	}
	r := loadIn(t, map[string]string{"service.yaml": service, "pipeline.yaml": deployment("")}, "pipeline.yaml", load.Options{})
	missing := codes(r.Diags, diag.Error, "missing-field")
	if len(missing) != 1 || !strings.Contains(missing[0].Message, "Deployment stage s has no failureStrategies") || missing[0].Pos.Line != 8 {
		t.Errorf("want one missing-field error at the stage's type (line 8):\n%s", r.Diags.Render(r.Sources))
	}
	for _, extra := range []string{
		"        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]\n",
		"        failureStrategies: <+input>\n",
		"        failureStrategies: []\n",
	} {
		r := loadIn(t, map[string]string{"service.yaml": service, "pipeline.yaml": deployment(extra)}, "pipeline.yaml", load.Options{})
		if len(codes(r.Diags, diag.Error, "missing-field")) != 0 {
			t.Errorf("%s:\n%s", extra, r.Diags.Render(r.Sources))
		}
	}
	if r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", waitStep)}, "pipeline.yaml", load.Options{}); r.Diags.HasErrors() {
		t.Errorf("a Custom stage:\n%s", r.Diags.Render(r.Sources))
	}
}
