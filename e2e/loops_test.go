package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// The peak number of iterations running at once equals maxConcurrency, never more.
func TestMaxConcurrencyPeak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "running")
	const iterations, limit = 9, 3
	src := fmt.Sprintf(`pipeline:
  name: peak
  identifier: peak
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: w
                  identifier: w
                  strategy: {repeat: {times: %d, maxConcurrency: %d}}
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          mkdir -p %[3]s
                          touch %[3]s/<+strategy.iteration>
                          sleep 0.5
                          N=$(ls %[3]s | wc -l)
                          sleep 0.5
                          rm %[3]s/<+strategy.iteration>
                    outputVariables:
                      - {name: n, type: String, value: N}
`, iterations, limit, dir)
	_, res := runPlan(t, env.starter, compile(t, "peak.yaml", []byte(src), load.Options{}))
	if res.Status != status.Succeeded {
		t.Fatalf("%s", res.Status)
	}
	peak := 0
	for i := 0; i < iterations; i++ {
		n := res.Tree.Find("s.w_" + strconv.Itoa(i))
		v, _ := strconv.Atoi(n.Outputs["outputVariables"].(map[string]any)["n"].(string))
		peak = max(peak, v)
	}
	if peak != limit {
		t.Errorf("peak concurrency %d, want exactly %d", peak, limit)
	}
}
