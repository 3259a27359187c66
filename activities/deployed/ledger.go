package deployed

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
)

// RecordDeployment signals a Deployment stage's end to its target's ledger workflow, starting
// it the first time, and hands the target to its instance sync (contract.InstancesName),
// which reads it at once. A retried delivery is harmless: the ledger applies a record once,
// and a sync reads again.
func (a *Activity) RecordDeployment(ctx context.Context, in contract.RecordDeploymentInput) error {
	if a.Records == nil {
		return nil
	}
	r := in.DeploymentRecord
	id := contract.LedgerID(r.Key)
	_, err := a.Records.Client.SignalWithStartWorkflow(ctx, id, contract.SignalLedger, r,
		client.StartWorkflowOptions{ID: id, TaskQueue: a.Records.TaskQueue}, contract.LedgerName, contract.LedgerState{Key: r.Key})
	if err != nil {
		return fmt.Errorf("record the deployment of service %s to infrastructure %s of environment %s: %w", r.Key.Service, r.Key.Infra, r.Key.Environment, err)
	}
	if t := in.Instances; t != nil && a.InstanceSync >= 0 {
		id := contract.InstancesID(t.Key)
		_, err := a.Records.Client.SignalWithStartWorkflow(ctx, id, contract.SignalInstancesTarget, *t,
			client.StartWorkflowOptions{ID: id, TaskQueue: a.Records.TaskQueue}, contract.InstancesName, contract.InstanceSync{Target: *t})
		if err != nil {
			return fmt.Errorf("start reading the instances of service %s on infrastructure %s of environment %s: %w", r.Key.Service, r.Key.Infra, r.Key.Environment, err)
		}
		if err := a.ensureSweep(ctx); err != nil {
			return fmt.Errorf("start the sweep that reads every deployed target's instances: %w", err)
		}
	}
	return nil
}
