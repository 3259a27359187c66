package entities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

// multiStage is a pipeline with one Deployment stage "deploy" whose spec holds sections (YAML
// indented for the stage spec) and a step printing the iteration's combination.
func multiStage(sections string) string {
	return `pipeline:
  name: multi
  identifier: multi
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
` + sections + `          execution:
            steps:
              - step:
                  type: ShellScript
                  name: s
                  identifier: s
                  spec:
                    shell: Sh
                    source: {type: Inline, spec: {script: 'echo <+matrix.serviceRef>/<+env.identifier>/<+infra.infraIdentifier>'}}
`
}

// loadMulti loads a pipeline beside the multi catalogue (services a, b, cart, checkout;
// environments e1 [i1, i2] and e2 [i2, i3]; group g = [e1, e2]).
func loadMulti(t *testing.T, src string, opts load.Options) *load.Result {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/multi/*.yaml")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.ForRun = true
	r, err := load.File(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// combos lists a multi stage's iterations as service/environment/infrastructure, in order.
func combos(t *testing.T, r *load.Result) (out []string, concurrency string) {
	t.Helper()
	if !r.OK() || r.Plan == nil {
		t.Fatalf("not runnable:\n%s", r.Diags.Render(r.Sources))
	}
	st := r.Plan.Stages[0]
	if st.Strategy == nil || !st.Strategy.ItemsAsMatrix {
		t.Fatalf("stage has no implicit loop: %+v", st.Strategy)
	}
	for _, it := range st.Strategy.Items.([]any) {
		m := it.(map[string]any)
		d := st.Deploys[plan.DeployKey(m)]
		if d == nil {
			t.Fatalf("no deployment for %v", m)
		}
		out = append(out, d.Service.ID+"/"+d.Environment.ID+"/"+d.Infra.ID)
	}
	return out, st.Strategy.MaxConcurrency
}

func wantCombos(t *testing.T, r *load.Result, want, concurrency string) {
	t.Helper()
	got, c := combos(t, r)
	if strings.Join(got, " ") != want || c != concurrency {
		t.Errorf("iterations %s (maxConcurrency %s), want %s (%s)", strings.Join(got, " "), c, want, concurrency)
	}
}

// C120: several services, one target.
func TestC120MultiServiceOneTarget(t *testing.T) {
	r := loadMulti(t, multiStage(`          services:
            values: [{serviceRef: cart}, {serviceRef: checkout}]
          environment:
            environmentRef: e1
            infrastructureDefinitions: [{identifier: i1}]
`), load.Options{})
	wantCombos(t, r, "cart/e1/i1 checkout/e1/i1", "2")
}

// C121: services parallel, environments serial: target-major, as many at once as services.
func TestC121TargetMajor(t *testing.T) {
	r := loadMulti(t, multiStage(`          services:
            values: [{serviceRef: a}, {serviceRef: b}]
            metadata: {parallel: true}
          environments:
            metadata: {parallel: false}
            values:
              - environmentRef: e1
                infrastructureDefinitions: [{identifier: i1}, {identifier: i2}]
`), load.Options{})
	wantCombos(t, r, "a/e1/i1 b/e1/i1 a/e1/i2 b/e1/i2", "2")
}

// C122: services serial, environments parallel: service-major, as many at once as targets.
func TestC122ServiceMajor(t *testing.T) {
	r := loadMulti(t, multiStage(`          services:
            values: [{serviceRef: a}, {serviceRef: b}]
            metadata: {parallel: false}
          environments:
            metadata: {parallel: true}
            values:
              - {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}
              - {environmentRef: e2, infrastructureDefinitions: [{identifier: i2}, {identifier: i3}]}
`), load.Options{})
	wantCombos(t, r, "a/e1/i1 a/e2/i2 a/e2/i3 b/e1/i1 b/e2/i2 b/e2/i3", "3")
}

// C124: the service list as a runtime input, filled by the run; empty or missing is refused.
func TestC124RuntimeInputs(t *testing.T) {
	src := multiStage(`          services:
            values: <+input>
          environment:
            environmentRef: e1
            infrastructureDefinitions: <+input>
`)
	r := loadMulti(t, src, load.Options{Sets: []string{
		`pipeline.stages.deploy.spec.services.values=[{serviceRef: a}, {serviceRef: b}]`,
		`pipeline.stages.deploy.spec.environment.infrastructureDefinitions=[{identifier: i2}]`}})
	wantCombos(t, r, "a/e1/i2 b/e1/i2", "2")
	if r := loadMulti(t, src, load.Options{}); r.OK() {
		t.Error("a run without the services was accepted")
	}
	r = loadMulti(t, src, load.Options{Sets: []string{`pipeline.stages.deploy.spec.services.values=[]`,
		`pipeline.stages.deploy.spec.environment.infrastructureDefinitions=[{identifier: i2}]`}})
	if r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "services.values is empty") {
		t.Errorf("an empty service list was accepted:\n%s", r.Diags.Render(r.Sources))
	}
}

// C125: structure errors, environment groups with deployToAll.
func TestC125GroupsAndStructure(t *testing.T) {
	r := loadMulti(t, multiStage(`          service: {serviceRef: a}
          environmentGroup: {envGroupRef: g, deployToAll: true}
`), load.Options{})
	wantCombos(t, r, "a/e1/i1 a/e1/i2 a/e2/i2 a/e2/i3", "4")
	if env := r.Plan.Stages[0].Deploys["|e1|i1"].Environment; env.GroupRef != "g" {
		t.Errorf("envGroupRef %q", env.GroupRef)
	}
	bad := []struct{ sections, want string }{
		{"          service: {serviceRef: a}\n          services: {values: [{serviceRef: a}]}\n          environment: {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}\n", ""},
		{"          services: {values: [{serviceRef: a}, {serviceRef: a}]}\n          environment: {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}\n", "deploys service a twice"},
		{"          services: {values: [{serviceRef: a}]}\n          environments: {values: [{environmentRef: e1, infrastructureDefinitions: [{identifier: i3}]}]}\n", "belongs to environment"},
		{"          services: {values: [{serviceRef: nope}]}\n          environment: {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}\n", `service "nope" is not defined`},
		{"          service: {serviceRef: a}\n          environmentGroup: {envGroupRef: g, environments: [{environmentRef: e3, deployToAll: true}]}\n", "not in environment group g"},
	}
	for _, b := range bad {
		r := loadMulti(t, multiStage(b.sections), load.Options{})
		if r.OK() || (b.want != "" && !strings.Contains(r.Diags.Render(r.Sources), b.want)) {
			t.Errorf("%s: want an error %q:\n%s", b.sections, b.want, r.Diags.Render(r.Sources))
		}
	}
}

// serviceInputs, environmentInputs and an infrastructure's inputs fill the runtime inputs of
// the entity files, per iteration's entities; what stays open refuses the run.
func TestEntityInputs(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob("testdata/multi/*.yaml")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "svc-a.yaml"), []byte(`service:
  name: a
  identifier: a
  serviceDefinition:
    type: Kubernetes
    spec:
      variables:
        - {name: who, type: String, value: <+input>}
        - {name: tier, type: String, value: <+input>.default(gold)}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "infra-e1-i1.yaml"), []byte(`infrastructureDefinition:
  name: i1
  identifier: i1
  environmentRef: e1
  deploymentType: Kubernetes
  type: KubernetesDirect
  spec:
    connectorRef: cluster
    namespace: <+input>
`), 0o644)
	src := multiStage(`          services:
            values:
              - serviceRef: a
                serviceInputs:
                  serviceDefinition:
                    type: Kubernetes
                    spec:
                      variables:
                        - {name: who, type: String, value: alice}
              - serviceRef: b
          environment:
            environmentRef: e1
            infrastructureDefinitions:
              - identifier: i1
                inputs: {identifier: i1, type: KubernetesDirect, spec: {namespace: team-ns}}
`)
	p := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(p, []byte(src), 0o644)
	r, err := load.File(p, load.Options{ForRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := combos(t, r)
	if strings.Join(got, " ") != "a/e1/i1 b/e1/i1" {
		t.Fatalf("iterations %v", got)
	}
	d := r.Plan.Stages[0].Deploys["a||"]
	if d.Infra.Namespace != "team-ns" {
		t.Errorf("namespace %q", d.Infra.Namespace)
	}
	vars := map[string]string{}
	for _, v := range d.Service.Variables {
		vars[v.Name] = v.Value
	}
	if vars["who"] != "alice" || vars["tier"] != "gold" {
		t.Errorf("service variables %v", vars)
	}
	// Without the service's input, a run is refused; plain validate only warns.
	os.WriteFile(p, []byte(strings.Replace(src, "                        - {name: who, type: String, value: alice}\n", "", 1)), 0o644)
	if r, _ := load.File(p, load.Options{ForRun: true}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "has no value for its runtime input service.serviceDefinition.spec.variables.who") {
		t.Errorf("open service input accepted for a run:\n%s", r.Diags.Render(r.Sources))
	}
	if r, _ := load.File(p, load.Options{}); !r.OK() {
		t.Errorf("plain validate:\n%s", r.Diags.Render(r.Sources))
	}
}

// Tag filters choose targets Gantry would not: unsupported, not ignored.
func TestFiltersAreUnsupported(t *testing.T) {
	r := loadMulti(t, multiStage(`          service: {serviceRef: a}
          environments:
            values:
              - environmentRef: e1
                deployToAll: true
                filters:
                  - type: tags
                    entities: [infrastructures]
                    spec: {matchType: all, tags: {region: eu}}
`), load.Options{})
	if r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "`filters` asks for tag filters") {
		t.Errorf("filters:\n%s", r.Diags.Render(r.Sources))
	}
}

// services.useFromStage copies an earlier multi-service stage's services and their metadata.
func TestServicesUseFromStage(t *testing.T) {
	src := multiStage(`          services:
            values: [{serviceRef: a}, {serviceRef: b}]
            metadata: {parallel: false}
          environment: {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}
`) + `    - stage:
        name: later
        identifier: later
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          services:
            useFromStage: {stage: deploy}
          environment: {environmentRef: e2, infrastructureDefinitions: [{identifier: i3}]}
          execution:
            steps:
              - step: {type: ShellScript, name: s, identifier: s, spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}}
`
	r := loadMulti(t, src, load.Options{})
	if !r.OK() {
		t.Fatalf("%s", r.Diags.Render(r.Sources))
	}
	later := r.Plan.Stages[1]
	if later.Strategy == nil || len(later.Deploys) != 2 || later.Strategy.MaxConcurrency != "1" {
		t.Fatalf("later stage: %+v", later.Strategy)
	}
	if d := later.Deploys["b||"]; d == nil || d.Service.ID != "b" || d.Infra.ID != "i3" {
		t.Errorf("b's deployment %+v", d)
	}
	bad := strings.Replace(src, "useFromStage: {stage: deploy}", "useFromStage: {stage: nowhere}", 1)
	if r := loadMulti(t, bad, load.Options{}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "is not an earlier stage deploying several services") {
		t.Errorf("unknown stage:\n%s", r.Diags.Render(r.Sources))
	}
}

// A primary artifact picked per run: the reference writes the stage's serviceInputs with
// `primaryArtifactRef: <+input>` and `sources: <+input>` (the picked source's own inputs, none
// while its fields are fixed). Only the choice is asked; the run deploys the picked source.
func TestPickedArtifactSource(t *testing.T) {
	service := `service:
  name: a
  identifier: a
  serviceDefinition:
    type: Kubernetes
    spec:
      artifacts:
        primary:
          primaryArtifactRef: <+input>
          sources:
            - {identifier: stable, type: DockerRegistry, spec: {connectorRef: hub, imagePath: library/nginx, tag: "1.27"}}
            - {identifier: edge, type: DockerRegistry, spec: {connectorRef: hub, imagePath: library/nginx, tag: "1.29"}}
`
	stage := multiStage(`          service:
            serviceRef: a
            serviceInputs:
              serviceDefinition:
                type: Kubernetes
                spec:
                  artifacts:
                    primary:
                      primaryArtifactRef: <+input>
                      sources: <+input>
          environment: {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}]}
`)
	load1 := func(service, src string, opts load.Options) *load.Result {
		dir := t.TempDir()
		files, _ := filepath.Glob("testdata/multi/*.yaml")
		for _, f := range files {
			b, _ := os.ReadFile(f)
			os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
		os.WriteFile(filepath.Join(dir, "svc-a.yaml"), []byte(service), 0o644)
		os.WriteFile(filepath.Join(dir, "connector-hub.yaml"), []byte("connector: {name: hub, identifier: hub, type: DockerRegistry, spec: {dockerRegistryUrl: https://registry.example, providerType: DockerHub, auth: {type: Anonymous}}}\n"), 0o644)
		p := filepath.Join(dir, "pipeline.yaml")
		os.WriteFile(p, []byte(src), 0o644)
		r, err := load.File(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const ref = "pipeline.stages.deploy.spec.service.serviceInputs.serviceDefinition.spec.artifacts.primary.primaryArtifactRef"
	r := load1(service, stage, load.Options{})
	if !r.OK() || len(r.Open) != 1 || r.Open[0].FQN != ref {
		t.Fatalf("validate: open %v\n%s", r.Open, r.Diags.Render(r.Sources))
	}
	r = load1(service, stage, load.Options{ForRun: true, Sets: []string{ref + "=edge"}})
	if !r.OK() {
		t.Fatalf("run with the source picked:\n%s", r.Diags.Render(r.Sources))
	}
	if a := r.Plan.Stages[0].Deploy.Service.Artifact; a == nil || a.ID != "edge" || a.Tag != "1.29" {
		t.Errorf("artifact %+v", a)
	}
	if r := load1(service, stage, load.Options{ForRun: true}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "runtime input "+ref+" has no value") {
		t.Errorf("run without a pick:\n%s", r.Diags.Render(r.Sources))
	}
	// With the artifact fixed in the service, its sources are not the stage's to fill.
	fixed := strings.Replace(service, "primaryArtifactRef: <+input>", "primaryArtifactRef: stable", 1)
	if r := load1(fixed, stage, load.Options{}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "primary.sources is fixed in the service") {
		t.Errorf("sources of a fixed artifact:\n%s", r.Diags.Render(r.Sources))
	}
}
