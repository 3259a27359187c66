package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

func TestInitStrategiesValidate(t *testing.T) {
	for _, s := range Strategies {
		service, infra := "web", "dev_cluster"
		switch s { // NativeHelm stages, of examples/k8s's Helm service and infrastructures
		case "helm", "helm-canary":
			service, infra = "web_helm", "dev_helm"
		case "helm-bluegreen":
			service, infra = "web_helm", "dev_helm_bluegreen"
		}
		src, err := Scaffold{Strategy: s, Name: "web " + s, ID: "web_" + strings.ReplaceAll(s, "-", "_"), Service: service, Environment: "dev", Infrastructure: infra}.Render()
		if err != nil {
			t.Fatal(err)
		}
		r := load.Bytes(s+".yaml", src, load.Options{ForRun: true, EntityDirs: []string{"../examples/k8s"}})
		if !r.OK() {
			t.Errorf("%s scaffold:\n%s", s, r.Diags.Render(r.Sources))
			continue
		}
		if len(r.Plan.Stages[0].Rollback) == 0 {
			t.Errorf("%s scaffold has no rollback steps", s)
		}
	}
	if _, err := (Scaffold{Strategy: "recreate"}).Render(); err == nil || !strings.Contains(err.Error(), "rolling, canary, bluegreen, helm, helm-canary, helm-bluegreen") {
		t.Errorf("unknown strategy: %v", err)
	}
}

// --chart-repo writes the service as a Helm chart in Git and its connector beside the
// pipeline; the three files resolve for a run (with examples/k8s's environment, infrastructure
// and cluster connector), the chart's store naming the repository, folder and branch.
func TestInitChartService(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "pipelines", "api.yaml")
	for _, strategy := range []string{"rolling", "helm"} {
		infra := map[string]string{"rolling": "dev_cluster", "helm": "dev_helm"}[strategy]
		file := strings.Replace(out, "api.yaml", "api-"+strategy+".yaml", 1)
		service := "api_" + strategy
		code, stdout, stderr := run("init", "--strategy", strategy, "--service", service, "--infrastructure", infra, "-o", file,
			"--chart-repo", "https://git.example.com/platform/charts.git", "--branch", "release")
		if code != ExitOK || !strings.Contains(stdout, "service-"+service+".yaml") {
			t.Fatalf("%s: code %d: %s %s", strategy, code, stdout, stderr)
		}
		r, err := load.File(file, load.Options{ForRun: true, EntityDirs: []string{filepath.Dir(file), "../examples/k8s"}})
		if err != nil || !r.OK() {
			t.Fatalf("%s: %v\n%s", strategy, err, r.Diags.Render(r.Sources))
		}
		m := r.Plan.Stages[0].Deploy.Service.Manifests[0]
		if m.Type != "HelmChart" || m.Store == nil || m.Store.RepoURL() != "https://git.example.com/platform/charts.git" ||
			m.Store.Branch != "release" || m.Folder != "charts/"+service {
			t.Errorf("%s: manifest %+v store %+v", strategy, m, m.Store)
		}
	}
	if code, _, _ := run("init", "--chart-repo", "https://git.example.com/c.git"); code != ExitUsage {
		t.Errorf("--chart-repo without --output: code %d", code)
	}
	if code, _, stderr := run("init", "--strategy", "rolling", "--service", "api_rolling", "-o", filepath.Join(dir, "pipelines", "other.yaml"),
		"--chart-repo", "https://git.example.com/c.git"); code != ExitUsage || !strings.Contains(stderr, "service-api_rolling.yaml exists") {
		t.Errorf("overwriting a service file: code %d, %s", code, stderr)
	}
}
