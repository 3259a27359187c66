package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
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

// BenchmarkShortSteps runs pipelines of 20 and 100 `true` steps with the fast path on and off
// and reports the median run; hack/bench-ratios.sh turns ms/run into the marginal cost per step, (T100 - T20) / 80, next to
// drone-runner-exec's (hack/bench-drone.sh).
func BenchmarkShortSteps(b *testing.B) {
	for _, shell := range []string{"Sh", "Bash"} {
		for _, mode := range stepModes {
			for _, n := range []int{20, 100} {
				b.Run(fmt.Sprintf("%s/%s/%d", shell, mode.name, n), func(b *testing.B) {
					r := load.Bytes("short.yaml", []byte(shortStepsPipeline(n, shell)), load.Options{ForRun: true})
					if r.Plan == nil {
						b.Fatal(r.Diags.Render(r.Sources))
					}
					ctx := context.Background()
					var last string
					var runs []time.Duration
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL"}, mode.set)
						if err != nil {
							b.Fatal(err)
						}
						res, err := env.starter.Result(ctx, exec.ID)
						if err != nil || res.Status != status.Succeeded {
							b.Fatalf("%v %v", res, err)
						}
						runs = append(runs, time.Since(t0))
						last = exec.ID
					}
					b.StopTimer()
					// The median run: a client now and then sees a finished execution up to 2 s
					// late (see README, Embedded server tuning), which would swamp a mean.
					slices.Sort(runs)
					b.ReportMetric(float64(runs[len(runs)/2].Microseconds())/1000, "ms/run")
					b.ReportMetric(float64(historyEvents(b, last+"/s"))/float64(n), "events/step")
				})
			}
		}
	}
}
