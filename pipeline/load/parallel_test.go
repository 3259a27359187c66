package load_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/validate"
)

func parallelPipeline(n int) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: wide\n  identifier: wide\n  stages:\n    - parallel:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "        - stage: {name: s%d, identifier: s%d, type: Custom, spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: 'true'}}}}}]}}}\n", i, i)
	}
	return b.String()
}

// A parallel block of up to the reference's limit loads; one stage more is an error at the
// block that names the limit.
func TestParallelStageLimit(t *testing.T) {
	r := loadIn(t, map[string]string{"p.yaml": parallelPipeline(validate.MaxParallelStages)}, "p.yaml", load.Options{ForRun: true})
	if !r.OK() {
		t.Fatalf("%d parallel stages refused:\n%s", validate.MaxParallelStages, r.Diags.Render(r.Sources))
	}
	r = loadIn(t, map[string]string{"p.yaml": parallelPipeline(validate.MaxParallelStages + 1)}, "p.yaml", load.Options{ForRun: true})
	got := r.Diags.Render(r.Sources)
	if r.OK() || !strings.Contains(got, "p.yaml:5:7") || !strings.Contains(got, "at most 256 stages in parallel") {
		t.Errorf("257 parallel stages:\n%s", got)
	}
}
