package worker

import (
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/pipeline/steps"
)

// recorder records what a worker registers.
type recorder struct{ activities map[string]bool }

func (r *recorder) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) {}

func (r *recorder) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.activities[o.Name] = true
}

// TestEveryStepTypeHasItsActivity checks that the activity each catalog entry names is one a
// worker registers, so a step type added to the catalog cannot be scheduled to nobody.
func TestEveryStepTypeHasItsActivity(t *testing.T) {
	r := &recorder{activities: map[string]bool{}}
	Register(r, Options{})
	for _, e := range steps.Entries() {
		if a := e.Traits.Activity; a != "" && !r.activities[a] {
			t.Errorf("step type %s runs in activity %s, which the worker does not register", e.Type, a)
		}
	}
}
