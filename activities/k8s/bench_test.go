package k8s_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/plan"
)

// tenDeployments is a manifest of 10 Deployments of 2 replicas each.
func tenDeployments(tag string) string {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: svc-%d}
spec:
  replicas: 2
  selector: {matchLabels: {app: svc-%d}}
  template:
    metadata: {labels: {app: svc-%d}}
    spec:
      containers: [{name: app, image: "nginx:%s"}]
`, i, i, i, tag)
	}
	return b.String()
}

// BenchmarkRollingDeploy10 is a K8sRollingDeploy step of 10 Deployments, from step start to
// steady state, each iteration a new image (a real rollout). Compare with BenchmarkKubectl10.
func BenchmarkRollingDeploy10(b *testing.B) {
	h := newHarness(b, "bench-gantry")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ms := []plan.Manifest{{ID: "svc", Type: "K8sManifest", Files: []plan.File{{Path: "all.yaml", Text: tenDeployments(fmt.Sprintf("1.%d", i))}}}}
		start := time.Now()
		_, f := h.run("K8sRollingDeploy", `{"skipDryRun": false}`, ms, false, 5*time.Minute)
		if f != nil {
			b.Fatalf("%s: %s", f.Category, f.Message)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
}

// BenchmarkKubectl10 is the baseline: `kubectl apply` then `kubectl rollout status` on the same
// 10 Deployments in the same cluster.
func BenchmarkKubectl10(b *testing.B) {
	dir := b.TempDir()
	if out, err := cluster.Kubectl("create", "namespace", "bench-kubectl"); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
		b.Fatal(out, err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		file := filepath.Join(dir, "all.yaml")
		if err := os.WriteFile(file, []byte(tenDeployments(fmt.Sprintf("1.%d", i))), 0o644); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if out, err := cluster.Kubectl("-n", "bench-kubectl", "apply", "-f", file); err != nil {
			b.Fatal(out, err)
		}
		if out, err := cluster.Kubectl("-n", "bench-kubectl", "rollout", "status", "-f", file, "--timeout", "5m"); err != nil {
			b.Fatal(out, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
}

// tenDeploymentChart is a chart of 10 Deployments of 2 replicas each, the image tag a value.
func tenDeploymentChart() map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: ten\nversion: 1.0.0\n",
		"values.yaml": "tag: \"1.0\"\n",
		"templates/deployments.yaml": `{{- range $i := until 10 }}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: svc-{{ $i }}}
spec:
  replicas: 2
  selector: {matchLabels: {app: svc-{{ $i }}}}
  template:
    metadata: {labels: {app: svc-{{ $i }}}}
    spec:
      containers: [{name: app, image: "nginx:{{ $.Values.tag }}"}]
{{- end }}
`,
	}
}

// helmCLI is the `helm` binary `make bench` builds (hack/helm/build.sh), or "" outside it.
func helmCLI(b *testing.B) string {
	bin := os.Getenv("GANTRY_HELM_BIN")
	if bin == "" {
		b.Skip("GANTRY_HELM_BIN is not set: `make bench` builds the helm CLI and sets it")
	}
	return bin
}

// helmDeploys counts BenchmarkHelmDeploy10's deploys of its release over the process.
var helmDeploys int

// BenchmarkHelmDeploy10 is a HelmDeploy step of a chart of 10 Deployments, from step start to
// the release ready (Helm's wait), each iteration a new image. Compare with BenchmarkHelmCLI10.
// The helm CLI then reads the same release history.
func BenchmarkHelmDeploy10(b *testing.B) {
	h := newHarness(b, "bench-helm-gantry")
	var files []plan.File
	for name, text := range tenDeploymentChart() {
		files = append(files, plan.File{Path: "ten/" + name, Text: text})
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ms := []plan.Manifest{{ID: "ten", Type: "HelmChart", Folder: "ten", Files: files},
			{ID: "tag", Type: "Values", Files: []plan.File{{Path: "tag.yaml", Text: fmt.Sprintf("tag: \"1.%d\"\n", i)}}}}
		start := time.Now()
		_, f := h.run("HelmDeploy", `{}`, ms, false, 5*time.Minute)
		if f != nil {
			b.Fatalf("%s: %s", f.Category, f.Message)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
	helmDeploys += b.N
	if bin := os.Getenv("GANTRY_HELM_BIN"); bin != "" {
		out, err := exec.Command(bin, "--kubeconfig", cluster.Kubeconfig, "-n", h.ns, "history", h.release, "--max", "100", "-o", "json").CombinedOutput()
		if err != nil || strings.Count(string(out), `"revision"`) != min(helmDeploys, 10) || !strings.Contains(string(out), `"status":"deployed"`) {
			b.Errorf("helm history of the release Gantry deployed %d times (10 kept): %v\n%s", helmDeploys, err, out)
		}
	}
}

// BenchmarkHelmCLI10 is the baseline: `helm upgrade --install --wait` of the same chart in the
// same cluster.
func BenchmarkHelmCLI10(b *testing.B) {
	bin := helmCLI(b)
	dir := filepath.Join(b.TempDir(), "ten")
	for name, text := range tenDeploymentChart() {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := exec.Command(bin, "--kubeconfig", cluster.Kubeconfig, "upgrade", "--install", "ten", dir, "-n", "bench-helm-cli",
			"--create-namespace", "--wait", "--timeout", "5m", "--set-string", fmt.Sprintf("tag=1.%d", i)).CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
}

// bgBenchChart is a blue-green chart: one Deployment of 4 replicas and its Service. By hand
// the colour is a value (the Deployment `web-<colour>`, its pods labelled with it); Gantry
// adds the colour itself.
func bgBenchChart(byHand bool) map[string]string {
	name, labels := "web", "{app: web}"
	if byHand {
		name, labels = "web-{{ .Values.color }}", "{app: web, harness.io/color: \"{{ .Values.color }}\"}"
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"values.yaml": "tag: \"1.0\"\ncolor: blue\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: 4
  selector:
    matchLabels: ` + labels + `
  template:
    metadata:
      labels: ` + labels + `
    spec:
      containers: [{name: app, image: "nginx:{{ .Values.tag }}"}]
`,
	}
	if !byHand {
		files["templates/service.yaml"] = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n"
	}
	return files
}

// BenchmarkHelmBlueGreen is a Helm blue-green deployment, HelmBGDeploy then
// HelmBlueGreenSwapStep, each iteration a new image into the other colour. Compare with
// BenchmarkHelmCLIBlueGreen.
func BenchmarkHelmBlueGreen(b *testing.B) {
	h := newHarness(b, "bench-helm-bg")
	var files []plan.File
	for name, text := range bgBenchChart(false) {
		files = append(files, plan.File{Path: "web/" + name, Text: text})
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		ms := []plan.Manifest{{ID: "web", Type: "HelmChart", Folder: "web", Files: files},
			{ID: "tag", Type: "Values", Files: []plan.File{{Path: "tag.yaml", Text: fmt.Sprintf("tag: \"1.%d\"\n", i)}}}}
		start := time.Now()
		for _, step := range []string{"HelmBGDeploy", "HelmBlueGreenSwapStep"} {
			if _, f := h.run(step, `{}`, ms, false, 5*time.Minute); f != nil {
				b.Fatalf("%s: %s: %s", step, f.Category, f.Message)
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
}

// BenchmarkHelmCLIBlueGreen is the baseline, the same by hand: read the live colour from the
// Service, `helm upgrade --install web-<other> --wait` with the colour as a value, apply both
// Services, then patch their selectors to swap.
func BenchmarkHelmCLIBlueGreen(b *testing.B) {
	bin := helmCLI(b)
	const ns = "bench-helm-cli-bg"
	dir := filepath.Join(b.TempDir(), "web")
	for name, text := range bgBenchChart(true) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if out, err := cluster.Kubectl("create", "namespace", ns); err != nil && !strings.Contains(out+err.Error(), "AlreadyExists") {
		b.Fatal(out, err)
	}
	services := filepath.Join(b.TempDir(), "services.yaml")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		live, _ := cluster.Kubectl("-n", ns, "get", "service", "web", "-o", `jsonpath={.spec.selector.harness\.io/color}`)
		stage := "blue"
		if strings.TrimSpace(live) == "blue" {
			stage = "green"
		}
		primary := strings.TrimSpace(live)
		if primary == "" {
			primary = stage
		}
		out, err := exec.Command(bin, "--kubeconfig", cluster.Kubeconfig, "upgrade", "--install", "web-"+stage, dir, "-n", ns,
			"--wait", "--timeout", "5m", "--set-string", fmt.Sprintf("tag=1.%d,color=%s", i, stage)).CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		svc := func(name, color string) string {
			return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s}\nspec: {selector: {app: web, harness.io/color: %s}, ports: [{port: 80}]}\n", name, color)
		}
		if err := os.WriteFile(services, []byte(svc("web", primary)+"---\n"+svc("web-stage", stage)), 0o644); err != nil {
			b.Fatal(err)
		}
		if out, err := cluster.Kubectl("-n", ns, "apply", "-f", services); err != nil {
			b.Fatal(out, err)
		}
		if primary != stage {
			for name, color := range map[string]string{"web": stage, "web-stage": primary} {
				patch := fmt.Sprintf(`{"spec":{"selector":{"harness.io/color":%q}}}`, color)
				if out, err := cluster.Kubectl("-n", ns, "patch", "service", name, "--type", "merge", "-p", patch); err != nil {
					b.Fatal(out, err)
				}
			}
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/deploy")
}
