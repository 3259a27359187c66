package policies

import (
	"context"
	"strings"
	"testing"
)

const noLatest = `package gantry.no_latest
import rego.v1
deny contains msg if { input.pipeline.tag == "latest"; msg := "no latest" }
`

// A library kept in Git joins the server's own: a set of either may name the other's policies,
// and the joined engine decides as one. What two libraries both define is refused, naming both.
func TestJoinedLibrariesDecideAsOne(t *testing.T) {
	ctx := context.Background()
	local := Bundle{Name: "local", Sets: []byte("policySets:\n  - {identifier: guard, severity: error, action: onrun, global: true, policies: [no_latest]}\n")}
	git := Bundle{Name: "policies@abc1234:gov", Modules: map[string]string{"policies@abc1234:gov/no_latest.rego": noLatest}}
	if _, err := Join(ctx, local); err == nil || !strings.Contains(err.Error(), `names policy "no_latest"`) {
		t.Fatalf("the local sets alone: %v", err)
	}
	base, err := Join(ctx, Bundle{Name: "local", Modules: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := base.With(ctx, local, git)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Evaluate(ctx, e.OnRunSets(Scope{}), map[string]any{"pipeline": map[string]any{"tag": "latest"}})
	if err != nil || !d.Denied() || d.Messages()[0] != "guard/no_latest: no latest" {
		t.Fatalf("joined decision: %+v %v", d, err)
	}
	var none *Engine
	if e, err := none.With(ctx, git); err != nil || len(e.prepared) != 1 {
		t.Fatalf("a nil engine with a library: %v", err)
	}

	twice := Bundle{Name: "local", Modules: map[string]string{"local/x.rego": noLatest}}
	if _, err := Join(ctx, twice, git); err == nil || !strings.Contains(err.Error(), "policy no_latest is defined by both local/x.rego and policies@abc1234:gov/no_latest.rego") {
		t.Errorf("a package in two libraries: %v", err)
	}
	setTwice := Bundle{Name: "other", Sets: local.Sets}
	if _, err := Join(ctx, git, local, setTwice); err == nil || !strings.Contains(err.Error(), "other/sets.yaml: policy set guard is defined twice") {
		t.Errorf("a set in two libraries: %v", err)
	}
	broken := Bundle{Name: "policies@abc1234:gov", Modules: map[string]string{"policies@abc1234:gov/bad.rego": "package gantry.bad\ndeny contains msg if {\n"}}
	if _, err := Join(ctx, broken); err == nil || !strings.Contains(err.Error(), "policies@abc1234:gov/bad.rego:") {
		t.Errorf("broken Rego names its file in the repository: %v", err)
	}
}
