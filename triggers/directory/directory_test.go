package directory_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gantry-cd/gantry/triggers/directory"
)

// A pipelines directory whose pipeline carries a key the reference ignores: its triggers fire
// (the key is a warning), unless the server runs with --strict, where the pipeline is left out
// and a trigger that starts it fails to load it.
func TestRegistryStrict(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"pipeline.yaml": `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        sendGitStatus: true
        spec:
          execution:
            steps:
              - step: {name: w, identifier: w, type: Wait, spec: {duration: 10s}}
`,
		"trigger.yaml": `trigger:
  name: nightly
  identifier: nightly
  enabled: true
  pipelineIdentifier: p
  source:
    type: Scheduled
    spec:
      type: Cron
      spec: {expression: "0 4 * * *"}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg, diags := directory.LoadDir(dir, false)
	if len(diags) != 0 || len(reg.Triggers) != 1 {
		t.Fatalf("lenient: want the trigger and no problem, got %d triggers: %v", len(reg.Triggers), diags)
	}
	if r, err := reg.Load(reg.Triggers[0].Trigger); err != nil || !r.OK() {
		t.Fatalf("lenient: the trigger's pipeline loads: %v %v", err, r.Diags)
	}
	reg, diags = directory.LoadDir(dir, true)
	if len(diags) != 1 || diags[0].Code != "unknown-key" {
		t.Fatalf("strict: want the pipeline left out for its unknown key, got %v", diags)
	}
	if _, err := reg.Load(reg.Triggers[0].Trigger); err == nil {
		t.Fatalf("strict: a trigger of the left-out pipeline must not load it")
	}
}
