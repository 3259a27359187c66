package load_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

// Reference forms Gantry accepts (issue 19): missing entities are warnings for a plain
// validate and errors for a run; scoped references (org., account.) resolve by identifier.
func TestEntitiesAtValidateTime(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "../../examples/k8s/pipeline.yaml", filepath.Join(dir, "pipeline.yaml"))
	file := filepath.Join(dir, "pipeline.yaml")

	r, err := load.File(file, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(codes(r.Diags, diag.Warning, "missing-entity")) < 2 {
		t.Fatalf("plain validate without entities: ok=%v\n%s", r.OK(), r.Diags.Render(r.Sources))
	}
	r, _ = load.File(file, load.Options{ForRun: true})
	if r.OK() || len(codes(r.Diags, diag.Error, "missing-entity")) < 2 {
		t.Fatalf("validate --for-run without entities: ok=%v\n%s", r.OK(), r.Diags.Render(r.Sources))
	}

	// With the entities beside it, and references scoped as the reference allows.
	copyK8sEntities(t, dir)
	src := strings.NewReplacer("serviceRef: web", "serviceRef: account.web", "environmentRef: dev", "environmentRef: org.dev").
		Replace(readFile(t, file))
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = load.File(file, load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("scoped references: ok=%v\n%s", r.OK(), r.Diags.Render(r.Sources))
	}
}

// copyK8sEntities puts the k8s example's services, environments, infrastructure, connector and
// manifests in dir.
func copyK8sEntities(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"service.yaml", "env-dev.yaml", "env-prod.yaml", "infra-dev.yaml", "infra-prod.yaml", "connector.yaml"} {
		copyFile(t, "../../examples/k8s/"+f, filepath.Join(dir, f))
	}
	if err := os.CopyFS(filepath.Join(dir, "web"), os.DirFS("../../examples/k8s/web")); err != nil {
		t.Fatal(err)
	}
}

func codes(l diag.List, sev diag.Severity, code string) diag.List {
	var out diag.List
	for _, d := range l {
		if d.Severity == sev && d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, []byte(readFile(t, from)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A step may share its enclosing group's identifier, as the reference accepts; siblings may not.
func TestStepSharesGroupIdentifier(t *testing.T) {
	src := `pipeline:
  name: g
  identifier: g
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - stepGroup:
                  name: build
                  identifier: build
                  steps:
                    - step: {type: ShellScript, name: build, identifier: build, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
                    - step: {type: ShellScript, name: other, identifier: other, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
%s`
	file := filepath.Join(t.TempDir(), "p.yaml")
	for _, c := range []struct {
		extra string
		ok    bool
	}{
		{"", true},
		// The same identifier in another list (here the stage's, beside the group) is valid (spec 1.8 revised).
		{"              - step: {type: ShellScript, name: other, identifier: other, spec: {shell: Bash, source: {type: Inline, spec: {script: \"true\"}}}}\n", true},
		// Siblings may not share one.
		{"                    - step: {type: ShellScript, name: other, identifier: other, spec: {shell: Bash, source: {type: Inline, spec: {script: \"true\"}}}}\n", false},
	} {
		if err := os.WriteFile(file, []byte(strings.Replace(src, "%s", c.extra, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(file, load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != c.ok {
			t.Errorf("extra %q: ok=%v, want %v\n%s", c.extra, r.OK(), c.ok, r.Diags.Render(r.Sources))
		}
	}
}

// A runtime input may stand for a whole list where the reference allows it
// (`infrastructureDefinitions: <+input>`): plain validate lists it as open, a run needs it, and
// an input set fills it.
func TestRuntimeInputForAList(t *testing.T) {
	dir := t.TempDir()
	copyK8sEntities(t, dir)
	src := readFile(t, "../../examples/k8s/pipeline.yaml")
	src = strings.Replace(src, "infrastructureDefinitions:\n              - identifier: dev_cluster", "infrastructureDefinitions: <+input>", 1)
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	const fqn = "pipeline.stages.deploy_dev.spec.environment.infrastructureDefinitions"
	r, _ := load.File(file, load.Options{})
	if !r.OK() || len(r.Open) != 1 || r.Open[0].FQN != fqn {
		t.Fatalf("plain validate: ok=%v open=%v\n%s", r.OK(), r.Open, r.Diags.Render(r.Sources))
	}
	r, _ = load.File(file, load.Options{ForRun: true})
	if r.OK() || len(codes(r.Diags, diag.Error, "missing-input")) != 1 {
		t.Fatalf("for run without the input: ok=%v\n%s", r.OK(), r.Diags.Render(r.Sources))
	}
	set := filepath.Join(dir, "set.yaml")
	if err := os.WriteFile(set, []byte(`inputSet:
  name: s
  identifier: s
  pipeline:
    identifier: web_delivery
    stages:
      - stage:
          identifier: deploy_dev
          type: Deployment
          failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
          spec:
            environment:
              infrastructureDefinitions:
                - identifier: dev_cluster
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = load.File(file, load.Options{ForRun: true, InputSets: []string{set}})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("for run with the input set: ok=%v\n%s", r.OK(), r.Diags.Render(r.Sources))
	}
}

// Fields the reference defines but Gantry does not act on are warnings that say so; ones that
// change what runs are unsupported; keys the reference does not define are warnings (it ignores
// them), errors under --strict.
func TestReferenceFields(t *testing.T) {
	base := readFile(t, "../../examples/k8s/pipeline.yaml")
	file := filepath.Join(t.TempDir(), "pipeline.yaml")
	for _, c := range []struct {
		with   string
		strict bool
		sev    diag.Severity
		code   string
	}{
		{"gitOpsEnabled: false", false, diag.Warning, "reference-field-ignored"},
		{"gitOpsEnabled: true", false, diag.Unsupported, "unsupported-field"},
		{"gitOpsEnabeld: false", false, diag.Warning, "unknown-key"},
		{"gitOpsEnabeld: false", true, diag.Error, "unknown-key"},
		{"gitOpsEnabled: false", true, diag.Warning, "reference-field-ignored"},
	} {
		src := strings.Replace(base, "deploymentType: Kubernetes", "deploymentType: Kubernetes\n          "+c.with, 1)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(file, load.Options{Strict: c.strict})
		if err != nil {
			t.Fatal(err)
		}
		if len(codes(r.Diags, c.sev, c.code)) != 1 {
			t.Errorf("%s: want one %s %s\n%s", c.with, c.sev, c.code, r.Diags.Render(r.Sources))
		}
	}
}

// A legacy (v1) Deployment stage with its Kubernetes service definition and infrastructure
// inline resolves to the same deployment as the current form; other inline types are
// unsupported (issue 19).
func TestLegacyInlineDeployment(t *testing.T) {
	dir := t.TempDir()
	copyK8sEntities(t, dir)
	legacy := `          serviceConfig:
            serviceRef: web_inline
            serviceDefinition:
              type: Kubernetes
              spec:
                manifests:
                  - manifest:
                      identifier: web
                      type: K8sManifest
                      spec:
                        store: {type: Local, spec: {paths: [web/manifests]}}
                        valuesPaths: [web/values.yaml]
                variables:
                  - {name: replicas, type: String, value: "1"}
          infrastructure:
            environmentRef: org.dev
            infrastructureDefinition:
              type: %s
              spec: {connectorRef: local_cluster, namespace: gantry-legacy}
            allowSimultaneousDeployments: false
`
	current := "          deploymentType: Kubernetes\n          service:\n            serviceRef: web\n          environment:\n            environmentRef: dev\n            infrastructureDefinitions:\n              - identifier: dev_cluster\n"
	base := readFile(t, "../../examples/k8s/pipeline.yaml")
	if !strings.Contains(base, current) {
		t.Fatal("the k8s example changed; update this test")
	}
	file := filepath.Join(dir, "pipeline.yaml")
	for _, c := range []struct {
		infraType   string
		unsupported string
	}{{"KubernetesDirect", ""}, {"KubernetesGcp", "unsupported-infrastructure-type"}} {
		src := strings.Replace(base, current, strings.Replace(legacy, "%s", c.infraType, 1), 1)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(file, load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if c.unsupported != "" {
			if r.OK() || len(codes(r.Diags, diag.Unsupported, c.unsupported)) != 1 {
				t.Errorf("%s: want %s\n%s", c.infraType, c.unsupported, r.Diags.Render(r.Sources))
			}
			continue
		}
		if !r.OK() || r.Plan == nil {
			t.Fatalf("legacy form: %s", r.Diags.Render(r.Sources))
		}
		d := r.Plan.Stages[0].Deploy
		if d == nil || d.Type != "Kubernetes" || d.Service.ID != "web_inline" || len(d.Service.Manifests) != 1 ||
			d.Environment.ID != "dev" || d.Infra.Namespace != "gantry-legacy" || d.Infra.Connector.ID != "local_cluster" {
			t.Errorf("legacy deployment %+v", d)
		}
	}
}

// Runtime inputs stand in every position the reference allows them in, scalars, lists and
// objects alike; names, identifiers and types are fixed text, as the reference requires.
func TestRuntimeInputPositions(t *testing.T) {
	const file = "testdata/compat/runtime-inputs.yaml"
	r, err := load.File(file, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || len(r.Open) != 24 {
		t.Fatalf("ok=%v, %d open inputs, want 24\n%s", r.OK(), len(r.Open), r.Diags.Render(r.Sources))
	}
	src := readFile(t, file)
	for _, fixed := range []struct{ from, to, want string }{
		{"        name: s\n", "        name: <+input>\n", `stage name "<+input>" is an expression`},
		{"                  identifier: w\n", "                  identifier: <+input>\n", `step identifier "<+input>" is invalid`},
		{"                  type: Wait\n", "                  type: <+input>\n", `step type "<+input>"`},
	} {
		bad := filepath.Join(t.TempDir(), "p.yaml")
		if err := os.WriteFile(bad, []byte(strings.Replace(src, fixed.from, fixed.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		r, _ := load.File(bad, load.Options{})
		if text := r.Diags.Render(r.Sources); len(r.Diags.Invalid()) == 0 || !strings.Contains(text, fixed.want) {
			t.Errorf("%s: want an error %q\n%s", strings.TrimSpace(fixed.to), fixed.want, text)
		}
	}
}

// Steps that belong in containerized step groups say so outside one (an error naming where
// they run, spec 22); unsupported types list what runs.
func TestUnsupportedStepTypeHints(t *testing.T) {
	src := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Deployment\n        spec:\n          execution:\n            steps:\n              - step: {type: DownloadManifests, name: x, identifier: x, spec: {}}\n"
	r := load.Bytes("p.yaml", []byte(src), load.Options{})
	if text := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(text, "DownloadManifests step x is outside a containerized step group: it runs in a group's pod") {
		t.Errorf("DownloadManifests:\n%s", text)
	}
	for typ, want := range map[string]string{
		"AzureSlotDeployment": "Gantry runs step types AsgBlueGreenDeploy, AsgBlueGreenRollback, AsgBlueGreenSwapService",
	} {
		src := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n              - step: {type: " + typ + ", name: x, identifier: x, spec: {}}\n"
		r := load.Bytes("p.yaml", []byte(src), load.Options{})
		text := r.Diags.Render(r.Sources)
		if r.OK() || !strings.Contains(text, "unsupported: ") || !strings.Contains(text, want) {
			t.Errorf("%s:\n%s", typ, text)
		}
	}
}

// A containerized step group (stepGroupInfra) is planned with its pod, its connectors
// resolved; what Gantry cannot run is unsupported, what is wrong an error, and sharedPaths
// outside such a group a warning.
func TestContainerizedStepGroupDiagnostics(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("connector.yaml", "connector:\n  name: k8s\n  identifier: k8s\n  type: K8sCluster\n  spec: {credential: {type: InheritFromDelegate}}\n")
	write("hub.yaml", "connector:\n  name: hub\n  identifier: hub\n  type: DockerRegistry\n  spec: {dockerRegistryUrl: https://index.docker.io/v2/, providerType: DockerHub, auth: {type: Anonymous}}\n")
	src := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n              - stepGroup:\n                  name: g\n                  identifier: g\n%s                  steps:\n                    - step: {type: %s, name: a, identifier: a, spec: %s}\n"
	const run = "{image: alpine, connectorRef: hub, shell: Sh, command: \"true\"}"
	const infra = "                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci}}\n"
	for _, c := range []struct{ group, typ, spec, want string }{
		{infra, "Run", run, ""},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: nope, namespace: ci}}\n", "Run", run, `connector "nope" is not defined`},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: hub, namespace: ci}}\n", "Run", run, "g: connector hub is a DockerRegistry connector; a pod of container steps needs a K8sCluster connector"},
		{infra, "Run", "{image: alpine, connectorRef: nope, command: \"true\"}", `connector "nope" is not defined`},
		{"                  stepGroupInfra: {type: VM, spec: {connectorRef: k8s, namespace: ci}}\n", "Run", run, "unsupported: step group g runs on VM infrastructure"},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci, os: Windows}}\n", "Run", run, "unsupported: the pod's os is Windows"},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci, podSpecOverlay: x}}\n", "Run", run, "podSpecOverlay is not a YAML mapping"},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci, podSpecOverlay: \"spec: {hostNetwork: true}\"}}\n", "Run", run, ""},
		{"                  stepGroupInfra: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci, volumes: [{mountPath: /d, type: PersistentVolumeClaim, spec: {}}]}}\n", "Run", run, "a PersistentVolumeClaim volume needs spec.claimName"},
		{infra, "Run", "{command: \"true\"}", "unsupported: Run step a has no image"},
		{infra, "Run", "{image: alpine, command: \"true\", resources: {limits: {memory: lots}}}", `memory "lots" is not a Kubernetes quantity`},
		{"", "Run", run, "Run step a is outside a containerized step group: it runs in a container, in a CI stage or in a group's pod"},
		{"                  sharedPaths: [/cache]\n", "ShellScript", "{shell: Bash, source: {type: Inline, spec: {script: \"true\"}}}", "warning: sharedPaths is ignored"},
	} {
		file := write("p.yaml", fmt.Sprintf(src, c.group, c.typ, c.spec))
		r, err := load.File(file, load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		text := r.Diags.Render(r.Sources)
		switch {
		case c.want == "":
			g := r.Plan.Stages[0].Children[0]
			if !r.OK() || g.Pod == nil || g.Pod.Connector.ID != "k8s" || g.Pod.Registries["hub"].ID != "hub" {
				t.Errorf("%s: want a plan with the group's pod\n%s", c.spec, text)
			}
		case !strings.Contains(text, c.want):
			t.Errorf("%q %s: want %q\n%s", c.group, c.spec, c.want, text)
		case strings.HasPrefix(c.want, "warning") != r.OK():
			t.Errorf("%q: ok %v\n%s", c.group, r.OK(), text)
		}
	}
}

// A stage of a deployment type Gantry does not run is unsupported, and its steps are not
// called misplaced: StandAloneTrafficShiftRollback rolls back Elastigroup traffic shifts too.
func TestStepsOfAnUnsupportedDeploymentType(t *testing.T) {
	src := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Deployment\n        spec:\n          deploymentType: Elastigroup\n          service: {serviceRef: spot}\n          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: spot}]}\n          execution:\n            steps:\n              - step: {type: ShellScript, name: x, identifier: x, spec: {shell: Bash, source: {type: Inline, spec: {script: 'true'}}}}\n            rollbackSteps:\n              - step: {type: StandAloneTrafficShiftRollback, name: r, identifier: r, spec: {}}\n        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]\n"
	r := load.Bytes("p.yaml", []byte(src), load.Options{})
	text := r.Diags.Render(r.Sources)
	if len(r.Diags.Invalid()) > 0 || !strings.Contains(text, "unsupported: deployment type Elastigroup") {
		t.Errorf("an Elastigroup stage:\n%s", text)
	}
}
