package load_test

import (
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

// TestStepNodesCarryTheirTraits checks that compile copies each step type's catalog traits onto
// its plan node, in groups and rollback sections too, and leaves other nodes without.
func TestStepNodesCarryTheirTraits(t *testing.T) {
	src := `pipeline:
  identifier: p
  name: p
  stages:
    - stage:
        identifier: s
        name: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {identifier: sh, name: sh, type: ShellScript, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
              - stepGroup:
                  identifier: g
                  name: g
                  steps:
                    - step: {identifier: call, name: call, type: Http, spec: {url: "http://localhost", method: GET}}
              - step: {identifier: pause, name: pause, type: Wait, spec: {duration: 10s}}
            rollbackSteps:
              - step: {identifier: undo, name: undo, type: ShellScript, spec: {shell: Sh, source: {type: Inline, spec: {script: "true"}}}}
`
	r := load.Bytes("traits.yaml", []byte(src), load.Options{ForRun: true})
	if !r.OK() {
		t.Fatalf("load: %s", r.Diags.Render(r.Sources))
	}
	got := map[string]*plan.Traits{}
	plan.Walk(r.Plan.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind != plan.KindStep && n.Traits != nil {
			t.Errorf("%s node %s has traits", n.Kind, n.ID)
		}
		if n.Kind == plan.KindStep {
			got[n.ID] = n.Traits
		}
	})
	check := func(id string, ok func(tr plan.Traits) bool) {
		t.Helper()
		if tr := got[id]; tr == nil || !ok(*tr) {
			t.Errorf("step %s: traits %+v", id, got[id])
		}
	}
	check("sh", func(tr plan.Traits) bool { return tr.Activity == contract.ShellScript && tr.FastPath && tr.Heartbeat })
	check("call", func(tr plan.Traits) bool {
		return tr.Activity == contract.Http && tr.Outcome == "http" && len(tr.Deferred) == 2
	})
	check("pause", func(tr plan.Traits) bool { return tr.Builtin == "wait" && tr.Activity == "" })
	check("undo", func(tr plan.Traits) bool { return tr.Activity == contract.ShellScript })
}
