package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// examples/custom: a CustomDeployment stage whose deployment template's script lists three
// instances of the infrastructure's pool; a repeat over <+stage.output.hosts> runs once per
// instance with <+instance.*> naming it. A template whose list path is wrong fails the fetch
// with a Verification failure that says where it looked, and no host is deployed to.
func TestCustomDeploymentFetchesInstances(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pipeline.yaml", "service.yaml", "environment.yaml", "infrastructure.yaml", "templates/hosts.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "custom", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), string(b))
	}
	run := func() (string, *workflows.PipelineResult) {
		t.Helper()
		exec, res := runPlan(t, env.starter, loadRun(t, filepath.Join(dir, "pipeline.yaml")))
		if *updateHistories {
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
		}
		return exec.ID, res
	}
	id, res := run()
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_staging.fetch": status.Succeeded,
		"deploy_staging.deploy_0": status.Succeeded, "deploy_staging.deploy_1": status.Succeeded, "deploy_staging.deploy_2": status.Succeeded})
	want := map[string]string{"deploy_0": "to blue-1 at 10.0.0.1 (zone a)", "deploy_1": "to blue-2 at 10.0.0.2 (zone b)", "deploy_2": "to blue-3 at 10.0.0.3 (zone a)"}
	for step, text := range want {
		if log := readLog(t, id, "deploy_staging."+step); !strings.Contains(log, "shop 1.4.2 "+text) {
			t.Errorf("%s's log:\n%s", step, log)
		}
	}
	if got := res.Tree.Find("deploy_staging.fetch").Outputs["hosts"]; len(got.([]any)) != 3 {
		t.Errorf("fetch outputs hosts %v", got)
	}

	tpl := filepath.Join(dir, "templates", "hosts.yaml")
	b, _ := os.ReadFile(tpl)
	writeFile(t, tpl, strings.Replace(string(b), "instancesListPath: hosts", "instancesListPath: servers", 1))
	_, res = run()
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_staging.fetch": status.Failed})
	if n := res.Tree.Find("deploy_staging.deploy"); n == nil || len(n.Children) != 0 {
		t.Errorf("the loop over the hosts ran iterations after a failed fetch: %+v", n)
	}
	if f := res.Tree.Find("deploy_staging.fetch").Failure; f == nil || f.Category != "Verification" || !strings.Contains(f.Message, `instancesListPath "servers": no field servers`) {
		t.Errorf("fetch failure %+v", f)
	}
}
