package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

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

// BenchmarkShortSteps runs pipelines of 20 and 100 `true` steps with the fast path on and off;
// hack/bench-ratios.sh turns ms/run into the marginal cost per step, (T100 - T20) / 80, next to
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
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL"}, mode.set)
						if err != nil {
							b.Fatal(err)
						}
						res, err := env.starter.Result(ctx, exec.ID)
						if err != nil || res.Status != status.Succeeded {
							b.Fatalf("%v %v", res, err)
						}
						last = exec.ID
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
					b.ReportMetric(float64(historyEvents(b, last+"/s"))/float64(n), "events/step")
				})
			}
		}
	}
}
