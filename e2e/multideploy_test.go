package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// multiProject writes the multi-deployment catalogue (services a, b, cart, checkout;
// environments e1 [i1, i2], e2 [i2, i3]; group g) beside a pipeline and loads it for a run.
func multiProject(t *testing.T, src string) *load.Result {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob("../pipeline/entities/testdata/multi/*.yaml")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadFor(t, p, load.Options{})
}

const multiSteps = `          execution:
            steps:
              - step:
                  type: ShellScript
                  name: s
                  identifier: s
                  spec:
                    shell: Sh
                    source: {type: Inline, spec: {script: 'OUT=<+matrix.serviceRef>/<+env.identifier>/<+infra.infraIdentifier>; SVC=<+service.identifier>; [ "$OUT" != "%s" ]'}}
                    outputVariables: [{name: OUT, type: String, value: OUT}, {name: SVC, type: String, value: SVC}]
            rollbackSteps:
              - step:
                  type: ShellScript
                  name: r
                  identifier: r
                  spec: {shell: Sh, source: {type: Inline, spec: {script: 'echo rolling back'}}}
`

// C120 and C123 on a real server: each iteration deploys its own combination, a later stage
// reads an iteration by its expanded identifier, and a failed iteration rolls back alone while
// the others run on.
func TestMultiDeploymentStages(t *testing.T) {
	t.Run("C120", func(t *testing.T) {
		t.Parallel()
		r := multiProject(t, `pipeline:
  name: c120
  identifier: c120
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          services:
            values: [{serviceRef: cart}, {serviceRef: checkout}]
          environment:
            environmentRef: e1
            infrastructureDefinitions: [{identifier: i1}]
`+strings.Replace(multiSteps, "%s", "none", 1)+`    - stage:
        name: after
        identifier: after
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: read
                  identifier: read
                  spec:
                    shell: Sh
                    source: {type: Inline, spec: {script: 'ONE=<+pipeline.stages.deploy_1.spec.execution.steps.s.status>; BASE=<+pipeline.stages.deploy.spec.execution.steps.s.status>'}}
                    outputVariables: [{name: ONE, type: String, value: ONE}, {name: BASE, type: String, value: BASE}]
`)
		exec, res := runPlan(t, env.starter, r.Plan)
		if res.Status != status.Succeeded {
			t.Fatalf("%s: %s", exec.ID, res.Status)
		}
		for path, want := range map[string]string{"deploy_0.s": "cart/e1/i1", "deploy_1.s": "checkout/e1/i1"} {
			if got := outputVar(t, res, path, "OUT"); got != want {
				t.Errorf("%s OUT = %v, want %s", path, got, want)
			}
			if got, svc := outputVar(t, res, path, "SVC"), strings.Split(want, "/")[0]; got != svc {
				t.Errorf("%s <+service.identifier> = %v, want %s", path, got, svc)
			}
		}
		if got := outputVar(t, res, "after.read", "ONE"); got != "SUCCEEDED" {
			t.Errorf("deploy_1 status read as %v", got)
		}
		if got := outputVar(t, res, "after.read", "BASE"); got != "null" {
			t.Errorf("the base identifier resolved to %v", got)
		}
	})
	t.Run("C123", func(t *testing.T) {
		t.Parallel()
		r := multiProject(t, `pipeline:
  name: c123
  identifier: c123
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: StageRollback}}
        spec:
          services:
            values: [{serviceRef: a}, {serviceRef: b}]
            metadata: {parallel: false}
          environments:
            metadata: {parallel: false}
            values:
              - {environmentRef: e1, infrastructureDefinitions: [{identifier: i1}, {identifier: i2}]}
`+strings.Replace(multiSteps, "%s", "a/e1/i1", 1)+`    - stage:
        name: next
        identifier: next
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: n, identifier: n, spec: {shell: Sh, source: {type: Inline, spec: {script: 'true'}}}}
`)
		exec, res := runPlan(t, env.starter, r.Plan)
		if res.Status != status.Failed {
			t.Errorf("%s: pipeline %s, want FAILED", exec.ID, res.Status)
		}
		want := map[string]status.Status{"deploy_0": status.Failed, "deploy_1": status.Succeeded, "deploy_2": status.Succeeded,
			"deploy_3": status.Succeeded, "deploy": status.Failed, "next": status.Skipped}
		for path, st := range want {
			if n := res.Tree.Find(path); n == nil || n.Status != st {
				t.Errorf("%s: %+v, want %s", path, n, st)
			}
		}
		for path, ran := range map[string]bool{"deploy_0.rollbackSteps.r": true, "deploy_1.rollbackSteps.r": false, "deploy_3.rollbackSteps.r": false} {
			n := res.Tree.Find(path)
			if got := n != nil && n.Status == status.Succeeded; got != ran {
				t.Errorf("rollback %s ran=%v, want %v", path, got, ran)
			}
		}
	})
}
