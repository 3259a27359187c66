package policies

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The starter library's own Rego tests pass (what `gantry policy test policies/library` runs).
func TestLibraryRegoTests(t *testing.T) {
	results, err := Test(context.Background(), "library")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 20 {
		t.Fatalf("only %d Rego tests found", len(results))
	}
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s: %s", r.Name, r.Error)
		}
	}
}

func library(t *testing.T) *Engine {
	t.Helper()
	sub, _ := fs.Sub(Library, "library")
	e, err := LoadFS(context.Background(), sub, "library")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLibraryDecisions(t *testing.T) {
	e := library(t)
	if got := len(e.prepared); got != 8 {
		t.Errorf("%d policies prepared, want 8", got)
	}
	sets := e.OnRunSets(Scope{})
	good := map[string]any{"pipeline": map[string]any{"identifier": "p", "timeout": "1h", "tags": map[string]any{"owner": "a", "team": "b"},
		"stages": []any{}}}
	d, err := e.Evaluate(context.Background(), sets, good)
	if err != nil || d.Status != "pass" {
		t.Fatalf("clean pipeline: %+v %v", d, err)
	}
	bad := map[string]any{"pipeline": map[string]any{"identifier": "p", "variables": []any{
		map[string]any{"name": "db_password", "type": "String", "value": "hunter2"}}}}
	d, _ = e.Evaluate(context.Background(), sets, bad)
	if !d.Denied() || !strings.Contains(strings.Join(d.Messages(), "\n"), "starter_blocking/no_plaintext_secrets") {
		t.Errorf("plain-text secret: %+v", d.Messages())
	}
	warnOnly := map[string]any{"pipeline": map[string]any{"identifier": "p"}}
	d, _ = e.Evaluate(context.Background(), sets, warnOnly)
	if d.Status != "warning" {
		t.Errorf("missing tags only: %s %v", d.Status, d.Messages())
	}
}

// Broken Rego names its position; an evaluation error and a timeout fail closed.
func TestFailures(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package gantry.broken\nimport rego.v1\ndeny contains msg if {\n  msg := \n}\n"), 0o600)
	if _, err := Load(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "broken.rego:") {
		t.Errorf("broken Rego: %v", err)
	}

	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "boom.rego"), []byte(`package gantry.boom
import rego.v1
deny contains msg if {
	msg := sprintf("%d", [to_number(input.x)])
}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "slow.rego"), []byte(`package gantry.slow
import rego.v1
deny contains "never" if {
	count([x | some x in numbers.range(1, 100000000); x < 0]) > 0
}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "sets.yaml"), []byte("policySets:\n  - {identifier: s, severity: warning, action: onrun, global: true, policies: [boom, slow]}\n"), 0o600)
	e, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e.Timeout = 200 * time.Millisecond
	d, err := e.Evaluate(context.Background(), []string{"s"}, map[string]any{"x": "not a number"})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, p := range d.Sets[0].Policies {
		errs = append(errs, p.Error)
	}
	if d.Status != "warning" || errs[0] == "" || !strings.Contains(errs[1], "timed out") {
		t.Errorf("status %s errors %q", d.Status, errs)
	}
}
