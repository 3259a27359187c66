package load_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

// The connectors a CI pipeline of these tests names.
var ciConnectors = map[string]string{
	"k8s.yaml": "connector:\n  name: k8s\n  identifier: k8s\n  type: K8sCluster\n  spec: {credential: {type: InheritFromDelegate}}\n",
	"git.yaml": "connector:\n  name: git\n  identifier: git\n  type: Git\n  spec: {url: https://git.example.com/app.git, connectionType: Repo, type: Http, spec: {username: u, passwordRef: pw}}\n",
}

// ciPipeline is a pipeline with the codebase of connector git and the stage specs given (each
// the YAML under one CI stage's spec, indented for it), stages named s1, s2, ...
func ciPipeline(specs ...string) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: p\n  identifier: p\n  properties:\n    ci:\n      codebase: {connectorRef: git, build: {type: branch, spec: {branch: main}}}\n  stages:\n")
	for i, s := range specs {
		fmt.Fprintf(&b, "    - stage:\n        name: s%d\n        identifier: s%d\n        type: CI\n        spec:\n%s", i+1, i+1, s)
	}
	return b.String()
}

const (
	ciK8s   = "          infrastructure: {type: KubernetesDirect, spec: {connectorRef: k8s, namespace: ci}}\n"
	ciSteps = "          execution:\n            steps:\n              - step: {type: Run, name: a, identifier: a, spec: {image: alpine, shell: Sh, command: make}}\n"
)

// A CI stage is planned with its pod (connectors resolved, the codebase's among them) and starts
// with the codebase clone; a later stage's UseFromStage gets a pod of the same infrastructure,
// also when it writes `useFromStage` alone (the reference's schema makes `type` optional).
func TestCIStagePlan(t *testing.T) {
	files := map[string]string{"p.yaml": ciPipeline("          cloneCodebase: true\n"+ciK8s+"          serviceDependencies: [{identifier: db, name: db, type: Service, spec: {image: postgres:16, args: [-c, fsync=off]}}]\n"+ciSteps,
		"          infrastructure: {useFromStage: s1}\n"+ciSteps)}
	for k, v := range ciConnectors {
		files[k] = v
	}
	r := loadIn(t, files, "p.yaml", load.Options{ForRun: true})
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	s1, s2 := r.Plan.Stages[0], r.Plan.Stages[1]
	if s1.Pod == nil || s1.Pod.Connector.ID != "k8s" || s1.Pod.Git["git"].URL == "" {
		t.Fatalf("stage s1's pod: %+v", s1.Pod)
	}
	clone := s1.Children[0]
	if clone.ID != "cloneCodebase" || clone.Traits == nil || clone.Traits.Activity != contract.ContainerStep || clone.Traits.Container != plan.ContainerHelper {
		t.Errorf("s1 starts with %+v", clone)
	}
	if spec, _ := clone.Spec.(map[string]any); spec["cloneDirectory"] != "/harness" || spec["depth"] != "50" || spec["connectorRef"] != "git" {
		t.Errorf("clone spec %v", clone.Spec)
	}
	if deps := s1.Children[1]; deps.ID != "db" || deps.Type != "Background" || deps.Traits == nil || deps.Traits.Container != plan.ContainerOwn {
		t.Errorf("s1's service dependency: %+v", deps)
	} else if spec, _ := deps.Spec.(map[string]any); spec["image"] != "postgres:16" || fmt.Sprint(spec["args"]) != "[-c fsync=off]" {
		t.Errorf("service dependency spec %v", deps.Spec)
	}
	if s2.Pod == nil || s2.Pod.Connector.ID != "k8s" || len(s2.Children) != 1 || s2.Pod.Git != nil {
		t.Errorf("stage s2 (UseFromStage, no clone): pod %+v, %d steps", s2.Pod, len(s2.Children))
	}
}

// What a CI stage cannot be gets its verdict before a run (spec 22).
func TestCIStageVerdicts(t *testing.T) {
	for _, c := range []struct {
		spec string
		sev  diag.Severity
		want string
	}{
		{ciSteps, diag.Error, "CI stage s1 has no infrastructure"},
		{"          runtime: {type: Cloud, spec: {}}\n" + ciSteps, diag.Unsupported, "stage s1 runs on runtime Cloud"},
		{"          infrastructure: {type: VM, spec: {poolName: p}}\n" + ciSteps, diag.Unsupported, "stage s1 runs on VM infrastructure"},
		{"          infrastructure: {type: UseFromStage, useFromStage: s9}\n" + ciSteps, diag.Error, `useFromStage "s9" is not an earlier CI stage`},
		{"          infrastructure: {useFromStage: s9}\n" + ciSteps, diag.Error, `useFromStage "s9" is not an earlier CI stage`},
		{"          infrastructure: {spec: {namespace: ci}}\n" + ciSteps, diag.Error, "infrastructure needs `type` (KubernetesDirect), or `useFromStage`"},
		{ciK8s + "          platform: {os: MacOS, arch: Arm64}\n" + ciSteps, diag.Unsupported, "platform os MacOS"},
		{ciK8s + "          caching: {enabled: true}\n" + ciSteps, diag.Warning, "caching is ignored"},
		{ciK8s + "          slsa_provenance: {enabled: true}\n" + ciSteps, diag.Unsupported, "slsa_provenance would attest"},
		{ciK8s + "          serviceDependencies: [{identifier: db, name: db, type: Service, spec: {connectorRef: hub}}]\n" + ciSteps, diag.Error, "service dependency db names no image"},
		{ciK8s + "          serviceDependencies: [{identifier: db, type: Database, spec: {image: postgres}}]\n" + ciSteps, diag.Error, `service dependency type "Database" is not one of Service`},
		{ciK8s + "          sharedPaths: [cache]\n" + ciSteps, diag.Error, `shared path "cache" is not absolute`},
		{ciK8s + "          deploymentType: Kubernetes\n" + ciSteps, diag.Warning, `unknown key "deploymentType" in CI stage spec; ignored`},
		{ciK8s + ciSteps + "            rollbackSteps:\n              - step: {type: Run, name: r, identifier: r, spec: {image: alpine, command: x}}\n", diag.Error, "CI stages have no rollback section"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: SaveCacheS3, name: c, identifier: c, spec: {connectorRef: aws, bucket: b, key: k, sourcePaths: [x], archiveFormat: Zstd}}\n", diag.Unsupported, "archiveFormat Zstd"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: RestoreCacheS3, name: c, identifier: c, spec: {bucket: b, key: k}}\n", diag.Error, `missing required field "connectorRef"`},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: BuildAndPushECR, name: b, identifier: b, spec: {connectorRef: aws, account: \"1\", imageName: app, tags: [v1]}}\n", diag.Error, `missing required field "region"`},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: BuildAndPushGAR, name: b, identifier: b, spec: {connectorRef: gcp, host: h, projectID: p, imageName: app, tags: [v1]}}\n", diag.Unsupported, "Gantry does not run BuildAndPushGAR steps yet"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: BuildAndPushDockerRegistry, name: b, identifier: b, spec: {connectorRef: hub, repo: app, tags: [v1], runAsUser: \"1000\"}}\n", diag.Unsupported, "runAsUser 1000 would need rootless BuildKit"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: BuildAndPushDockerRegistry, name: b, identifier: b, spec: {connectorRef: hub, repo: app, tags: [v1], optimize: true}}\n", diag.Warning, "optimize is ignored"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: BuildAndPushDockerRegistry, name: b, identifier: b, spec: {connectorRef: hub, repo: app}}\n", diag.Error, `missing required field "tags"`},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: RunTests, name: t, identifier: t, spec: {image: maven, language: Java, buildTool: Maven, args: test, runOnlySelectedTests: true}}\n", diag.Warning, "runOnlySelectedTests is ignored: test selection is the vendor's Test Intelligence"},
		{ciK8s + "          execution:\n            steps:\n              - step: {type: RunTests, name: t, identifier: t, spec: {image: maven, language: Java, buildTool: Ant}}\n", diag.Error, "buildTool"},
	} {
		files := map[string]string{"p.yaml": ciPipeline(c.spec)}
		for k, v := range ciConnectors {
			files[k] = v
		}
		r := loadIn(t, files, "p.yaml", load.Options{})
		found := false
		for _, d := range r.Diags {
			found = found || (d.Severity == c.sev && strings.Contains(d.Message, c.want))
		}
		if !found {
			t.Errorf("want %s %q:\n%s", c.sev, c.want, r.Diags.Render(r.Sources))
		}
	}
	// cloneCodebase needs the pipeline's codebase.
	src := strings.Replace(ciPipeline("          cloneCodebase: true\n"+ciK8s+ciSteps), "  properties:\n    ci:\n      codebase: {connectorRef: git, build: {type: branch, spec: {branch: main}}}\n", "", 1)
	r := load.Bytes("p.yaml", []byte(src), load.Options{})
	if len(codes(r.Diags, diag.Error, "missing-codebase")) != 1 {
		t.Errorf("want missing-codebase:\n%s", r.Diags.Render(r.Sources))
	}
}

// C134: a CI stage on a runtime is unsupported-runtime without a build infrastructure, naming
// the setting; with one it runs there, and its steps without an image get the default image.
func TestC134RuntimeOnBuildInfrastructure(t *testing.T) {
	stage := "          runtime: {type: Cloud, spec: {}}\n          platform: {os: Linux, arch: Amd64}\n" +
		"          execution:\n            steps:\n              - step: {type: Run, name: a, identifier: a, spec: {shell: Sh, command: make}}\n" +
		"              - step: {type: Run, name: b, identifier: b, spec: {image: golang:1.22, shell: Sh, command: make}}\n"
	files := map[string]string{"p.yaml": ciPipeline(stage)}
	for k, v := range ciConnectors {
		files[k] = v
	}
	r := loadIn(t, files, "p.yaml", load.Options{ForRun: true})
	if d := codes(r.Diags, diag.Unsupported, "unsupported-runtime"); len(d) != 1 || !strings.Contains(d[0].Hint, "--ci-connector") {
		t.Fatalf("want unsupported-runtime naming --ci-connector:\n%s", r.Diags.Render(r.Sources))
	}
	r = loadIn(t, files, "p.yaml", load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Connector: "k8s", Namespace: "builds", Image: "alpine:3.20"}})
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	s1 := r.Plan.Stages[0]
	if s1.Pod == nil || s1.Pod.Connector.ID != "k8s" || s1.Pod.Infra.(map[string]any)["namespace"] != "builds" {
		t.Fatalf("stage s1's pod: %+v", s1.Pod)
	}
	for id, want := range map[string]string{"a": "alpine:3.20", "b": "golang:1.22"} {
		var n *plan.Node
		for _, c := range s1.Children {
			if c.ID == id {
				n = c
			}
		}
		if spec, _ := n.Spec.(map[string]any); spec["image"] != want {
			t.Errorf("step %s's image %v, want %s", id, spec["image"], want)
		}
	}
	// A missing build connector is said at the runtime.
	r = loadIn(t, files, "p.yaml", load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Connector: "nope", Namespace: "builds", Image: "alpine:3.20"}})
	if text := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(text, `"nope"`) || !strings.Contains(text, "runtime: {type: Cloud") {
		t.Errorf("missing build connector:\n%s", text)
	}
}

// A CI stage on a runtime runs on a build machine when there are build machines and no build
// cluster: its steps without an image run there, the platform and selectors choose the
// machine; a step with an image or a BuildAndPush step is unsupported there unless the
// machines have containerd, and a plugin always, named.
func TestRuntimeOnBuildMachine(t *testing.T) {
	stage := "          runtime: {type: Docker, spec: {}}\n          platform: {os: Linux, arch: Arm64}\n" +
		"          execution:\n            steps:\n              - step: {type: Run, name: a, identifier: a, spec: {shell: Bash, command: go test ./...}}\n" +
		"              - step: {type: Background, name: db, identifier: db, spec: {shell: Sh, command: ./serve}}\n"
	files := map[string]string{"p.yaml": ciPipeline(stage)}
	for k, v := range ciConnectors {
		files[k] = v
	}
	machines := load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Machines: true}}
	r := loadIn(t, files, "p.yaml", machines)
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	if m := r.Plan.Stages[0].Pod.Machine; m == nil || m.OS != "Linux" || m.Arch != "Arm64" || r.Plan.Stages[0].Pod.Connector.ID != "" {
		t.Fatalf("stage s1's pod %+v: want a build machine of Linux/Arm64", r.Plan.Stages[0].Pod)
	}
	// The same with the build a runtime input given at the run (--set): the pipeline as the
	// inputs made it runs on the build machine too.
	files["p.yaml"] = strings.Replace(ciPipeline(stage), "build: {type: branch, spec: {branch: main}}", "build: <+input>", 1)
	withSet := machines
	withSet.Sets = []string{"pipeline.properties.ci.codebase.build={type: branch, spec: {branch: main}}"}
	if r := loadIn(t, files, "p.yaml", withSet); !r.OK() || len(r.Diags) > 0 || r.Plan.Stages[0].Pod.Machine == nil {
		t.Fatalf("with the build given by --set, want a clean plan on a build machine:\n%s", r.Diags.Render(r.Sources))
	}
	files["p.yaml"] = ciPipeline(stage)
	withImage := stage + "              - step: {type: Run, name: c, identifier: c, spec: {image: golang:1.22, connectorRef: hub, shell: Sh, command: make}}\n" +
		"              - step: {type: BuildAndPushDockerRegistry, name: e, identifier: e, spec: {connectorRef: hub, repo: org/app, tags: [v1]}}\n"
	imaged := withImage + "              - step: {type: Plugin, name: d, identifier: d, spec: {image: plugins/slack}}\n"
	files["docker.yaml"] = "connector:\n  name: hub\n  identifier: hub\n  type: DockerRegistry\n  spec: {dockerRegistryUrl: https://index.docker.io/v1/, providerType: DockerHub, auth: {type: UsernamePassword, spec: {username: u, passwordRef: hub_pw}}}\n"
	files["p.yaml"] = ciPipeline(imaged)
	r = loadIn(t, files, "p.yaml", machines)
	d := codes(r.Diags, diag.Unsupported, "unsupported-on-build-machine")
	if len(d) != 3 || !strings.Contains(d[0].Message, "step c names an image") || !strings.Contains(d[1].Message, "step e (BuildAndPushDockerRegistry) builds") || !strings.Contains(d[2].Message, "step d (Plugin)") {
		t.Fatalf("want the imaged step and the plugin unsupported on a build machine:\n%s", r.Diags.Render(r.Sources))
	}
	if !strings.Contains(d[0].Hint, "--containerd") {
		t.Errorf("the hint names no --containerd: %s", d[0].Hint)
	}
	// With containerd, the imaged step runs in a container on a machine that runs them, its
	// image pulled through its connector; a plugin still does not.
	withContainers := load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Machines: true, Containerd: "/run/containerd/containerd.sock"}}
	r = loadIn(t, files, "p.yaml", withContainers)
	if d := codes(r.Diags, diag.Unsupported, "unsupported-on-build-machine"); len(d) != 1 || !strings.Contains(d[0].Message, "step d (Plugin)") {
		t.Fatalf("want only the plugin unsupported:\n%s", r.Diags.Render(r.Sources))
	}
	files["p.yaml"] = ciPipeline(withImage)
	r = loadIn(t, files, "p.yaml", withContainers)
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	if pod := r.Plan.Stages[0].Pod; !pod.Machine.Containers || pod.Registries["hub"].PasswordRef != "hub_pw" {
		t.Errorf("pod %+v: want a machine running containers, with the hub connector", pod)
	}
	// portBindings: relayed for a container on a machine that runs them; ignored, said, for a
	// program without an image (it listens on the machine itself); a port out of range broken.
	files["p.yaml"] = ciPipeline(withImage + "              - step: {type: Background, name: pg, identifier: pg, spec: {image: postgres:16, connectorRef: hub, portBindings: {\"15432\": \"5432\"}}}\n")
	if r = loadIn(t, files, "p.yaml", withContainers); !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	files["p.yaml"] = ciPipeline(strings.Replace(stage, "command: ./serve}", "command: ./serve, portBindings: {\"8080\": \"8080\"}}", 1))
	r = loadIn(t, files, "p.yaml", withContainers)
	if d := codes(r.Diags, diag.Warning, "not-implemented"); !r.OK() || len(d) != 1 || !strings.Contains(d[0].Message, "runs on the build machine itself") {
		t.Fatalf("want portBindings of a step without an image said to be ignored:\n%s", r.Diags.Render(r.Sources))
	}
	files["p.yaml"] = ciPipeline(withImage + "              - step: {type: Background, name: pg, identifier: pg, spec: {image: postgres:16, connectorRef: hub, portBindings: {\"99999\": \"5432\"}}}\n")
	if d := codes(loadIn(t, files, "p.yaml", withContainers).Diags, diag.Error, "invalid-value"); len(d) != 1 || !strings.Contains(d[0].Message, `"99999"`) {
		t.Fatalf("want the port out of range broken, got %v", d)
	}
	files["p.yaml"] = ciPipeline(withImage)
	// Without build machines or a cluster, both ways out are named.
	r = loadIn(t, files, "p.yaml", load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{}})
	if d := codes(r.Diags, diag.Unsupported, "unsupported-runtime"); len(d) != 1 || !strings.Contains(d[0].Hint, "--build-machine") || !strings.Contains(d[0].Hint, "--ci-connector") {
		t.Fatalf("want unsupported-runtime naming both ways out:\n%s", r.Diags.Render(r.Sources))
	}
}

// examples/ci (a CI stage that tests, caches and builds, then a Deployment stage) loads for a
// run without a diagnostic, its trigger too.
func TestCIExample(t *testing.T) {
	r, err := load.File(filepath.Join("..", "..", "examples", "ci", "pipeline.yaml"),
		load.Options{ForRun: true, Sets: []string{"pipeline.properties.ci.codebase.build={type: branch, spec: {branch: main}}"}})
	if err != nil || !r.OK() || r.Plan == nil || len(r.Diags) > 0 {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	build, ship := r.Plan.Stages[0], r.Plan.Stages[1]
	if build.Pod == nil || build.Pod.Connector.ID != "build_cluster" || build.Pod.Git["app_repo"].URL == "" || build.Pod.Aws["aws"].ID != "aws" {
		t.Errorf("build stage's pod %+v", build.Pod)
	}
	if ship.Deploy == nil || ship.Deploy.Service.ID != "app" {
		t.Errorf("ship stage %+v", ship.Deploy)
	}
	tr, err := load.File(filepath.Join("..", "..", "examples", "ci", "trigger.yaml"), load.Options{})
	if err != nil || !tr.OK() || len(tr.Diags) > 0 {
		t.Fatalf("trigger: %v\n%s", err, tr.Diags.Render(tr.Sources))
	}
}

// examples/ci-local (make run-ci-local) loads for a run on a build machine with containerd
// without a diagnostic: its Build stage on the machine, running containers, its connectors
// resolved; its Deploy stage on the custom deployment template beside it. Without containerd
// its steps with an image are unsupported, naming --containerd.
func TestCILocalExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "ci-local", "pipeline.yaml")
	build := []string{"pipeline.properties.ci.codebase.build={type: branch, spec: {branch: main}}"}
	r, err := load.File(path, load.Options{ForRun: true, Sets: build,
		BuildInfra: &pipeline.BuildInfra{Machines: true, Containerd: "/run/containerd/containerd.sock"}})
	if err != nil || !r.OK() || r.Plan == nil || len(r.Diags) > 0 {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	b, d := r.Plan.Stages[0], r.Plan.Stages[1]
	if b.Pod == nil || b.Pod.Machine == nil || !b.Pod.Machine.Containers || b.Pod.Git["app_repo"].URL == "" ||
		b.Pod.Registries["registry"].URL == "" || b.Pod.Registries["builds_registry"].URL == "" {
		t.Errorf("build stage's pod %+v", b.Pod)
	}
	if d.Deploy == nil || d.Deploy.Service.ID != "app" {
		t.Errorf("deploy stage %+v", d.Deploy)
	}
	r, _ = load.File(path, load.Options{ForRun: true, Sets: build, BuildInfra: &pipeline.BuildInfra{Machines: true}})
	if d := codes(r.Diags, diag.Unsupported, "unsupported-on-build-machine"); len(d) != 3 || !strings.Contains(d[0].Hint, "--containerd") {
		t.Fatalf("without containerd, want the store, the smoke test and the image unsupported:\n%s", r.Diags.Render(r.Sources))
	}
}

// A codebase with repoName and no connectorRef is a repository of the vendor's own Git hosting:
// a stage that clones it is unsupported, naming it, and one that does not clone runs; with
// neither field the codebase names nothing and is an error.
func TestCodebaseWithoutConnector(t *testing.T) {
	vendor := "      codebase: {repoName: app, build: {type: branch, spec: {branch: main}}}\n"
	base := "      codebase: {connectorRef: git, build: {type: branch, spec: {branch: main}}}\n"
	for _, c := range []struct {
		codebase, clone string
		sev             diag.Severity
		code, want      string
	}{
		{vendor, "true", diag.Unsupported, "unsupported-codebase", "clones repository app, which the codebase names without a connectorRef"},
		{vendor, "false", diag.Warning, "", ""},
		{"      codebase: {build: {type: branch, spec: {branch: main}}}\n", "false", diag.Error, "missing-field", `codebase is missing required field "connectorRef"`},
	} {
		src := strings.Replace(ciPipeline("          cloneCodebase: "+c.clone+"\n"+ciK8s+ciSteps), base, c.codebase, 1)
		files := map[string]string{"p.yaml": src}
		for k, v := range ciConnectors {
			files[k] = v
		}
		r := loadIn(t, files, "p.yaml", load.Options{ForRun: true})
		if c.code == "" {
			if !r.OK() || len(r.Diags) > 0 {
				t.Errorf("codebase %q, cloneCodebase %s: want a clean plan:\n%s", c.codebase, c.clone, r.Diags.Render(r.Sources))
			}
			continue
		}
		if d := codes(r.Diags, c.sev, c.code); len(d) != 1 || !strings.Contains(d[0].Message, c.want) {
			t.Errorf("codebase %q, cloneCodebase %s: want %s %s %q:\n%s", c.codebase, c.clone, c.sev, c.code, c.want, r.Diags.Render(r.Sources))
		}
	}
}

// A Run step with an image and no command is valid, as in the reference's schema: its image's
// entrypoint runs, as a Plugin step's does.
func TestRunStepWithoutCommand(t *testing.T) {
	files := map[string]string{"p.yaml": ciPipeline(ciK8s + "          execution:\n            steps:\n              - step: {type: Run, name: a, identifier: a, spec: {image: alpine}}\n")}
	for k, v := range ciConnectors {
		files[k] = v
	}
	r := loadIn(t, files, "p.yaml", load.Options{ForRun: true})
	if !r.OK() || len(r.Diags) > 0 {
		t.Fatalf("want a clean plan:\n%s", r.Diags.Render(r.Sources))
	}
	// With neither a command nor an image, nothing would run: an error at the step's spec.
	files["p.yaml"] = ciPipeline(ciK8s + "          execution:\n            steps:\n              - step: {type: Run, name: a, identifier: a, spec: {shell: Sh}}\n")
	r = loadIn(t, files, "p.yaml", load.Options{ForRun: true})
	if got := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(got, "Run step has no command and no image: it would run nothing") {
		t.Errorf("want the step refused:\n%s", got)
	}
}
