package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// timedRun runs a plan on the node's worker and returns how long its node at path ran,
// failing unless it succeeded.
func timedRun(b *testing.B, p *plan.Plan, path string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exec, err := node.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := node.starter.Result(ctx, exec.ID)
	if err != nil {
		b.Fatal(err)
	}
	n := res.Tree.Find(path)
	if n == nil || n.Status != status.Succeeded || n.StartedAt == nil || n.EndedAt == nil {
		b.Fatalf("%s: %+v", path, n)
	}
	return n.EndedAt.Sub(*n.StartedAt)
}

// BenchmarkCIStage5Runs runs a CI stage of 5 Run steps (`true`) on the real node: stage-ms is
// the stage's wall time, its pod created and deleted. Baseline: BenchmarkHandPod5Containers.
func BenchmarkCIStage5Runs(b *testing.B) {
	realNode(b)
	srv := gittest.Start(b)
	srv.NewRepo("app", map[string]string{"README.md": "x\n"})
	var steps strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&steps, "              - step: {type: Run, name: s%d, identifier: s%d, spec: {image: IMAGE, shell: Sh, command: \"true\"}}\n", i, i)
	}
	p := ciPipeline(b, srv, "ci_bench", ciStage("build", ciStageOpts{})+steps.String())
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += timedRun(b, p, "build")
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "stage-ms")
}

// BenchmarkHandPod5Containers is BenchmarkCIStage5Runs's baseline: the same five containers
// (`true` in the node's busybox) in one hand-written pod, created with client-go until
// Succeeded, then deleted. The pod runs them side by side, the least time any pod of them
// takes; BenchmarkHandPod5InitContainers runs them one after another, as the steps run.
func BenchmarkHandPod5Containers(b *testing.B) { handPod(b, false) }

// BenchmarkHandPod5InitContainers is BenchmarkHandPod5Containers with four of the containers
// init containers, so that they run in order.
func BenchmarkHandPod5InitContainers(b *testing.B) { handPod(b, true) }

func handPod(b *testing.B, sequential bool) {
	n, cs := realNode(b)
	img := n.Image(nodetest.Busybox)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-hand-%d-%d", time.Now().UnixNano()%100000, i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
		for j := 1; j <= 5; j++ {
			c := corev1.Container{Name: fmt.Sprintf("s%d", j), Image: img, Command: []string{"true"}, ImagePullPolicy: corev1.PullIfNotPresent}
			if sequential && j < 5 {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			} else {
				pod.Spec.Containers = append(pod.Spec.Containers, c)
			}
		}
		start := time.Now()
		if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitPhase(b, cs, name, corev1.PodSucceeded)
		zero := int64(0)
		if err := cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "stage-ms")
}

// The Dockerfile both build benchmarks build: FROM the node's busybox, one RUN line.
func benchDockerfile(n *nodetest.Node) string {
	return "FROM " + n.Image(nodetest.Busybox) + "\nRUN echo built > /built.txt && ls / > /files.txt\nCMD [\"cat\", \"/built.txt\"]\n"
}

// BenchmarkBuildAndPush builds and pushes an image with a BuildAndPushDockerRegistry step in a
// CI stage on the real node (BuildKit cold: a new pod each run): build-ms is the step's wall
// time. Baseline: BenchmarkBuildDirect.
func BenchmarkBuildAndPush(b *testing.B) {
	n, _ := realNode(b)
	srv := gittest.Start(b)
	srv.NewRepo("app", map[string]string{"Dockerfile": benchDockerfile(n)})
	p := ciPipeline(b, srv, "build_bench", ciStage("build", ciStageOpts{Clone: true, HostNetwork: true})+`              - step: {type: BuildAndPushDockerRegistry, name: image, identifier: image, spec: {connectorRef: reg, repo: bench-gantry, tags: [<+pipeline.sequenceId>]}}
`, buildFiles(n, "bench-app")...)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		total += timedRun(b, p, "build.image")
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "build-ms")
}

// BenchmarkBuildDirect is BenchmarkBuildAndPush's baseline: the same build driven directly in
// a pod of the same BuildKit image on the same node (privileged, host network), by `kubectl
// exec` of a shell script that starts buildkitd on an empty state, waits for its socket, runs buildctl
// build with push, and stops it; the Dockerfile is in the pod already.
func BenchmarkBuildDirect(b *testing.B) {
	n, cs := realNode(b)
	name := fmt.Sprintf("bench-build-%d", time.Now().UnixNano()%100000)
	priv, yes := true, true
	dockerfile := benchDockerfile(n)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
		Volumes: []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		InitContainers: []corev1.Container{{Name: "prepare", Image: n.Image(nodetest.Busybox), Command: []string{"sh", "-c",
			"cp /bin/busybox /tools/ && mkdir /tools/ctx && cat > /tools/ctx/Dockerfile <<'EOF'\n" + dockerfile + "EOF\n"},
			VolumeMounts: []corev1.VolumeMount{{Name: "tools", MountPath: "/tools"}}}},
		Containers: []corev1.Container{{Name: "build", Image: n.Image(nodetest.BuildKit), Command: []string{"/tools/busybox", "sleep", "3600"},
			SecurityContext: &corev1.SecurityContext{Privileged: &priv, AllowPrivilegeEscalation: &yes},
			VolumeMounts:    []corev1.VolumeMount{{Name: "tools", MountPath: "/tools"}}}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer n.Kubectl("delete", "pod", name, "--grace-period=0", "--force")
	waitPhase(b, cs, name, corev1.PodRunning)
	reg := n.Registry
	var total time.Duration
	for i := 0; i < b.N; i++ {
		script := fmt.Sprintf(`set -e
B=/tools/busybox
$B rm -rf /tmp/bk && $B mkdir -p /tmp/bk
$B printf '[registry."%[1]s"]\n  http = true\n  insecure = true\n' > /tmp/bk.toml
buildkitd --root /tmp/bk --addr unix:///tmp/bk.sock --config /tmp/bk.toml --oci-worker-snapshotter native --oci-worker-net host --containerd-worker=false > /tmp/bkd.log 2>&1 &
P=$!
until [ -S /tmp/bk.sock ]; do $B usleep 10000; done
buildctl --addr unix:///tmp/bk.sock build --frontend dockerfile.v0 --local context=/tools/ctx --local dockerfile=/tools/ctx --output type=image,name=%[1]s/bench-direct:%[2]d,push=true,registry.insecure=true > /tmp/build.log 2>&1
$B kill $P; wait $P || true
`, reg, i)
		start := time.Now()
		if out, err := n.Kubectl("exec", name, "-c", "build", "--", "/tools/busybox", "sh", "-c", script); err != nil {
			b.Fatal(out, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "build-ms")
}

// BenchmarkCacheRestore runs a CI stage that restores a dependency folder from S3 (versitygw)
// before a step that installs it only when missing (2,000 files written, 2 s of "download"),
// then saves it: cold-ms is the stage with no cache (the first run of each key), cached-ms
// with the cache a run before it saved.
func BenchmarkCacheRestore(b *testing.B) {
	realNode(b)
	git := gittest.Start(b)
	git.NewRepo("app", map[string]string{"README.md": "x\n"})
	s3, aws := ciS3(b)
	pipelineFor := func(key string) *plan.Plan {
		cache := "{connectorRef: aws, region: " + s3test.Region + ", bucket: cache, key: " + key + ", endpoint: " + s3.Endpoint + ", archiveFormat: Gzip, override: false"
		return ciPipeline(b, git, "cache_bench", ciStage("build", ciStageOpts{})+`              - step: {type: RestoreCacheS3, name: restore, identifier: restore, spec: `+cache+`}}
              - step: {type: Run, name: install, identifier: install, spec: {image: IMAGE, shell: Sh, command: "[ -d deps ] || { mkdir deps && for i in $(seq 2000); do echo dependency $i > deps/$i.txt; done && sleep 2; }"}}
              - step: {type: SaveCacheS3, name: save, identifier: save, spec: `+cache+`, sourcePaths: [deps]}}
`, "aws.yaml", aws)
	}
	var cold, cached time.Duration
	for i := 0; i < b.N; i++ {
		p := pipelineFor(fmt.Sprintf("deps-%d-%d", time.Now().UnixNano(), i))
		cold += timedRun(b, p, "build")
		cached += timedRun(b, p, "build")
	}
	b.ReportMetric(float64(cold.Microseconds())/1000/float64(b.N), "cold-ms")
	b.ReportMetric(float64(cached.Microseconds())/1000/float64(b.N), "cached-ms")
}
