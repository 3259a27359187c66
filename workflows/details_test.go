package workflows

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

func TestTreeMarkdown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(1500 * time.Millisecond)
	root := &Node{ID: "deploy", Type: "Deployment", Status: status.InterventionWaiting, Children: []*Node{
		{ID: "build", Path: "deploy.build", Kind: "step", Type: "ShellScript", Status: status.Failed, StartedAt: &t0, EndedAt: &t1,
			Failure: &contract.Failure{Category: contract.Unknown, Message: "exit 1\nmore"}},
		{Kind: "parallel", Children: []*Node{
			{ID: "fix", Path: "deploy.fix", Kind: "step", Type: "ShellScript", Status: status.InterventionWaiting, StartedAt: &t0, Actions: []string{"Retry", "Abort"}},
		}},
		{ID: "unit", Path: "deploy.unit", Kind: "step", Type: "Run", Status: status.IgnoreFailed, StartedAt: &t0, EndedAt: &t1,
			Tests: &contract.TestSummary{Total: 3, Failed: 1, Failing: []string{"pkg.TestB"}}},
	}}
	md := TreeMarkdown(root, "p-1", t1.Add(time.Second))
	for _, want := range []string{
		"**deploy (Deployment)** ‖ INTERVENTION_WAITING",
		"- ✗ build (ShellScript) · FAILED · 1.5s · [log](/gantry/logs/p-1/deploy.build#failure) — Unknown: exit 1 more",
		"- ‖ fix (ShellScript) · INTERVENTION_WAITING · 2.5s · [log](/gantry/logs/p-1/deploy.fix) · [decide](/gantry/decide/p-1/deploy.fix) — decide with `gantry intervene p-1 deploy.fix --action Retry|Abort`",
		"- ✓ unit (Run) · IGNORE_FAILED · 1.5s · [log](/gantry/logs/p-1/deploy.unit) · tests: 3, 1 failed (pkg.TestB)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// A stage renders its tree after every change, keeping the lines of nodes that ended or have not
// started: each render is what rendering afresh gives, as nodes start, end, fail, run again,
// wait for a person and are skipped.
func TestTreeRendererKeepsOnlyWhatDidNotChange(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	a := &Node{ID: "a", Path: "s.a", Type: "ShellScript", Status: status.Running, StartedAt: at(0)}
	b := &Node{ID: "b", Path: "s.b", Type: "ShellScript", Status: status.NotStarted}
	c := &Node{ID: "c", Path: "s.c", Type: "HarnessApproval", Status: status.NotStarted}
	root := &Node{ID: "s", Type: "Custom", Status: status.Running, Children: []*Node{a, b, c}}
	var r treeRenderer
	check := func(step string, now time.Duration) {
		t.Helper()
		if got, want := r.render(root, "p-1", t0.Add(now)), TreeMarkdown(root, "p-1", t0.Add(now)); got != want {
			t.Fatalf("%s: kept lines differ from a fresh render:\n%s\nwant:\n%s", step, got, want)
		}
	}
	check("a running", time.Second)
	if _, ok := r.kept[b]; !ok {
		t.Fatal("the line of a step that has not started is not kept")
	}
	a.Status, a.EndedAt = status.Succeeded, at(2*time.Second)
	check("a ended", 3*time.Second)
	b.Status, b.StartedAt = status.Running, at(3*time.Second)
	check("b running", 4*time.Second)
	b.Status, b.EndedAt, b.Failure = status.Failed, at(5*time.Second), &contract.Failure{Category: contract.Unknown, Message: "exit 1"}
	check("b failed", 5*time.Second)
	// A retry runs b again, and it ends differently.
	b.Status, b.StartedAt, b.EndedAt, b.Failure = status.Running, at(6*time.Second), nil, nil
	check("b again", 7*time.Second)
	b.Status, b.EndedAt = status.Succeeded, at(8*time.Second)
	check("b succeeded", 9*time.Second)
	c.Status, c.StartedAt = status.ApprovalWaiting, at(9*time.Second)
	check("c waiting", 10*time.Second)
	c.Status, c.StartedAt = status.Skipped, nil
	check("c skipped", 10*time.Second)
	root.Children = root.Children[:2]
	// A node moved under a group renders at its new depth.
	root.Children = []*Node{{ID: "g", Path: "s.g", Type: "StepGroup", Status: status.Running, StartedAt: at(0), Children: []*Node{a, b}}}
	check("in a group", 10*time.Second)
	if _, ok := r.kept[c]; len(r.kept) != 3 || !ok {
		t.Fatalf("the renderer keeps %d lines, want the 2 ended steps' and the skipped one's", len(r.kept))
	}
}

// BenchmarkTreeRender renders a 100-step stage after each of its steps, as the stage does.
func BenchmarkTreeRender(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < b.N; i++ {
		root := &Node{ID: "s", Type: "Custom", Status: status.Running}
		for j := 0; j < 100; j++ {
			root.Children = append(root.Children, &Node{ID: fmt.Sprintf("s%d", j), Path: fmt.Sprintf("s.s%d", j), Type: "ShellScript", Status: status.NotStarted})
		}
		var r treeRenderer
		for j, n := range root.Children {
			start, end := t0.Add(time.Duration(j)*time.Second), t0.Add(time.Duration(j)*time.Second+time.Millisecond)
			n.Status, n.StartedAt = status.Running, &start
			r.render(root, "p-1", start)
			n.Status, n.EndedAt = status.Succeeded, &end
			r.render(root, "p-1", end)
		}
	}
}
