// Package deployed remembers what each Ssh stage that succeeded deployed, per service,
// environment and infrastructure, so that a later stage's rollback restores the artifact
// before it (`<+rollbackArtifact.*>`), and the window of each monitored service's last passed
// verification, which a load test compares with.
package deployed

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities/records"
	"github.com/gantry-cd/gantry/contract"
)

// Activity reads and writes the records; without Records (a worker with no client) nothing
// is remembered and no rollback artifact is ever found.
type Activity struct {
	Records *records.Temporal
	// InstanceSync is how often a deployed target's instances are read (0: the default ten
	// minutes; negative: never).
	InstanceSync time.Duration
	// Kubernetes reads a cluster target's pods; Ecs, Asg and Lambda read an ECS service's
	// tasks, an Auto Scaling group's instances and a Lambda alias's versions.
	Kubernetes, Ecs, Asg, Lambda InstanceReader
}

// Last returns what the newest successful stage of another execution deployed, nil when none.
func (a *Activity) Last(ctx context.Context, k contract.DeployedKey) (*contract.Deployed, error) {
	if a.Records == nil {
		return nil, nil
	}
	r, err := a.Records.Find(ctx, contract.DeployedID(k), what(k),
		contract.ProvisionerQuery{Kinds: []string{contract.RecordKindDeployed}, Execution: k.Execution, Other: true})
	if err != nil || r == nil {
		return nil, err
	}
	return r.Deployed, nil
}

// Record remembers a successful stage's deployment.
func (a *Activity) Record(ctx context.Context, in contract.RecordDeployedInput) error {
	if a.Records == nil {
		return nil
	}
	d := in.Deployed
	return a.Records.Record(ctx, contract.DeployedID(in.Key), what(in.Key), contract.ProvisionerRecord{
		Kind: contract.RecordKindDeployed, Execution: d.Execution, Time: activity.GetInfo(ctx).StartedTime, Deployed: &d})
}

func what(k contract.DeployedKey) string {
	return "service " + k.Service + " on infrastructure " + k.Infra + " of environment " + k.Environment
}
