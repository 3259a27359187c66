package e2e

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// runDeployment loads dir/pipeline.yaml for a run with the variables of sets and runs it; a run
// that must succeed (fail "no") and does not fails the test, listing the stage's nodes.
func runDeployment(t *testing.T, dir, fail string, sets ...string) (starter.Execution, *workflows.PipelineResult) {
	t.Helper()
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true, Sets: append(sets, "pipeline.variables.fail="+fail)})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	exec, res := runPlan(t, env.starter, r.Plan)
	if fail == "no" && res.Status != status.Succeeded {
		for _, c := range res.Tree.Find("deploy").Children {
			t.Logf("%s %s %+v", c.Path, c.Status, c.Failure)
		}
		t.Fatalf("run: %s", res.Status)
	}
	return exec, res
}

// endAwsInstanceSyncs ends, as the test ends, the instance syncs of every AWS target deployed
// so far: the test's fake goes with it, and the endpoints a later sweep would reach are then
// AWS's own, which tests must not call.
func endAwsInstanceSyncs(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.Background()
		targets, err := env.starter.Ledger().Targets(ctx, ledger.Filter{})
		if err != nil {
			t.Errorf("list the deployed targets: %v", err)
			return
		}
		for _, tg := range targets {
			switch tg.DeploymentType {
			case "ECS", "Asg", "AwsLambda":
				_ = env.internal.TerminateWorkflow(ctx, contract.InstancesID(tg.Key), "", "the test's AWS fake is gone")
			}
		}
	})
}
