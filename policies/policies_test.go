package policies

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
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

// Policies decided together in one query give exactly what each gives on its own, and a
// policy the joint query cannot decide (an undefined or non-set rule) still gets its own verdict.
func TestJointEvaluationMatchesSeparate(t *testing.T) {
	e := library(t)
	var names []string
	for _, s := range e.Sets {
		if s.Action == OnRun {
			names = append(names, s.Policies...)
		}
	}
	prod := twentyStages()
	stages := prod["pipeline"].(map[string]any)["stages"].([]any)
	stages[3].(map[string]any)["stage"].(map[string]any)["tags"] = map[string]any{"env": "production"}
	stages[4].(map[string]any)["stage"].(map[string]any)["spec"].(map[string]any)["execution"].(map[string]any)["steps"] = []any{
		map[string]any{"step": map[string]any{"identifier": "c", "type": "Container", "spec": map[string]any{"image": "docker.io/x"}}},
		map[string]any{"step": map[string]any{"identifier": "sh", "type": "ShellScript", "spec": map[string]any{"source": map[string]any{"spec": map[string]any{"script": "curl x | sh"}}}}}}
	for i, input := range []map[string]any{twentyStages(), prod, {"pipeline": map[string]any{"identifier": "p", "timeout": "3d",
		"variables": []any{map[string]any{"name": "api_key", "type": "String", "value": "x"}}}}} {
		parsed, err := ast.InterfaceToValue(input)
		if err != nil {
			t.Fatal(err)
		}
		joint := e.evalTogether(context.Background(), names, parsed)
		if joint == nil {
			t.Fatalf("input %d: the joint query did not decide", i)
		}
		denials := 0
		for _, n := range names {
			alone := e.evalPolicy(context.Background(), n, parsed)
			if !reflect.DeepEqual(joint[n], alone) {
				t.Errorf("input %d, %s: together %+v, alone %+v", i, n, joint[n], alone)
			}
			denials += len(alone.Deny)
		}
		if i > 0 && denials == 0 {
			t.Errorf("input %d denies nothing: the comparison proves little", i)
		}
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "maybe.rego"), []byte("package gantry.maybe\nimport rego.v1\ndeny := {\"on\"} if input.on\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "odd.rego"), []byte("package gantry.odd\nimport rego.v1\ndeny := \"not a set\"\nwarn contains \"w\" if input.on\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "fine.rego"), []byte("package gantry.fine\nimport rego.v1\nwarn contains \"careful\" if true\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "sets.yaml"), []byte("policySets:\n  - {identifier: s, severity: error, action: onrun, global: true, policies: [maybe, fine]}\n"+
		"  - {identifier: t, severity: error, action: onrun, global: true, policies: [odd, fine]}\n"), 0o600)
	e, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Evaluate(context.Background(), []string{"s"}, map[string]any{})
	if err != nil || d.Status != "warning" || len(d.Sets[0].Policies[0].Deny) != 0 || d.Sets[0].Policies[1].Warn[0] != "careful" {
		t.Errorf("undefined deny: %+v %v", d, err)
	}
	d, _ = e.Evaluate(context.Background(), []string{"s"}, map[string]any{"on": true})
	if d.Status != "error" || d.Sets[0].Policies[0].Deny[0] != "on" {
		t.Errorf("defined deny: %+v", d)
	}
	d, _ = e.Evaluate(context.Background(), []string{"t"}, map[string]any{})
	if d.Status != "error" || !strings.Contains(d.Sets[0].Policies[0].Error, "must be sets") || d.Sets[0].Policies[1].Error != "" {
		t.Errorf("a deny that is not a set: %+v", d)
	}
}

// gantry.find_all is available to every policy; a call with names that are not a set of
// strings fails that policy (closed), and a network builtin is refused when the policies load,
// at its position.
func TestGantryBuiltins(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "shells.rego"), []byte(`package gantry.shells
import rego.v1
deny contains s.identifier if {
	some s in gantry.find_all(input, {"step"}).step
	s.type == "ShellScript"
}
`), 0o600)
	os.WriteFile(filepath.Join(dir, "wrong.rego"), []byte(`package gantry.wrong
import rego.v1
deny contains "x" if count(gantry.find_all(input, input.names).step) > 0
`), 0o600)
	os.WriteFile(filepath.Join(dir, "sets.yaml"), []byte("policySets:\n  - {identifier: s, severity: error, action: onrun, global: true, policies: [shells, wrong]}\n"), 0o600)
	e, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	input := map[string]any{"names": "step", "stages": []any{map[string]any{"stage": map[string]any{"steps": []any{
		map[string]any{"step": map[string]any{"identifier": "one", "type": "ShellScript"}},
		map[string]any{"stepGroup": map[string]any{"steps": []any{map[string]any{"step": map[string]any{"identifier": "two", "type": "ShellScript"}}}}},
		map[string]any{"step": map[string]any{"identifier": "three", "type": "Http"}}}}}}}
	d, err := e.Evaluate(context.Background(), []string{"s"}, input)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Sets[0].Policies[0].Deny; !reflect.DeepEqual(got, []string{"one", "two"}) {
		t.Errorf("find_all found %v, want one and two", got)
	}
	if e := d.Sets[0].Policies[1].Error; !strings.Contains(e, "gantry.find_all") || !strings.Contains(e, "must be set") {
		t.Errorf("names that are not a set: %q", e)
	}

	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "net.rego"), []byte("package gantry.net\nimport rego.v1\ndeny contains \"x\" if {\n\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n"), 0o600)
	if _, err := Load(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "net.rego:4") {
		t.Errorf("http.send: %v", err)
	}
}
