package k8s_test

import (
	"fmt"
	"os"
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
