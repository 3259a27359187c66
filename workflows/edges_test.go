package workflows_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Workflow code meets the front end only through the plan: it depends on the plan, the
// expression engine, the activity contract, statuses and the step vocabulary (stepspec: the
// names and specs of step types, which a custom approval's script step is given), never on the
// YAML front end.
func TestWorkflowsDependOnlyOnThePlan(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"/plan", "/expressions", "/contract", "/status", "/stepspec", "/workflows"}
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, "github.com/gantry-cd/gantry")
		if !ok {
			continue
		}
		fine := false
		for _, a := range allowed {
			fine = fine || rest == a || strings.HasPrefix(rest, a+"/")
		}
		if !fine {
			t.Errorf("workflows depends on %s", pkg)
		}
	}
}
