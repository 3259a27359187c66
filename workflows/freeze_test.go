package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// freezeDir holds a freeze of Production deployments from start for a day (beside
// examples/k8s's entities).
func freezeDir(t *testing.T, start time.Time) string {
	t.Helper()
	dir := t.TempDir()
	freeze := `freeze:
  name: Release week
  identifier: release_week
  entityConfigs:
    - name: production
      entities:
        - {type: EnvType, filterType: Equals, entityRefs: [Production]}
  windows:
    - timeZone: UTC
      startTime: ` + start.UTC().Format("2006-01-02 15:04") + `
      duration: 1d
`
	if err := os.WriteFile(filepath.Join(dir, "freeze.yaml"), []byte(freeze), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const frozenPipeline = `pipeline:
  name: frozen
  identifier: frozen
  stages:
    - stage:
        name: prod
        identifier: prod
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: web}
          environment:
            environmentRef: prod
            infrastructureDefinitions: [{identifier: prod_cluster}]
          execution:
            steps:
              - step: {type: ShellScript, name: show, identifier: show, spec: {shell: Bash, source: {type: Inline, spec: {script: echo deployed}}}}
`

// A Deployment stage that starts inside a freeze window of a freeze matching it ends
// FREEZE_FAILED before any step, naming the freeze; an execution started with an override
// deploys and says whose override let it; a window that has ended stops nothing.
func TestDeploymentFreeze(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name     string
		start    time.Time
		override string
		want     status.Status
	}{
		{"active", now.Add(-time.Hour), "", status.FreezeFailed},
		{"overridden", now.Add(-time.Hour), "ann", status.Succeeded},
		{"ended", now.Add(-48 * time.Hour), "", status.Succeeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := load.Bytes("frozen.yaml", []byte(frozenPipeline), load.Options{ForRun: true, EntityDirs: []string{"../examples/k8s", freezeDir(t, c.start)}})
			if !r.OK() {
				t.Fatal(r.Diags.Render(r.Sources))
			}
			res := runWith(t, r.Plan, workflows.Settings{OverrideFreeze: c.override})
			if res.Status != c.want {
				t.Fatalf("pipeline %s, want %s", res.Status, c.want)
			}
			st := res.Tree.Find("prod")
			switch c.name {
			case "active":
				conformance.Check(t, res.Tree, map[string]status.Status{"prod": status.FreezeFailed, "prod.show": status.NotStarted})
				if st.Failure == nil || !strings.Contains(st.Failure.Message, "Release week (release_week)") {
					t.Errorf("failure %+v does not name the freeze", st.Failure)
				}
			case "overridden":
				if !strings.Contains(strings.Join(st.Notes, "\n"), "overridden by ann") {
					t.Errorf("notes %q do not say whose override", st.Notes)
				}
			}
		})
	}
}
