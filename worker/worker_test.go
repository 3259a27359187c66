package worker

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities/asg"
	"github.com/gantry-cd/gantry/activities/container"
	"github.com/gantry-cd/gantry/activities/ecs"
	"github.com/gantry-cd/gantry/activities/k8s"
	"github.com/gantry-cd/gantry/activities/lambda"
	"github.com/gantry-cd/gantry/activities/terraform"
	"github.com/gantry-cd/gantry/activities/tickets"
	"github.com/gantry-cd/gantry/contract"
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

// Each step type of a family that registers its handlers has one, and each handler a step
// type of the catalog that runs in that family's activity.
func TestEveryStepTypeHasItsHandler(t *testing.T) {
	families := map[string][]string{contract.AwsLambda: lambda.Handles(), contract.Ticket: tickets.Handles(), contract.Asg: asg.Handles(), contract.Ecs: ecs.Handles(),
		contract.Terraform: terraform.Handles(), contract.Kubernetes: k8s.Handles(), contract.ContainerStep: container.Handles()}
	for activity, handles := range families {
		var types []string
		for _, e := range steps.Entries() {
			if e.Traits.Activity == activity {
				types = append(types, e.Type)
			}
		}
		slices.Sort(types)
		if !slices.Equal(types, handles) {
			t.Errorf("activity %s: the catalog's step types %v, the family's handlers %v", activity, types, handles)
		}
	}
	// A build machine runs the container steps the catalog says it does, and those only.
	var onMachine []string
	for _, e := range steps.Entries() {
		if e.OnMachine != "" {
			onMachine = append(onMachine, e.Type)
		}
	}
	slices.Sort(onMachine)
	if got := container.MachineHandles(); !slices.Equal(onMachine, got) {
		t.Errorf("build machines: the catalog's step types %v, the family's %v", onMachine, got)
	}
}

// TestWorkflowPollersAutoscale checks that the workflow-task pollers scale up to the default,
// or to the number a worker is given, rather than the SDK's fixed two.
func TestWorkflowPollersAutoscale(t *testing.T) {
	for _, c := range []struct {
		max  int
		want string
	}{{0, "maximumNumberOfPollers:100"}, {7, "maximumNumberOfPollers:7"}} {
		got := fmt.Sprintf("%T %+v", workflowPollers(c.max), workflowPollers(c.max))
		if !strings.Contains(got, "Autoscaling") || !strings.Contains(got, c.want) {
			t.Errorf("WorkflowPollers %d: poller behaviour %s, want autoscaling with %s", c.max, got, c.want)
		}
	}
}
