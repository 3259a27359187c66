package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
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
	ctx := context.Background()
	run := func(p *plan.Plan) time.Duration {
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
