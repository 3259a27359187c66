package e2e

import (
	"context"
	_ "embed"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// Steps with delegate selectors run only on workers with those tags (spec 1.9: the step's
// list, else its group's, else its stage's); a step whose selectors no worker has fails with
// DelegateProvisioning after the wait instead of hanging.
func TestDelegateSelectors(t *testing.T) {
	tagged := logs.Store{Dir: t.TempDir()}
	ws, err := worker.Delegates(env.client, worker.Options{Logs: tagged, Tags: []string{"linux", "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	src := delegatesPipeline
	p := compile(t, "delegates.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{DelegateWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"s.inherits": status.Succeeded, "s.gpu": status.Succeeded,
		"s.windows": status.IgnoreFailed, "plain.anywhere": status.Succeeded})
	if f := res.Tree.Find("s.windows").Failure; f == nil || f.Category != contract.DelegateProvisioning || !strings.Contains(f.Message, "gantry worker --tags windows") {
		t.Errorf("windows step failure %+v", f)
	}
	// The tagged workers ran the selected steps (their logs are in the tagged workers' store);
	// the main worker ran the rest.
	for path, onTagged := range map[string]bool{"s.inherits": true, "s.gpu": true, "plain.anywhere": false} {
		_, errTagged := os.Stat(tagged.Path(exec.ID, path))
		_, errMain := os.Stat(env.logs.Path(exec.ID, path))
		if (errTagged == nil) != onTagged || (errMain == nil) == onTagged {
			t.Errorf("%s: ran on the tagged worker %v, on the main worker %v; want tagged=%v", path, errTagged == nil, errMain == nil, onTagged)
		}
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/delegates.yaml
var delegatesPipeline string
