package workflows_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Workflow code must stay deterministic and free of I/O: its package may not import step
// implementations, the YAML model, or I/O and clock-driven packages directly.
func TestWorkflowImportBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "github.com/gantry-cd/gantry/workflows").Output()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"os", "os/exec", "net", "net/http", "math/rand", "math/rand/v2", "sync",
		"github.com/gantry-cd/gantry/pipeline", "github.com/gantry-cd/gantry/activities/",
		"k8s.io/", "github.com/aws/", "github.com/open-policy-agent/"}
	for _, imp := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if imp == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
				t.Errorf("workflows imports %s", imp)
			}
		}
	}
}
