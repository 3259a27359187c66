package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// shortStepsPipeline is one stage of n sequential `true` ShellScript steps with a 10 s timeout
// (fast-path eligible), run by the given shell.
func shortStepsPipeline(n int, shell string) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: short\n  identifier: short_steps\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "              - step: {type: ShellScript, name: s%d, identifier: s%d, timeout: 10s, spec: {shell: %s, source: {type: Inline, spec: {script: \"true\"}}}}\n", i, i, shell)
	}
	return b.String()
}

// BenchmarkShortSteps runs pipelines of 20 and 100 `true` steps with the fast path on and off.
// The two sizes alternate, so drift in the machine's speed hits both alike; it reports the
// median run of each and the median over the pairs of the marginal cost per step,
// (T100 - T20) / 80, which hack/bench-ratios.sh sets against drone-runner-exec's. With
// GANTRY_DRONE_BIN naming drone-runner-exec (`hack/bench-drone.sh --bin`, as make bench does),
// the fast-path runs alternate with the peer's runs of the same pipelines, so the ratio is
// measured under the same load, minute by minute (this machine's cost of a process drifts by
// half within the hour).
func BenchmarkShortSteps(b *testing.B) {
	peer := newDronePeer(b)
	for _, shell := range []string{"Sh", "Bash"} {
		for _, mode := range stepModes {
			b.Run(fmt.Sprintf("%s/%s", shell, mode.name), func(b *testing.B) {
				var plans [2]*plan.Plan
				for i, n := range []int{20, 100} {
					r := load.Bytes("short.yaml", []byte(shortStepsPipeline(n, shell)), load.Options{ForRun: true})
					if r.Plan == nil {
						b.Fatal(r.Diags.Render(r.Sources))
					}
					plans[i] = r.Plan
				}
				ctx := context.Background()
				run := func(p *plan.Plan) (time.Duration, string) {
					t0 := time.Now()
					exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, mode.set)
					if err != nil {
						b.Fatal(err)
					}
					res, err := env.starter.Result(ctx, exec.ID)
					if err != nil || res.Status != status.Succeeded {
						b.Fatalf("%v %v", res, err)
					}
					return time.Since(t0), exec.ID
				}
				var t20, t100, marginal, peerMarginal []float64
				var last string
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					a, _ := run(plans[0])
					c, id := run(plans[1])
					t20, t100 = append(t20, ms(a)), append(t100, ms(c))
					marginal = append(marginal, (ms(c)-ms(a))/80)
					last = id
					if peer != nil && !mode.set.NoFastPath {
						peerMarginal = append(peerMarginal, peer.marginal(b))
					}
				}
				b.StopTimer()
				if len(peerMarginal) > 0 {
					b.ReportMetric(median(peerMarginal), "peer-ms/step-marginal")
					b.ReportMetric(median(marginal)/median(peerMarginal), "x-peer")
				}
				// Medians: a client now and then sees a finished execution up to 2 s late (see
				// README, Embedded server tuning), which would swamp a mean.
				b.ReportMetric(median(t20), "ms/run-20")
				b.ReportMetric(median(t100), "ms/run-100")
				b.ReportMetric(median(marginal), "ms/step-marginal")
				b.ReportMetric(float64(historyEvents(b, last+"/s"))/100, "events/step")
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// dronePeer runs drone-runner-exec, the non-durable peer of the fast path, on pipelines of 20
// and 100 sequential `true` steps (what hack/bench-drone.sh times on its own).
type dronePeer struct {
	bin, root string
	files     [2]string
}

// dronePeerSteps are the sizes of the peer's two pipelines.
var dronePeerSteps = [2]int{20, 100}

// newDronePeer returns the peer named by GANTRY_DRONE_BIN, or nil when it is not set.
func newDronePeer(b *testing.B) *dronePeer {
	bin := os.Getenv("GANTRY_DRONE_BIN")
	if bin == "" {
		return nil
	}
	dir := b.TempDir()
	p := &dronePeer{bin: bin, root: filepath.Join(dir, "root")}
	if err := os.Mkdir(p.root, 0o755); err != nil {
		b.Fatal(err)
	}
	for i, n := range dronePeerSteps {
		var y strings.Builder
		y.WriteString("kind: pipeline\ntype: exec\nname: default\nclone:\n  disable: true\n\nsteps:\n")
		for j := 1; j <= n; j++ {
			fmt.Fprintf(&y, "- name: s%d\n  commands:\n  - true\n", j)
		}
		p.files[i] = filepath.Join(dir, fmt.Sprintf("p%d.yml", n))
		if err := os.WriteFile(p.files[i], []byte(y.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// marginal runs the two pipelines and returns (T100 - T20) / 80 in ms.
func (p *dronePeer) marginal(b *testing.B) float64 {
	var t [2]float64
	for i, f := range p.files {
		t0 := time.Now()
		out, err := exec.Command(p.bin, "exec", p.root, f).CombinedOutput()
		if err != nil {
			b.Fatalf("drone-runner-exec %s: %v\n%s", f, err, out)
		}
		t[i] = ms(time.Since(t0))
		if ran := strings.Count(string(out), "+ true"); ran != dronePeerSteps[i] {
			b.Fatalf("drone-runner-exec ran %d steps of %d:\n%s", ran, dronePeerSteps[i], out)
		}
	}
	return (t[1] - t[0]) / 80
}
