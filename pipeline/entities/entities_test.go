package entities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/internal/charttest"
	"github.com/gantry-cd/gantry/pipeline/load"
)

// copyExample copies examples/k8s into a temporary folder and applies edits (file → new text,
// "" deletes the file).
func copyExample(t *testing.T, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "..", "examples", "k8s")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, text := range edits {
		if text == "" {
			os.Remove(filepath.Join(dir, f))
			continue
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func replaceIn(t *testing.T, file, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "k8s", file))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	return strings.Replace(string(b), old, new, 1)
}

func TestExampleResolves(t *testing.T) {
	dir := copyExample(t, nil)
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	dev, prod := r.Plan.Stages[0].Deploy, r.Plan.Stages[2].Deploy
	if dev == nil || prod == nil || r.Plan.Stages[1].Deploy != nil {
		t.Fatal("Deployment stages not resolved")
	}
	if len(dev.Service.Manifests) != 1 || len(dev.Service.Manifests[0].Files) != 3 || len(dev.Service.Manifests[0].Values) != 1 {
		t.Fatalf("manifests not embedded: %+v", dev.Service.Manifests)
	}
	if dev.Infra.Namespace != "gantry-dev" || dev.Infra.Connector.Type != "InheritFromDelegate" || dev.Environment.Type != "PreProduction" {
		t.Errorf("dev target %+v %+v", dev.Infra, dev.Environment)
	}
	if prod.ServiceFrom != "deploy_dev" || prod.Service.ID != "web" || len(prod.Environment.ServiceOverrides) != 2 {
		t.Errorf("prod stage: from %q, overrides %v", prod.ServiceFrom, prod.Environment.ServiceOverrides)
	}
}

func TestReferenceErrors(t *testing.T) {
	cases := []struct {
		name  string
		edits map[string]string
		want  []string // in the rendered diagnostics
	}{
		{"missing service", map[string]string{"service.yaml": ""},
			[]string{`pipeline.yaml:22:25: service "web" is not defined`, "root key is `service:`"}},
		{"infrastructure of another environment", map[string]string{"infra-dev.yaml": replaceIn(t, "infra-dev.yaml", "environmentRef: dev", "environmentRef: prod")},
			[]string{`infrastructure definition "dev_cluster" belongs to environment "prod", not "dev"`}},
		{"missing connector", map[string]string{"connector.yaml": ""},
			[]string{`infra-dev.yaml:8:19: connector "local_cluster" is not defined`}},
		{"missing manifest folder", map[string]string{"service.yaml": replaceIn(t, "service.yaml", "web/manifests", "web/nowhere")},
			[]string{"web/nowhere: no such file or folder", "paths are relative to"}},
		{"template syntax", map[string]string{"web/manifests/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Values.name }\n"},
			[]string{"web/manifests/service.yaml:4:", "Go templates"}},
		{"Gcs store", map[string]string{"service.yaml": replaceIn(t, "service.yaml", "type: Local", "type: Gcs")},
			[]string{"manifest store Gcs is valid in the reference, but Gantry does not run it yet", `service "web" (`, "uses what Gantry cannot run yet"}},
		{"git store without its fields", map[string]string{"service.yaml": replaceIn(t, "service.yaml", "type: Local", "type: Github")},
			[]string{`spec is missing required field "connectorRef"`, `spec is missing required field "gitFetchType"`}},
		{"no tag and no connector", map[string]string{"service.yaml": replaceIn(t, "service.yaml", "                tag: <+pipeline.variables.tag>\n", "")},
			[]string{"artifact source nginx names no tag", "give `tag:`"}},
		{"chart repository without chartName", map[string]string{"service.yaml": chartStore(t, "type: Http\n                spec: {connectorRef: charts}", "HelmChart", ""),
			"charts.yaml": helmRepoConnector("HttpHelmRepo")},
			[]string{`spec is missing required field "chartName"`}},
		{"chart repository store for plain manifests", map[string]string{"service.yaml": chartStore(t, "type: Http\n                spec: {connectorRef: charts}", "K8sManifest", "              chartName: web\n"),
			"charts.yaml": helmRepoConnector("HttpHelmRepo")},
			[]string{"a Http store holds Helm charts; Gantry reads it for HelmChart manifests only"}},
		{"ECR chart registry", map[string]string{"service.yaml": chartStore(t, "type: OciHelmChart\n                spec: {config: {type: ECR, spec: {connectorRef: aws, region: us-east-1}}}", "HelmChart", "              chartName: web\n")},
			[]string{"OCI chart registry type ECR is valid in the reference, but Gantry does not run it yet"}},
		{"chart connector of another type", map[string]string{"service.yaml": chartStore(t, "type: OciHelmChart\n                spec: {config: {type: Generic, spec: {connectorRef: charts}}}", "HelmChart", "              chartName: web\n"),
			"charts.yaml": helmRepoConnector("HttpHelmRepo")},
			[]string{"connector charts is a HttpHelmRepo connector; a OciHelmChart store needs an OciHelmRepo connector"}},
		{"K8sApply with neither filePaths nor manifestSource", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
			"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sApply\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    skipDryRun: true")},
			[]string{"K8sApply needs `filePaths` (files of the service's manifests) or `manifestSource`"}},
		{"K8sApply manifestSource of a missing folder", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
			"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sApply\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    manifestSource: {type: K8sManifest, spec: {store: {type: Local, spec: {paths: [ops]}}}}")},
			[]string{"stage deploy_dev, step rollback, manifestSource: ops: no such file or folder"}},
		{"duplicate environment", map[string]string{"env-dev2.yaml": replaceIn(t, "env-dev.yaml", "name: Development", "name: Dev again")},
			[]string{`environment "dev" is defined twice`}},
		{"bad namespace", map[string]string{"infra-dev.yaml": replaceIn(t, "infra-dev.yaml", "namespace: gantry-dev", "namespace: Gantry_Dev")},
			[]string{`namespace "Gantry_Dev" is not a valid Kubernetes namespace name`}},
		{"useFromStage of a later stage", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "serviceRef: web", "useFromStage:\n              stage: deploy_prod")},
			[]string{`useFromStage "deploy_prod" is not an earlier Deployment stage`}},
		{"K8sPatch merge strategy", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sPatch\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {workload: Deployment/web, mergeStrategyType: Strategical, source: {type: Inline, spec: {content: '{}'}}}")},
			[]string{"mergeStrategyType", "Strategic"}},
		{"K8sPatch source from Git", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sPatch\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {workload: Deployment/web, mergeStrategyType: Merge, source: {type: Github, spec: {connectorRef: git, paths: [p.yaml]}}}")},
			[]string{"K8sPatch source: a Github store is not read yet"}},
		{"K8sPatch Inline source without content", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sPatch\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {workload: Deployment/web, mergeStrategyType: Merge, source: {type: Inline, spec: {}}}")},
			[]string{"an Inline source needs `content`"}},
		{"K8sRollout command", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sRollout\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {command: rewind, resources: {type: ReleaseName, spec: {}}}")},
			[]string{"command", "undo"}},
		{"K8sRollout resource names", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"type: K8sRollout\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {command: restart, resources: {type: ResourceName, spec: {}}}")},
			[]string{"resources of type ResourceName need `resourceNames`"}},
		{"K8s step outside a Deployment stage", map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "type: HarnessApproval", "type: K8sScale")},
			[]string{"K8sScale steps deploy a service and run only in Deployment stages"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyExample(t, c.edits)
			r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() || r.Plan != nil {
				t.Fatal("accepted")
			}
			text := r.Diags.Render(r.Sources)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestEntityFilesValidateAlone(t *testing.T) {
	dir := copyExample(t, map[string]string{"connector.yaml": "connector:\n  name: c\n  identifier: c\n  type: K8sCluster\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {}\n"})
	r, _ := load.File(filepath.Join(dir, "connector.yaml"), load.Options{})
	if r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "needs spec.masterUrl and spec.auth") {
		t.Errorf("ManualConfig without URL accepted:\n%s", r.Diags.Render(r.Sources))
	}
	r, _ = load.File(filepath.Join(dir, "service.yaml"), load.Options{})
	if !r.OK() {
		t.Errorf("service:\n%s", r.Diags.Render(r.Sources))
	}
}

func TestIgnoredFieldsWarn(t *testing.T) {
	dir := copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml", "pruningEnabled: true\n", "pruningEnabled: true\n                    commandFlags:\n                      - commandType: Apply\n                        flag: --server-side\n")})
	r, _ := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if !r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "commandFlags is ignored") {
		t.Errorf("want a warning and a valid pipeline:\n%s", r.Diags.Render(r.Sources))
	}
}

// chartStore makes the example's manifest a typ manifest from store, with more spec fields.
func chartStore(t *testing.T, store, typ, more string) string {
	t.Helper()
	text := replaceIn(t, "service.yaml", "type: Local\n                spec:\n                  paths: [web/manifests]\n              valuesPaths: [web/values.yaml]\n", store+"\n"+more)
	return strings.Replace(text, "type: K8sManifest", "type: "+typ, 1)
}

func helmRepoConnector(typ string) string {
	return "connector:\n  name: Charts\n  identifier: charts\n  type: " + typ + "\n  spec:\n    helmRepoUrl: https://charts.example.com\n    auth:\n      type: UsernamePassword\n      spec: {username: deployer, passwordRef: chart_token}\n"
}

// HelmChart manifests of chart repositories resolve to the repository, its connector, the
// chart's name, version and values paths; the chart is pulled when the stage runs.
func TestChartRepositoriesResolve(t *testing.T) {
	for _, c := range []struct{ store, connector, url string }{
		{"type: Http\n                spec: {connectorRef: charts}", "HttpHelmRepo", "https://charts.example.com"},
		{"type: OciHelmChart\n                spec: {basePath: team/charts, config: {type: Generic, spec: {connectorRef: charts}}}", "OciHelmRepo", "https://charts.example.com"},
	} {
		dir := copyExample(t, map[string]string{
			"service.yaml": chartStore(t, c.store, "HelmChart", "              chartName: web\n              chartVersion: <+pipeline.variables.tag>\n              valuesPaths: [values-prod.yaml]\n"),
			"charts.yaml":  helmRepoConnector(c.connector)})
		r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
		if err != nil || !r.OK() {
			t.Fatalf("%s: %v\n%s", c.connector, err, r.Diags.Render(r.Sources))
		}
		m := r.Plan.Stages[0].Deploy.Service.Manifests[0]
		ch := m.Chart
		if ch == nil || ch.Name != "web" || ch.Version != "<+pipeline.variables.tag>" || ch.Connector.URL != c.url ||
			ch.Connector.PasswordRef != "chart_token" || len(ch.ValuesPaths) != 1 || m.Folder != "web" || len(m.Files) != 0 {
			t.Errorf("%s: manifest %+v chart %+v", c.connector, m, ch)
		}
		if c.connector == "OciHelmRepo" && ch.BasePath != "team/charts" {
			t.Errorf("basePath %q", ch.BasePath)
		}
	}
}

// examples/k8s/helm.yaml (NativeHelm) resolves; what the reference refuses or Gantry cannot
// run is reported where it is written.
func TestNativeHelm(t *testing.T) {
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "k8s", file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	r, err := load.File(filepath.Join(copyExample(t, nil), "helm.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	if d := r.Plan.Stages[0].Deploy; d.Type != "NativeHelm" || len(d.Service.Manifests) != 2 || d.Service.Manifests[0].Folder != "charts/web" || d.Infra.ReleaseName != "web" {
		t.Errorf("deployment %+v", d)
	}
	cases := []struct {
		name  string
		edits map[string]string
		ok    bool
		want  string
	}{
		{"a Kubernetes service in a NativeHelm stage", map[string]string{"helm.yaml": strings.Replace(read("helm.yaml"), "serviceRef: web_helm", "serviceRef: web", 1)},
			false, "stage deploy_dev deploys NativeHelm services; service web is a Kubernetes service"},
		{"plain manifests in a NativeHelm service", map[string]string{"service-helm.yaml": strings.Replace(read("service-helm.yaml"), "type: Values", "type: K8sManifest", 1)},
			false, "NativeHelm service web_helm: Gantry deploys a HelmChart manifest and Values overrides as a Helm release, not K8sManifest manifests"},
		{"no chart", map[string]string{"service-helm.yaml": strings.Replace(read("service-helm.yaml"), "type: HelmChart", "type: Values", 1)},
			false, "NativeHelm service web_helm has no HelmChart manifest"},
		{"a Helm step outside a Deployment stage", map[string]string{"pipeline.yaml": strings.Replace(read("pipeline.yaml"), "type: HarnessApproval", "type: HelmDelete", 1)},
			false, "HelmDelete steps deploy a service and run only in Deployment stages"},
		{"a subchart", map[string]string{"service-helm.yaml": strings.Replace(read("service-helm.yaml"), "helmVersion: V3", "helmVersion: V3\n              subChartPath: cache", 1),
			"charts/web/charts/cache/Chart.yaml":            "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
			"charts/web/charts/cache/templates/broken.yaml": "kind: ConfigMap\nmetadata: {name: {{ .Values.name }\n"},
			false, "charts/web/charts/cache"},
		{"chart tests", map[string]string{"helm.yaml": strings.Replace(read("helm.yaml"), "skipSteadyStateCheck: false", "runChartTests: true", 1)},
			true, "runChartTests is ignored: Gantry does not run chart tests yet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := "helm.yaml"
			if _, ok := c.edits["pipeline.yaml"]; ok {
				file = "pipeline.yaml"
			}
			r, err := load.File(filepath.Join(copyExample(t, c.edits), file), load.Options{ForRun: true})
			if err != nil {
				t.Fatal(err)
			}
			text := r.Diags.Render(r.Sources)
			if r.OK() != c.ok || !strings.Contains(text, c.want) {
				t.Errorf("ok %v, want %v, saying %q:\n%s", r.OK(), c.ok, c.want, text)
			}
		})
	}
}

// A Local chart's packaged dependency (charts/NAME.tgz) is carried unpacked, as the run's text
// payloads would corrupt the archive, and the chart still renders with it at submit time.
func TestLocalChartPackagedDependency(t *testing.T) {
	dep := charttest.Package(t, "cache", "0.1.0", map[string]string{"templates/cache.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cache}\n"})
	dir := copyExample(t, map[string]string{"charts/web/charts/cache-0.1.0.tgz": string(dep)})
	r, err := load.File(filepath.Join(dir, "helm.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	var paths []string
	for _, f := range r.Plan.Stages[0].Deploy.Service.Manifests[0].Files {
		paths = append(paths, f.Path)
	}
	got := strings.Join(paths, " ")
	if !strings.Contains(got, "charts/web/charts/cache-0.1.0/templates/cache.yaml") || strings.Contains(got, ".tgz") {
		t.Errorf("chart files %v", paths)
	}
}

// K8sPatch with an Inline patch, K8sRollout, K8sDiff and K8sBlueGreenStageScaleDown are accepted
// for a run, as Kubernetes steps.
func TestNewK8sStepsAccepted(t *testing.T) {
	dir := copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: K8sPatch\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    workload: Deployment/web\n                    mergeStrategyType: Strategic\n                    recordChangeCause: true\n                    source:\n                      type: Inline\n                      spec:\n                        content: |\n                          spec:\n                            replicas: 1\n")})
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	if len(r.Diags) != 0 {
		t.Errorf("diagnostics for a valid K8sPatch:\n%s", r.Diags.Render(r.Sources))
	}
	dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: K8sRollout\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {command: undo, resources: {type: ResourceName, spec: {resourceNames: [Deployment/web]}}}")})
	if r, err = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); err != nil || !r.OK() || len(r.Diags) != 0 {
		t.Errorf("a valid K8sRollout: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: K8sDiff\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {}")})
	if r, err = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); err != nil || !r.OK() || len(r.Diags) != 0 {
		t.Errorf("a K8sDiff: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: K8sBlueGreenStageScaleDown\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {}")})
	if r, err = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); err != nil || !r.OK() || len(r.Diags) != 0 {
		t.Errorf("a K8sBlueGreenStageScaleDown: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	for _, step := range []string{"HelmBGDeploy\n                  spec: {skipSteadyStateCheck: false, ignoreReleaseHistFailStatus: true}",
		"HelmBlueGreenSwapStep\n                  spec: {}", "HelmCanaryDelete\n                  spec: {}",
		"HelmCanaryDeploy\n                  spec: {instanceSelection: {type: Count, spec: {count: 1}}}",
		"K8sTrafficRouting\n                  spec: {type: config, trafficRouting: {provider: istio, spec: {name: web, hosts: [web], routes: [{route: {type: http, name: r, destinations: [{destination: {host: stable, weight: 90}}, {destination: {host: stage, weight: 10}}]}}]}}}",
		"K8sTrafficRouting\n                  spec: {type: inherit, trafficRouting: {routes: [{route: {name: r, destinations: [{destination: {host: stable, weight: 0}}]}}]}}"} {
		dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
			"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
			"name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  type: "+step)})
		if r, err = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); err != nil || !r.OK() || len(r.Diags) != 0 {
			t.Errorf("a %s: %v\n%s", step, err, r.Diags.Render(r.Sources))
		}
	}
	dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: HelmCanaryDeploy\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {}")})
	if r, _ = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "instanceSelection") {
		t.Errorf("a HelmCanaryDeploy without instanceSelection:\n%s", r.Diags.Render(r.Sources))
	}
	dir = copyExample(t, map[string]string{"pipeline.yaml": replaceIn(t, "pipeline.yaml",
		"type: K8sRollingRollback\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec:\n                    pruningEnabled: true",
		"type: K8sTrafficRouting\n                  name: Rollback\n                  identifier: rollback\n                  timeout: 5m\n                  spec: {type: config, trafficRouting: {provider: istoi, spec: {name: web}}}")})
	if r, _ = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true}); r.OK() || !strings.Contains(r.Diags.Render(r.Sources), `did you mean "istio"`) ||
		!strings.Contains(r.Diags.Render(r.Sources), "trafficRouting.spec needs `routes`") {
		t.Errorf("a K8sTrafficRouting with a misspelt provider and no routes:\n%s", r.Diags.Render(r.Sources))
	}
}

// An OpenshiftTemplate beside the service is processed when the run is submitted, with its
// paramsPaths and the service's OpenshiftParam files: a required parameter none of them gives
// is an error at the manifest; OpenshiftParam files with no template are a warning.
func TestOpenshiftTemplateChecked(t *testing.T) {
	const tmpl = "apiVersion: template.openshift.io/v1\nkind: Template\nmetadata: {name: web}\nparameters: [{name: IMAGE, required: true}, {name: REPLICAS, value: \"1\"}]\nobjects:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: web}, data: {IMAGE: \"${IMAGE}\", REPLICAS: \"${REPLICAS}\"}}\n"
	manifest := func(params string) string {
		return replaceIn(t, "service.yaml", "            type: K8sManifest\n            spec:\n              store:\n                type: Local\n                spec:\n                  paths: [web/manifests]\n              valuesPaths: [web/values.yaml]\n",
			"            type: OpenshiftTemplate\n            spec:\n              store:\n                type: Local\n                spec: {paths: [os/web.yaml]}\n              paramsPaths: [os/replicas.params]\n"+params)
	}
	shared := "        - manifest:\n            identifier: shared\n            type: OpenshiftParam\n            spec:\n              store: {type: Local, spec: {paths: [os/image.params]}}\n"
	files := map[string]string{"os/web.yaml": tmpl, "os/replicas.params": "REPLICAS=2\n", "os/image.params": "IMAGE=nginx\n", "service.yaml": manifest(shared)}
	r, err := load.File(filepath.Join(copyExample(t, files), "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("a template with its params: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	ms := r.Plan.Stages[0].Deploy.Service.Manifests
	if len(ms) != 2 || ms[0].Type != "OpenshiftTemplate" || len(ms[0].Files) != 1 || len(ms[0].Values) != 1 || ms[1].Type != "OpenshiftParam" {
		t.Errorf("manifests %+v", ms)
	}

	files["service.yaml"] = manifest("")
	r, _ = load.File(filepath.Join(copyExample(t, files), "pipeline.yaml"), load.Options{ForRun: true})
	if out := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(out, "parameter IMAGE is required") {
		t.Errorf("a required parameter without a value:\n%s", out)
	}

	files["service.yaml"] = replaceIn(t, "service.yaml", "      artifacts:\n", shared+"      artifacts:\n")
	r, _ = load.File(filepath.Join(copyExample(t, files), "pipeline.yaml"), load.Options{ForRun: true})
	if out := r.Diags.Render(r.Sources); !r.OK() || !strings.Contains(out, "OpenshiftParam files give an OpenshiftTemplate's parameters") {
		t.Errorf("params without a template:\n%s", out)
	}
}
