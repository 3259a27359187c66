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

func longStage(n int) string {
	var b strings.Builder
	b.WriteString("pipeline:\n  name: long\n  identifier: long\n  stages:\n    - stage:\n        name: s\n        identifier: s\n        type: Custom\n        spec:\n          execution:\n            steps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "              - step: {type: ShellScript, name: a%d, identifier: a%d, spec: {shell: Bash, source: {type: Inline, spec: {script: 'true'}}}}\n", i, i)
	}
	b.WriteString("              - step: {type: ShellScript, name: m, identifier: m, strategy: {repeat: {times: 5000}}, spec: {shell: Bash, source: {type: Inline, spec: {script: 'true'}}}}\n")
	return b.String()
}

// A stage of up to MaxStageSteps steps loads (a looped step counts once, whatever its number of
// iterations); one more is unsupported at the stage's steps, naming the limit and the way out.
func TestStageStepLimit(t *testing.T) {
	r := loadIn(t, map[string]string{"p.yaml": longStage(validate.MaxStageSteps - 1)}, "p.yaml", load.Options{ForRun: true})
	if !r.OK() {
		t.Fatalf("%d steps refused:\n%s", validate.MaxStageSteps, r.Diags.Render(r.Sources))
	}
	r = loadIn(t, map[string]string{"p.yaml": longStage(validate.MaxStageSteps)}, "p.yaml", load.Options{ForRun: true})
	got := r.Diags.Render(r.Sources)
	if r.OK() || !strings.Contains(got, "p.yaml:11:13") || !strings.Contains(got, "unsupported") ||
		!strings.Contains(got, fmt.Sprintf("stage s has %d steps and step groups; Gantry runs at most %d in one stage", validate.MaxStageSteps+1, validate.MaxStageSteps)) {
		t.Errorf("%d steps:\n%s", validate.MaxStageSteps+1, got)
	}
}
