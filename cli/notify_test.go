package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gantry notify test sends one sample of the event to every target of each rule selecting it,
// with secrets from the secrets file, and exits 1 naming the target that refused it.
func TestNotifyTest(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		got, paths = append(got, m), append(paths, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/gone") {
			w.WriteHeader(http.StatusGone)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	write := func(hook string) {
		src := `pipeline:
  name: release
  identifier: release
  variables: [{name: team, type: String, value: payments}]
  notificationRules:
    - name: failures
      identifier: failures
      enabled: true
      pipelineEvents: [{type: PipelineFailed}, {type: StageFailed, forStages: [deploy]}]
      notificationMethod: {type: Webhook, spec: {webhookUrl: '` + srv.URL + hook + `/<+pipeline.variables.team>?k=<+secrets.getValue("hk")>'}}
    - {name: starts, identifier: starts, enabled: true, pipelineEvents: [{type: PipelineStart}], notificationMethod: {type: Slack, spec: {webhookUrl: "` + srv.URL + `/slack"}}}
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}}]}}
`
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secretsFile := filepath.Join(dir, "secrets.yaml")
	_ = os.WriteFile(secretsFile, []byte("hk: s3cr3t\n"), 0o600)
	write("")
	code, out, errOut := run("notify", "test", file, "--event", "PipelineFailed", "--data-dir", dir, "--secrets-file", secretsFile)
	if code != ExitOK || !strings.Contains(out, "rule failures, Webhook "+srv.URL+"/payments?k=**************: delivered (200)") || strings.Contains(out, "s3cr3t") {
		t.Fatalf("code %d\n%s%s", code, out, errOut)
	}
	if len(got) != 1 || paths[0] != "/payments?k=s3cr3t" || got[0]["eventData"].(map[string]any)["eventType"] != "PipelineFailed" {
		t.Errorf("received %v %v", paths, got)
	}
	code, out, _ = run("notify", "test", file, "--event", "StageFailed", "--data-dir", dir, "--secrets-file", secretsFile)
	if ev := got[len(got)-1]["eventData"].(map[string]any); code != ExitOK || ev["stageIdentifier"] != "deploy" || ev["nodeStatus"] != "failed" {
		t.Errorf("StageFailed: %d %s %v", code, out, ev)
	}
	write("/gone")
	code, out, _ = run("notify", "test", file, "--event", "PipelineFailed", "--data-dir", dir, "--secrets-file", secretsFile)
	if code != ExitInvalid || !strings.Contains(out, "FAILED") || !strings.Contains(out, "HTTP 410") || strings.Contains(out, "s3cr3t") {
		t.Errorf("refused: code %d\n%s", code, out)
	}
	code, out, _ = run("notify", "test", file, "--event", "StepFailed", "--data-dir", dir)
	if code != ExitOK || !strings.Contains(out, "no enabled notification rule") {
		t.Errorf("no rule: %d %s", code, out)
	}
	if code, _, _ := run("notify", "test", file, "--event", "Nope", "--data-dir", dir); code != ExitUsage {
		t.Errorf("unknown event: %d", code)
	}
}
