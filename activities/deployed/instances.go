package deployed

import (
	"context"

	"github.com/gantry-cd/gantry/contract"
)

// InstanceReader reads a target's instances (the k8s, ecs, asg and lambda activities).
type InstanceReader interface {
	Instances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error)
}

// ReadInstances reads a target's instances for its sync workflow: a Kubernetes or NativeHelm
// target's pods from its cluster, an ECS target's tasks, an Asg target's EC2 instances, an
// AwsLambda target's versions serving traffic; an Ssh or WinRm target's hosts as the stage
// deployed them (Gantry does not log in to count them).
func (a *Activity) ReadInstances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error) {
	readers := map[string]InstanceReader{"Kubernetes": a.Kubernetes, "NativeHelm": a.Kubernetes, "ECS": a.Ecs, "Asg": a.Asg, "AwsLambda": a.Lambda}
	if r, ok := readers[t.DeploymentType]; ok {
		if r == nil {
			return contract.InstanceRead{}, contract.Fail(contract.Unknown, "this worker reads no %s targets", t.DeploymentType)
		}
		return r.Instances(ctx, t)
	}
	switch t.DeploymentType {
	case "Ssh", "WinRm":
		all := make([]contract.Instance, len(t.Hosts))
		for i, h := range t.Hosts {
			all[i] = contract.Instance{Name: h, Artifact: t.Version, Ready: true}
		}
		return contract.ReadOf(all, nil), nil
	}
	return contract.InstanceRead{}, contract.Fail(contract.Unknown, "Gantry does not read the instances of %s deployments", t.DeploymentType)
}
