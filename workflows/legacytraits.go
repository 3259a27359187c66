package workflows

import (
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// legacyTraits are the traits of the step types a plan could hold before plan nodes carried
// them: the rules the workflows applied to those types then. Histories recorded before have
// step nodes without traits and replay with these. The table never grows: every plan compiled
// since carries its steps' traits from the step catalog (pipeline/steps).
var legacyTraits = func() map[string]plan.Traits {
	kubernetes := plan.Traits{Activity: contract.Kubernetes, Deployment: true, Heartbeat: true}
	ecs := plan.Traits{Activity: contract.Ecs, Deployment: true, Heartbeat: true}
	lambda := plan.Traits{Activity: contract.AwsLambda, Deployment: true, Heartbeat: true}
	own := plan.Traits{Activity: contract.ContainerStep, Container: plan.ContainerOwn, Heartbeat: true}
	helper := plan.Traits{Activity: contract.ContainerStep, Container: plan.ContainerHelper, Heartbeat: true}
	m := map[string]plan.Traits{
		"ShellScript": {Activity: contract.ShellScript, Heartbeat: true, FastPath: true},
		"Http": {Activity: contract.Http, FastPath: true, Outcome: "http",
			Deferred: []string{".assertion", ".outputVariables[].value"}},
		"Wait":              {Builtin: "wait"},
		"HarnessApproval":   {Builtin: "approval"},
		"Barrier":           {Builtin: "barrier"},
		"Policy":            {Activity: contract.Policy},
		"Container":         {Activity: contract.ContainerStep, Container: plan.ContainerOwn, OwnPod: true, Heartbeat: true},
		"Run":               own,
		"Background":        own,
		"Plugin":            own,
		"GitClone":          helper,
		"DownloadManifests": {Activity: contract.ContainerStep, Container: plan.ContainerHelper, Deployment: true, Heartbeat: true},
		"AwsLambdaDeploy":   lambda,
		"AwsLambdaRollback": lambda,
	}
	for _, t := range []string{"K8sRollingDeploy", "K8sRollingRollback", "K8sCanaryDeploy", "K8sCanaryDelete", "K8sBlueGreenDeploy",
		"K8sBGSwapServices", "K8sApply", "K8sScale", "K8sDelete", "K8sDryRun", "HelmDeploy", "HelmRollback", "HelmDelete"} {
		m[t] = kubernetes
	}
	for _, t := range []string{"EcsRollingDeploy", "EcsRollingRollback", "EcsCanaryDeploy", "EcsCanaryDelete", "EcsRunTask",
		"EcsBlueGreenCreateService", "EcsBlueGreenSwapTargetGroups", "EcsBlueGreenRollback"} {
		m[t] = ecs
	}
	return m
}()

// backfillTraits gives the step nodes of a plan recorded before nodes carried traits the
// traits their types had then (legacyTraits).
func backfillTraits(nodes []*plan.Node) {
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if n.Kind == plan.KindStep && n.Traits == nil {
			if tr, ok := legacyTraits[n.Type]; ok {
				n.Traits = &tr
			}
		}
		backfillTraits(n.Children)
		backfillTraits(n.Rollback)
	}
}
