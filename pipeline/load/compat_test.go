package load_test

import (
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
		{"              - step: {type: ShellScript, name: other, identifier: other, spec: {shell: Bash, source: {type: Inline, spec: {script: \"true\"}}}}\n", false},
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
// change what runs are unsupported; keys the reference does not define stay errors.
func TestReferenceFields(t *testing.T) {
	base := readFile(t, "../../examples/k8s/pipeline.yaml")
	file := filepath.Join(t.TempDir(), "pipeline.yaml")
	for _, c := range []struct {
		with string
		sev  diag.Severity
		code string
	}{
		{"gitOpsEnabled: false", diag.Warning, "reference-field-ignored"},
		{"gitOpsEnabled: true", diag.Unsupported, "unsupported-field"},
		{"gitOpsEnabeld: false", diag.Error, "unknown-key"},
	} {
		src := strings.Replace(base, "deploymentType: Kubernetes", "deploymentType: Kubernetes\n          "+c.with, 1)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(file, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(codes(r.Diags, c.sev, c.code)) != 1 {
			t.Errorf("%s: want one %s %s\n%s", c.with, c.sev, c.code, r.Diags.Render(r.Sources))
		}
	}
}
