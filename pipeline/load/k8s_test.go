package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// The Kubernetes steps' specs decode into their stepspec types: a list may be an expression,
// a mesh routing is read to its destinations without unknown keys, and a plain scalar where
// the reference takes a list is an error at its line and column.
func TestK8sStepSpecs(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadDir(filepath.Join("..", "..", "examples", "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range src {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "pipeline.yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "k8s", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "web"), os.DirFS(filepath.Join("..", "..", "examples", "k8s", "web"))); err != nil {
		t.Fatal(err)
	}
	pipeline := func(steps string) string {
		return `pipeline:
  name: p
  identifier: p
  variables:
    - {name: files, type: String, value: "jobs/a.yaml,jobs/b.yaml"}
  stages:
    - stage:
        name: d
        identifier: d
        type: Deployment
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment: {environmentRef: dev, infrastructureDefinitions: [{identifier: dev_cluster}]}
          execution:
            steps:
` + steps + `        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
`
	}
	load1 := func(steps string) (string, bool) {
		if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(pipeline(steps)), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Diags.Render(r.Sources), r.OK()
	}
	ok := `              - step: {type: K8sApply, name: a, identifier: a, timeout: 5m, spec: {filePaths: <+pipeline.variables.files>, skipDryRun: true}}
              - step: {type: K8sDelete, name: del, identifier: del, timeout: 5m, spec: {deleteResources: {type: ResourceName, spec: {resourceNames: [Deployment/web]}}}}
              - step:
                  type: K8sTrafficRouting
                  name: route
                  identifier: route
                  timeout: 5m
                  spec:
                    type: config
                    trafficRouting:
                      provider: istio
                      spec:
                        name: web
                        hosts: [web]
                        routes:
                          - route:
                              type: http
                              name: main
                              rules: [{rule: {type: uri, spec: {value: /api, matchType: prefix}}}, {rule: {type: headers, spec: {values: [{key: x-canary, value: "1"}]}}}]
                              destinations: [{destination: {host: stable, weight: 80}}, {destination: {host: stage, weight: <+pipeline.variables.files>, port: 8080}}]
`
	if text, valid := load1(ok); !valid || strings.Contains(text, "unknown key") || strings.Contains(text, "error") {
		t.Errorf("valid K8s steps:\n%s", text)
	}
	bad := "              - step: {type: K8sApply, name: a, identifier: a, timeout: 5m, spec: {filePaths: jobs/a.yaml}}\n"
	if text, valid := load1(bad); valid || !strings.Contains(text, "pipeline.yaml:17:95") || !strings.Contains(text, "filePaths must be a list") {
		t.Errorf("a plain scalar for filePaths:\n%s", text)
	}
}
