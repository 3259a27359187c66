package directory_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
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

// A trigger of a pipeline kept in Git hands its input sets to the Remote hook in its own
// order, each a file of the directory or (no file) one read from Git.
func TestRemoteTriggerKeepsItsInputSetOrder(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"local.yaml": "inputSet:\n  name: local\n  identifier: local\n  pipeline:\n    identifier: release\n",
		"trigger.yaml": `trigger:
  name: nightly
  identifier: nightly
  pipelineIdentifier: release
  pipelineBranchName: main
  inputSetRefs: [base, local, prod]
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
		t.Fatalf("%d triggers: %v", len(reg.Triggers), diags)
	}
	var got []directory.InputSetRef
	reg.Remote = func(_ *pipeline.Trigger, _ map[string]any, sets []directory.InputSetRef, _ load.Options) (*load.Result, error) {
		got = sets
		return &load.Result{}, nil
	}
	if _, err := reg.Load(reg.Triggers[0].Trigger); err != nil {
		t.Fatal(err)
	}
	want := []directory.InputSetRef{{ID: "base"}, {ID: "local", File: filepath.Join(dir, "local.yaml")}, {ID: "prod"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("input sets %+v, want %+v", got, want)
	}
}
