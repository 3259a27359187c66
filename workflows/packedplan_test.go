package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/workflows"
)

func stagesInput(t *testing.T, n int) workflows.PipelineInput {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "pipeline:\n  name: many\n  identifier: many\n  stages:\n")
	for i := range n {
		fmt.Fprintf(&sb, "    - {stage: {name: s%d, identifier: s%d, type: Custom, spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: 'V=%d'}}, outputVariables: [{name: v, type: String, value: V}]}}}]}}}}\n", i, i, i)
	}
	r := load.Bytes("many.yaml", []byte(sb.String()), load.Options{ForRun: true})
	if r.Plan == nil {
		t.Fatal(r.Diags.Render(r.Sources))
	}
	return workflows.PipelineInput{Plan: r.Plan, SequenceID: 3, Trigger: workflows.Trigger{Type: "MANUAL", User: "ann"}}
}

// A large plan travels compressed (a 5,000-stage plan fits a Temporal payload), a small one as
// it is, and both read back whole; an input written before plans were compressed still reads.
func TestPipelineInputPacksLargePlans(t *testing.T) {
	for _, n := range []int{3, 5000} {
		in := stagesInput(t, n)
		plain, _ := json.Marshal(in.Plan)
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d stages: plan %d bytes, input %d bytes", n, len(plain), len(b))
		if compressed := strings.Contains(string(b), `"planZ"`); compressed != (n == 5000) {
			t.Errorf("%d stages: compressed %v", n, compressed)
		}
		if n == 5000 && len(b) > len(plain)/4 {
			t.Errorf("%d stages: the input takes %d bytes for a %d-byte plan", n, len(b), len(plain))
		}
		var back workflows.PipelineInput
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back.Plan)
		if string(again) != string(plain) || back.SequenceID != 3 || back.Trigger.User != "ann" {
			t.Errorf("%d stages: the input did not read back whole", n)
		}
	}
	in := stagesInput(t, 2)
	plan, _ := json.Marshal(in.Plan)
	var old workflows.PipelineInput
	if err := json.Unmarshal([]byte(`{"plan":`+string(plan)+`,"sequenceId":9,"trigger":{"type":"MANUAL"},"settings":{}}`), &old); err != nil || old.Plan == nil || old.Plan.Identifier != "many" || old.SequenceID != 9 {
		t.Errorf("an uncompressed input: %+v %v", old, err)
	}
}
