package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
