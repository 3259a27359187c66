package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/netns"
	"github.com/containerd/containerd/v2/pkg/oci"
	gocni "github.com/containerd/go-cni"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gantry-cd/gantry/activities/container"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// machineStepsPipeline is one `runtime: Cloud` CI stage of n sequential `true` Run steps
// without an image: on a build machine, each runs on the machine itself.
func machineStepsPipeline(n int) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: machine steps\n  identifier: machine_steps\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: CI\n        spec:\n          cloneCodebase: false\n          runtime: {type: Cloud, spec: {}}\n          execution:\n            steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "              - step: {type: Run, name: s%d, identifier: s%d, timeout: 10s, spec: {shell: Sh, command: \"true\"}}\n", i, i)
	}
	return b.String()
}

// BenchmarkMachineSteps is BenchmarkShortSteps for a build machine: stages of 20 and 100
// `true` Run steps without an image, alternating, the median marginal cost per step
// (T100 - T20) / 80 set against drone-runner-exec's on the same pipelines (GANTRY_DRONE_BIN,
// as make bench sets it), the peer's runs alternating with Gantry's.
func BenchmarkMachineSteps(b *testing.B) {
	peer := newDronePeer(b)
	queue := "bench-machine-steps"
	buildMachine(b, queue, 1)
	s := machineStarter(queue)
	var plans [2]*plan.Plan
	opts := onMachines
	opts.ForRun = true
	for i, n := range []int{20, 100} {
		r := load.Bytes("machine.yaml", []byte(machineStepsPipeline(n)), opts)
		if r.Plan == nil || !r.OK() {
			b.Fatal(r.Diags.Render(r.Sources))
		}
		plans[i] = r.Plan
	}
	run := func(p *plan.Plan) time.Duration { return runToResult(b, s, p) }
	var t20, t100, marginal, peerMarginal []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, c := run(plans[0]), run(plans[1])
		t20, t100 = append(t20, ms(a)), append(t100, ms(c))
		marginal = append(marginal, (ms(c)-ms(a))/80)
		if peer != nil {
			peerMarginal = append(peerMarginal, peer.marginal(b))
		}
	}
	b.StopTimer()
	if len(peerMarginal) > 0 {
		b.ReportMetric(median(peerMarginal), "peer-ms/step-marginal")
		b.ReportMetric(median(marginal)/median(peerMarginal), "x-peer")
	}
	b.ReportMetric(median(t20), "ms/run-20")
	b.ReportMetric(median(t100), "ms/run-100")
	b.ReportMetric(median(marginal), "ms/step-marginal")
}

// BenchmarkMachineContainers5 is a `runtime: Docker` stage of five `true` Run steps that name
// an image, on a build machine with containerd, end to end (start to result: the stage's
// machine and workspace, its network, five containers, their removal), set against the same
// five containers started by hand through containerd's Go client in the same minutes: one
// CNI network namespace, each container with the workspace bind-mounted, created, started,
// waited for and removed in turn.
func BenchmarkMachineContainers5(b *testing.B) {
	cm := containerMachine(b, "bench-machine-containers")
	var steps strings.Builder
	for i := 0; i < 5; i++ {
		steps.WriteString(imageStep(cm.image, fmt.Sprintf("s%d", i), "Run", "true", ""))
	}
	p := cm.load(b, "five", machinePipeline("machine_containers", strings.Replace(machineStage("s", steps.String()), "type: Cloud", "type: Docker", 1)))
	s := machineStarter("bench-machine-containers")
	gantry := func() time.Duration { return runToResult(b, s, p) }
	gantry() // the image pulled once, as a machine keeps it
	hand := newHandContainers(b, cm.ctrd.Address, cm.image)
	var g, h []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g = append(g, ms(gantry()))
		h = append(h, ms(hand.run(b, 5)))
	}
	b.StopTimer()
	b.ReportMetric(median(g), "ms/run")
	b.ReportMetric(median(h), "hand-ms/run")
	b.ReportMetric(median(g)/median(h), "x-hand")
}

// handContainers starts containers as a script on containerd's client would.
type handContainers struct {
	client *client.Client
	image  client.Image
	cni    gocni.CNI
	dir    string
}

func newHandContainers(b *testing.B, address, ref string) *handContainers {
	cl, err := client.New(address, client.WithDefaultNamespace(container.ContainerNamespace))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	ctx := namespaces.WithNamespace(context.Background(), container.ContainerNamespace)
	img, err := cl.GetImage(ctx, ref)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	conf := `{"cniVersion": "1.0.0", "name": "hand", "plugins": [{"type": "bridge", "bridge": "handbench0", "isGateway": true, "ipMasq": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.216.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "` + dir + `/ipam"}}]}`
	cni, err := gocni.New(gocni.WithPluginDir(container.DefaultCNIPlugins), gocni.WithMinNetworkCount(2), gocni.WithLoNetwork, gocni.WithConfListBytes([]byte(conf)))
	if err != nil {
		b.Fatal(err)
	}
	return &handContainers{client: cl, image: img, cni: cni, dir: dir}
}

// run makes a network namespace, runs n `sh -c true` containers in it one after the other,
// and removes them and it.
func (h *handContainers) run(b *testing.B, n int) time.Duration {
	ctx := namespaces.WithNamespace(context.Background(), container.ContainerNamespace)
	t0 := time.Now()
	ns, err := netns.NewNetNS(filepath.Join(h.dir, "netns"))
	if err != nil {
		b.Fatal(err)
	}
	id := fmt.Sprintf("hand-%d", t0.UnixNano())
	if _, err := h.cni.Setup(ctx, id, ns.GetPath()); err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(h.dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		cid := fmt.Sprintf("%s-%d", id, i)
		c, err := h.client.NewContainer(ctx, cid, client.WithImage(h.image), client.WithNewSnapshot(cid, h.image), client.WithNewSpec(
			oci.WithImageConfig(h.image), oci.WithProcessArgs("sh", "-c", "true"), oci.WithProcessCwd("/harness"),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: ns.GetPath()}),
			oci.WithMounts([]specs.Mount{{Type: "bind", Source: work, Destination: "/harness", Options: []string{"rbind", "rprivate"}}})))
		if err != nil {
			b.Fatal(err)
		}
		task, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			b.Fatal(err)
		}
		exited, err := task.Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := task.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if st := <-exited; st.ExitCode() != 0 {
			b.Fatalf("container exited %d", st.ExitCode())
		}
		if _, err := task.Delete(ctx); err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.cni.Remove(ctx, id, ns.GetPath()); err != nil {
		b.Fatal(err)
	}
	if err := ns.Remove(); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// runToResult runs p to success and returns how long it took from start to result.
func runToResult(b *testing.B, s *starter.Starter, p *plan.Plan) time.Duration {
	ctx := context.Background()
	t0 := time.Now()
	exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := s.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		b.Fatalf("%v %v", res, err)
	}
	return time.Since(t0)
}
