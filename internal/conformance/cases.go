// Package conformance holds the conformance cases of spec section 16 as pipelines with their
// expected final statuses, shared by the workflow unit tests (Temporal test suite) and the
// end-to-end tests (embedded server).
package conformance

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Case is one conformance case.
type Case struct {
	ID   string
	YAML string
	// Want maps node paths ("" for the pipeline) to their final status; NOT_STARTED means the
	// node was never visited.
	Want map[string]status.Status
	// Outputs maps a step path to the outputVariables it must end with.
	Outputs map[string]map[string]any
	// Order lists node paths that must have started in this order.
	Order []string
	// Attempts maps step paths to their attempt counts.
	Attempts map[string]int
	// Interventions are user decisions the runner sends once the node reaches When.
	Interventions []Intervention
	// Log is a file the steps write; LogWant is its expected content after the run.
	Log, LogWant string
}

// Intervention is one user decision in a case.
type Intervention struct {
	Path   string
	When   status.Status
	Action string
}

// Step fragments of spec 16's notation.
func ok(id string) string   { return script(id, "exit 0", "") }
func fail(id string) string { return script(id, "exit 1", "") }
func sleep(id string, secs int) string {
	return script(id, fmt.Sprintf("sleep %d", secs), "")
}

func script(id, body, when string) string { return step(id, body, "1m", when, "") }

// step is a ShellScript step with a timeout, a when and failure strategies (YAML flow text).
func step(id, body, timeout, when, failure string) string {
	s := fmt.Sprintf(`{step: {type: ShellScript, name: %s, identifier: %s, timeout: %s, spec: {shell: Bash, source: {type: Inline, spec: {script: %q}}}`, id, id, timeout, body)
	if when != "" {
		s += ", when: " + when
	}
	if failure != "" {
		s += ", failureStrategies: " + failure
	}
	return s + "}}"
}

func whenStep(id, body, when string) string { return script(id, body, when) }

func stage(id, when string, steps ...string) string {
	w := ""
	if when != "" {
		w = ", when: " + when
	}
	return fmt.Sprintf(`{stage: {name: %s, identifier: %s, type: Custom%s, spec: {execution: {steps: [%s]}}}}`, id, id, w, strings.Join(steps, ", "))
}

func pipeline(id string, stages ...string) string {
	return fmt.Sprintf("pipeline:\n  name: %s\n  identifier: %s\n  stages:\n", id, id) +
		"    - " + strings.Join(stages, "\n    - ") + "\n"
}

func parallel(members ...string) string { return "{parallel: [" + strings.Join(members, ", ") + "]}" }

const (
	S  = status.Succeeded
	F  = status.Failed
	K  = status.Skipped
	NS = status.NotStarted
)

// Progression returns cases C01-C11 (spec 16.A: progression and roll-up). sleepSecs is the
// sleep of the long parallel siblings in C08/C09 (the spec's 30 s and 20 s, shortened).
func Progression(sleepSecs int) []Case {
	return []Case{
		{ID: "C01", YAML: pipeline("c01", stage("s1", "", ok("a"), ok("b"))),
			Want: map[string]status.Status{"": S, "s1": S, "s1.a": S, "s1.b": S}},
		{ID: "C02", YAML: pipeline("c02", stage("s1", "", fail("a"), ok("b")), stage("s2", "", ok("c"))),
			Want: map[string]status.Status{"": F, "s1": F, "s1.a": F, "s1.b": K, "s2": K, "s2.c": NS}},
		{ID: "C03", YAML: pipeline("c03", stage("s1", "", fail("a"), whenStep("notify", "exit 0", "{stageStatus: Failure}"))),
			Want: map[string]status.Status{"": F, "s1": F, "s1.a": F, "s1.notify": S}},
		{ID: "C04", YAML: pipeline("c04", stage("s1", "", ok("a"), whenStep("notify", "exit 0", "{stageStatus: Failure}"))),
			Want: map[string]status.Status{"": S, "s1": S, "s1.a": S, "s1.notify": K}},
		{ID: "C05", YAML: pipeline("c05", stage("s1", "", fail("a"), whenStep("cleanup", "exit 0", "{stageStatus: All}"), ok("b"))),
			Want: map[string]status.Status{"": F, "s1": F, "s1.a": F, "s1.cleanup": S, "s1.b": K}},
		{ID: "C06", YAML: pipeline("c06", stage("s1", "", fail("a")), stage("s2", "{pipelineStatus: Failure}", ok("page")), stage("s3", "", ok("c"))),
			Want: map[string]status.Status{"": F, "s1": F, "s2": S, "s2.page": S, "s3": K, "s3.c": NS}},
		{ID: "C07", YAML: pipeline("c07", stage("s1", `{pipelineStatus: Success, condition: "false"}`, ok("a")), stage("s2", `{pipelineStatus: Success, condition: "false"}`, ok("b"))),
			Want: map[string]status.Status{"": S, "s1": K, "s2": K, "s1.a": NS}},
		{ID: "C08", YAML: pipeline("c08", parallel(stage("p1", "", fail("a")), stage("p2", "", sleep("b", sleepSecs))), stage("s3", "", ok("c"))),
			Want: map[string]status.Status{"": F, "p1": F, "p1.a": F, "p2": S, "p2.b": S, "s3": K, "s3.c": NS}},
		{ID: "C09", YAML: pipeline("c09", stage("s1", "", parallel(fail("a"), sleep("b", sleepSecs)), ok("c"))),
			Want: map[string]status.Status{"": F, "s1": F, "s1.a": F, "s1.b": S, "s1.c": K}},
		{ID: "C10", YAML: pipeline("c10", stage("s1", "", ok("a"), whenStep("x", "exit 0", `{stageStatus: Success, condition: "false"}`), ok("b"))),
			Want: map[string]status.Status{"": S, "s1": S, "s1.a": S, "s1.x": K, "s1.b": S}},
		{ID: "C11", YAML: pipeline("c11", stage("s1", "", whenStep("a", "exit 0", `{stageStatus: Success, condition: "false"}`), whenStep("b", "exit 0", `{stageStatus: All, condition: "false"}`))),
			Want: map[string]status.Status{"": S, "s1": S, "s1.a": K, "s1.b": K}},
	}
}

// Check reports every node of tree whose status differs from want.
func Check(t testing.TB, tree *workflows.Node, want map[string]status.Status) {
	t.Helper()
	for _, path := range sortedPaths(want) {
		n := tree
		if path != "" {
			n = tree.Find(path)
		}
		if n == nil {
			if want[path] != status.NotStarted { // an iteration never created was never started
				t.Errorf("node %q missing from the tree", path)
			}
			continue
		}
		if n.Status != want[path] {
			t.Errorf("node %q: status %s, want %s (failure: %+v)", path, n.Status, want[path], n.Failure)
		}
	}
}

func sortedPaths(m map[string]status.Status) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Verify checks a final tree against everything a case expects.
func Verify(t testing.TB, tree *workflows.Node, c Case) {
	t.Helper()
	Check(t, tree, c.Want)
	for path, want := range c.Attempts {
		if n := tree.Find(path); n == nil || n.Attempts != want {
			t.Errorf("node %q: attempts %v, want %d", path, attempts(n), want)
		}
	}
	for path, want := range c.Outputs {
		n := tree.Find(path)
		var got map[string]any
		if n != nil {
			got, _ = n.Outputs["outputVariables"].(map[string]any)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("node %q: output %s = %v, want %v", path, k, got[k], v)
			}
		}
	}
	if c.Log != "" {
		if b, _ := os.ReadFile(c.Log); string(b) != c.LogWant {
			t.Errorf("%s:\n%s\nwant:\n%s", c.Log, b, c.LogWant)
		}
	}
	for i := 1; i < len(c.Order); i++ {
		a, b := tree.Find(c.Order[i-1]), tree.Find(c.Order[i])
		if a == nil || b == nil || a.StartedAt == nil || b.StartedAt == nil || b.StartedAt.Before(*a.StartedAt) {
			t.Errorf("%s must start after %s", c.Order[i], c.Order[i-1])
		}
	}
}

func attempts(n *workflows.Node) any {
	if n == nil {
		return "missing"
	}
	return n.Attempts
}
