package steps

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline/reference"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// TestEntriesAreConsistent checks the facts the workflows rely on: each step runs either in an
// activity or in workflow code, deploying steps receive the deployment, container steps run
// in the container activity, and every type is one the reference defines.
func TestEntriesAreConsistent(t *testing.T) {
	builtins := []string{"wait", "approval", "barrier", "queue", "verify", "ticketApproval", "customApproval"}
	for _, e := range entries {
		tr := e.Traits
		if (tr.Activity == "") == (tr.Builtin == "") {
			t.Errorf("%s: exactly one of Activity (%q) and Builtin (%q) must be set", e.Type, tr.Activity, tr.Builtin)
		}
		if tr.Builtin != "" && !slices.Contains(builtins, tr.Builtin) {
			t.Errorf("%s: builtin %q is none of %v", e.Type, tr.Builtin, builtins)
		}
		if e.Deploys != "" && !tr.Deployment {
			t.Errorf("%s deploys %s services but does not receive the stage's deployment", e.Type, e.Deploys)
		}
		if (tr.Container != "") != (tr.Activity == contract.ContainerStep) {
			t.Errorf("%s: container %q with activity %q", e.Type, tr.Container, tr.Activity)
		}
		if tr.OwnPod && tr.Container != plan.ContainerOwn {
			t.Errorf("%s brings its own pod but does not run in a container of its own", e.Type)
		}
		if !slices.Contains(reference.StepTypes, e.Type) {
			t.Errorf("%s is not a step type of the reference schema", e.Type)
		}
		if e.New() == nil {
			t.Errorf("%s has no spec type", e.Type)
		}
	}
}

// TestTraitsOfCopies checks that a node's traits can be changed without changing the catalog.
func TestTraitsOfCopies(t *testing.T) {
	a := TraitsOf("Http")
	a.Deferred[0] = "changed"
	a.FastPath = false
	if b := TraitsOf("Http"); b.Deferred[0] == "changed" || !b.FastPath {
		t.Fatalf("TraitsOf returned the catalog's own traits: %+v", b)
	}
	if TraitsOf("NoSuchType") != nil {
		t.Fatal("an unknown type has traits")
	}
}

// Every step type's spec is defined once, in stepspec: the front end decodes the YAML into it,
// and the family (or the workflow, for a builtin) reads the rendered JSON into the same type.
// A spec type of pipeline/steps would be a second definition the runner cannot share.
func TestEverySpecIsDefinedInStepspec(t *testing.T) {
	want := reflect.TypeOf(stepspec.Text("")).PkgPath()
	for _, e := range entries {
		if got := reflect.TypeOf(e.New()).Elem(); got.PkgPath() != want {
			t.Errorf("%s: spec type %s is defined in %s, not in stepspec", e.Type, got, got.PkgPath())
		}
	}
}
