package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"

	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkContainerGroup runs a containerized step group of 5 Run steps (`true`) on the real
// node: first-ms is the time from the group's start to its first step's command having run
// (pod created, helper installed, container started, command executed), step-ms each further
// step's. Baseline: BenchmarkKubectlRunExec.
func BenchmarkContainerGroup(b *testing.B) {
	var steps strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&steps, "                    - step: {type: Run, name: s%d, identifier: s%d, spec: {image: IMAGE, shell: Sh, command: \"true\"}}\n", i, i)
	}
	p := containerPipeline(b, "containers_bench", steps.String())
	var first, each time.Duration
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		exec, err := node.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := node.starter.Result(ctx, exec.ID)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		g := res.Tree.Find("s.tools")
		s1, s5 := res.Tree.Find("s.tools.s1"), res.Tree.Find("s.tools.s5")
		if g == nil || g.Status != status.Succeeded || s1.EndedAt == nil || s5.EndedAt == nil {
			b.Fatalf("group %+v", g)
		}
		first += s1.EndedAt.Sub(*g.StartedAt)
		each += s5.EndedAt.Sub(*s1.EndedAt) / 4
	}
	b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-ms")
	b.ReportMetric(float64(each.Microseconds())/1000/float64(b.N), "step-ms")
}

// BenchmarkKubectlRunExec is the baseline of BenchmarkContainerGroup on the same node and
// image: first-ms is `kubectl run --restart=Never IMAGE -- true` until the pod has succeeded,
// step-ms a `kubectl exec POD -- true` in a running pod.
func BenchmarkKubectlRunExec(b *testing.B) {
	n, cs := realNode(b)
	img := n.Image(nodetest.Busybox)
	if out, err := n.Kubectl("run", "bench-exec", "--restart=Never", "--image="+img, "--", "sleep", "3600"); err != nil && !strings.Contains(out+err.Error(), "AlreadyExists") {
		b.Fatal(out, err)
	}
	defer n.Kubectl("delete", "pod", "bench-exec", "--grace-period=0", "--force")
	var first, each time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-run-%d-%d", time.Now().UnixNano()%100000, i)
		start := time.Now()
		if out, err := n.Kubectl("run", name, "--restart=Never", "--image="+img, "--", "true"); err != nil {
			b.Fatal(out, err)
		}
		waitPhase(b, cs, name, corev1.PodSucceeded)
		first += time.Since(start)
		_, _ = n.Kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
		waitPhase(b, cs, "bench-exec", corev1.PodRunning)
		start = time.Now()
		for j := 0; j < 4; j++ {
			if out, err := n.Kubectl("exec", "bench-exec", "--", "true"); err != nil {
				b.Fatal(out, err)
			}
		}
		each += time.Since(start) / 4
	}
	b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-ms")
	b.ReportMetric(float64(each.Microseconds())/1000/float64(b.N), "step-ms")
}

// waitPhase waits until a pod reaches a phase.
func waitPhase(b *testing.B, cs kubernetes.Interface, name string, phase corev1.PodPhase) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == phase {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pod %s never reached %s (%v)", name, phase, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
