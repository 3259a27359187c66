package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// gantry run on the embedded server: JSON shape, exit codes, and state kept in the data
// directory between runs (sequence numbers, status, list, logs).
func TestRunOnEmbeddedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	data := t.TempDir()
	code, out, errs := run("run", "../examples/02-build-test-deploy.yaml", "--data-dir", data, "--output", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var doc struct {
		ExecutionID string `json:"executionId"`
		Status      string `json:"status"`
		Nodes       []struct {
			Path     string         `json:"path"`
			Type     string         `json:"type"`
			Status   string         `json:"status"`
			Attempts int            `json:"attempts"`
			Outputs  map[string]any `json:"outputs"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.ExecutionID != "build_test_deploy-1" || doc.Status != "SUCCEEDED" {
		t.Errorf("execution %s status %s", doc.ExecutionID, doc.Status)
	}
	var paths []string
	for _, n := range doc.Nodes {
		paths = append(paths, n.Path+":"+n.Type+":"+n.Status)
	}
	want := "build:Custom:SUCCEEDED build.version:ShellScript:SUCCEEDED test:Custom:SUCCEEDED test.unit:ShellScript:SUCCEEDED deploy:Custom:SUCCEEDED deploy.deploy:ShellScript:SUCCEEDED"
	if strings.Join(paths, " ") != want {
		t.Errorf("nodes\n got %s\nwant %s", strings.Join(paths, " "), want)
	}

	// A failing pipeline exits 1 and the text view shows the failure; the sequence goes on.
	failing := filepath.Join(t.TempDir(), "fail.yaml")
	src := strings.ReplaceAll(mustRead(t, "../examples/02-build-test-deploy.yaml"), "name: Build test deploy", "name: Build test deploy")
	src = strings.Replace(src, "script: |", "script: |\n                          echo about to fail; exit 3", 1)
	if err := os.WriteFile(failing, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run("run", failing, "--data-dir", data)
	if code != ExitInvalid || !strings.Contains(out, "execution build_test_deploy-2") || !strings.Contains(out, "script exited with code 3; last output: about to fail") {
		t.Errorf("failing run: exit %d\n%s", code, out)
	}
	code, out, _ = run("status", "build_test_deploy-2", "--data-dir", data)
	if code != ExitOK || !strings.Contains(out, "FAILED") || !strings.Contains(out, "SKIPPED") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	code, out, _ = run("list", "--data-dir", data)
	if code != ExitOK || !strings.Contains(out, "build_test_deploy-2") || !strings.Contains(out, "build_test_deploy-1") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	// -o json on the lists; watch of an ended execution prints its tree and exits as it ended.
	code, out, _ = run("list", "--data-dir", data, "-o", "json")
	var listed struct {
		Executions []struct{ ExecutionID, Status string }
	}
	if err := json.Unmarshal([]byte(out), &listed); code != ExitOK || err != nil || len(listed.Executions) != 2 ||
		listed.Executions[0].ExecutionID != "build_test_deploy-2" || listed.Executions[0].Status != "FAILED" {
		t.Errorf("list -o json: exit %d %v\n%s", code, err, out)
	}
	code, out, _ = run("approvals", "--data-dir", data, "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"pending": []`) {
		t.Errorf("approvals -o json: exit %d\n%s", code, out)
	}
	code, out, _ = run("watch", "build_test_deploy-2", "--data-dir", data)
	if code != ExitInvalid || !strings.Contains(out, "build.version") || !strings.Contains(out, "FAILED") {
		t.Errorf("watch of a failed execution: exit %d\n%s", code, out)
	}
	if code, _, errs = run("watch", "nothing-1", "--data-dir", data); code != ExitUsage || !strings.Contains(errs, "not found") {
		t.Errorf("watch of an unknown execution: exit %d\n%s", code, errs)
	}
	code, out, _ = run("logs", "build_test_deploy-2", "build.version", "--data-dir", data)
	if code != ExitOK || !strings.Contains(out, "about to fail") {
		t.Errorf("logs: exit %d\n%s", code, out)
	}

	// Invalid input starts nothing.
	code, _, errs = run("run", "../examples/invalid/10-unknown-step-type.yaml", "--data-dir", data)
	if code != ExitInvalid || !strings.Contains(errs, "nothing was started") {
		t.Errorf("invalid: exit %d\n%s", code, errs)
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every failed node reports its category, message, the strategy action taken and its attempts,
// in `run --output json` and in `status -o json` (issue 18).
func TestRunJSONReportsFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "failures.yaml")
	src := `pipeline:
  name: failures
  identifier: failures
  projectIdentifier: demo
  orgIdentifier: default
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: flaky
                  identifier: flaky
                  timeout: 1m
                  failureStrategies:
                    - onFailure:
                        errors: [AllErrors]
                        action:
                          type: Retry
                          spec:
                            retryCount: 1
                            retryIntervals: [10s]
                            onRetryFailure:
                              action:
                                type: Ignore
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: echo flaking; exit 4}}
              - step:
                  type: ShellScript
                  name: broken
                  identifier: broken
                  timeout: 1m
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: exit 5}}
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("run", file, "--data-dir", data, "--output", "json")
	if code != ExitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var doc struct {
		Status string `json:"status"`
		Nodes  []struct {
			Path     string       `json:"path"`
			Status   string       `json:"status"`
			Attempts int          `json:"attempts"`
			Failure  *jsonFailure `json:"failure"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errs)
	}
	got := map[string]string{}
	for _, n := range doc.Nodes {
		f := "-"
		if n.Failure != nil {
			f = n.Failure.Category + "|" + n.Failure.Action + "|" + n.Failure.Message
		}
		got[n.Path] = n.Status + " " + f + " attempts=" + strconv.Itoa(n.Attempts)
	}
	want := map[string]string{
		"s.flaky":  "IGNORE_FAILED Unknown|Ignore|script exited with code 4; last output: flaking attempts=2",
		"s.broken": "FAILED Unknown|None|script exited with code 5 attempts=1",
	}
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s\n got %s\nwant %s", path, got[path], w)
		}
	}
	if doc.Status != "FAILED" {
		t.Errorf("status %s", doc.Status)
	}

	// status -o json prints the same shape.
	code, out, errs = run("status", "failures-1", "--data-dir", data, "-o", "json")
	if code != ExitOK {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
	for _, w := range []string{`"action": "Ignore"`, `"attempts": 2`, `"category": "Unknown"`} {
		if !strings.Contains(out, w) {
			t.Errorf("status -o json lacks %s\n%s", w, out)
		}
	}
}

var updateGolden = flag.Bool("update", false, "rewrite golden files")

// validate --output json: the shape and the three verdicts, against a golden file.
func TestValidateJSONGolden(t *testing.T) {
	files := []string{"testdata/validate/valid.yaml", "testdata/validate/unsupported.yaml", "testdata/validate/invalid.yaml"}
	code, out, errs := run(append([]string{"validate", "--output", "json"}, files...)...)
	if code != ExitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	golden := "testdata/validate/golden.json"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := mustRead(t, golden); out != want {
		t.Errorf("validate --output json differs from %s (go test ./cli -run TestValidateJSONGolden -update)\n got %s\nwant %s", golden, out, want)
	}
	// A valid file alone exits 0; unsupported alone exits 1.
	if code, out, _ := run("validate", "-o", "json", files[0]); code != ExitOK || !strings.Contains(out, `"valid": true`) {
		t.Errorf("valid: exit %d\n%s", code, out)
	}
	if code, out, _ := run("validate", files[1]); code != ExitInvalid || !strings.Contains(out, "unsupported: 3 features Gantry cannot run yet") || strings.Contains(out, "invalid") {
		t.Errorf("unsupported: exit %d\n%s", code, out)
	}
}

// A waiting node says how to decide it: the command with the execution, step, inputs and
// approvers still needed, and the decision page when a Web UI is known.
func TestWaitingNodesSayHowToDecide(t *testing.T) {
	n := &workflows.Node{Path: "sign_off.prod_signoff", Status: status.ApprovalWaiting,
		Approval: &workflows.ApprovalView{MinimumCount: 2, Inputs: []string{"changeTicket"}}}
	got := pages{execution: "gate-1", ui: "http://127.0.0.1:8233"}.decide(n)
	want := "decide with: gantry approve gate-1 --step sign_off.prod_signoff --input changeTicket=VALUE (2 approvers still needed; or gantry reject), or http://127.0.0.1:8233/gantry/decide/gate-1/sign_off.prod_signoff"
	if got != want {
		t.Errorf("approval:\n got %s\nwant %s", got, want)
	}
	n = &workflows.Node{Path: "s.x", Status: status.InterventionWaiting, Actions: []string{"Retry", "Abort"}}
	if got := (pages{execution: "p-3"}).decide(n); got != "decide with: gantry intervene p-3 s.x --action Retry|Abort" {
		t.Errorf("intervention: %s", got)
	}
	n = &workflows.Node{Path: "s.i", Status: status.InputWaiting, Inputs: []string{"region"}}
	if got := (pages{execution: "p-4"}).decide(n); got != "decide with: gantry input p-4 --step s.i --set region=VALUE" {
		t.Errorf("input: %s", got)
	}
}

// A remote pipeline's node says which files the run read from Git and at which commits.
func TestTreeNamesTheCommitsReadFromGit(t *testing.T) {
	n := &workflows.Node{Kind: "pipeline", Sources: []plan.Source{
		{Kind: "pipeline", Identifier: "release", Repo: "app", FilePath: ".harness/release.yaml", Branch: "main", Commit: strings.Repeat("a1", 20)},
		{Kind: "template", Identifier: "build", Repo: "shared", FilePath: "build.yaml", Branch: "stable", Commit: strings.Repeat("b2", 20)},
	}}
	want := "(from Git: pipeline release app@a1a1a1a1a1a1:.harness/release.yaml (main), template build shared@b2b2b2b2b2b2:build.yaml (stable))"
	if got := detail(n, pages{}); got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
}

// gantry run on a data directory of its own is the only worker, so its secret store (the
// GANTRY_SECRET_ variables and the secrets file) is every secret a step can read: a name the
// store lacks is an unknown reference before anything starts (an error with --strict), with
// where to add it; names it holds pass.
func TestRunChecksSecretNamesAgainstItsStore(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "secrets.yaml"), []byte("db_password: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GANTRY_SECRET_API_KEY", "k")
	p := filepath.Join(t.TempDir(), "p.yaml")
	write := func(script string) {
		src := `pipeline:
  name: s
  identifier: s
  stages:
    - stage:
        name: a
        identifier: a
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: x, identifier: x, spec: {shell: Bash, source: {type: Inline, spec: {script: '` + script + `'}}}}
`
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`echo <+secrets.getValue("db_pasword")> <+secrets.getValue("api_key")>`)
	code, out, errs := run("run", p, "--data-dir", data, "--strict")
	want := "p.yaml:12:133: secret `db_pasword` is not in the secret store, so the step that reads it would fail (--strict)"
	hint := "hint: set GANTRY_SECRET_DB_PASWORD or add it to " + filepath.Join(data, "secrets.yaml")
	if code != ExitInvalid || !strings.Contains(errs, want) || !strings.Contains(errs, hint) || strings.Count(errs, "secret store") != 1 {
		t.Errorf("exit %d, want %q and %q:\n%s%s", code, want, hint, out, errs)
	}
	// The names the store holds pass, and the run reads them.
	write(`echo <+secrets.getValue("db_password")> <+secrets.getValue("api_key")>`)
	code, out, errs = run("run", p, "--data-dir", data, "--strict")
	if code != ExitOK || strings.Contains(errs, "secret store") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
}
