package deployed

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
)

// RecordDeployment signals a Deployment stage's end to its target's ledger workflow, starting
// it the first time. A retried delivery is harmless: the ledger applies a record once.
func (a *Activity) RecordDeployment(ctx context.Context, r contract.DeploymentRecord) error {
	if a.Records == nil {
		return nil
	}
	id := contract.LedgerID(r.Key)
	_, err := a.Records.Client.SignalWithStartWorkflow(ctx, id, contract.SignalLedger, r,
		client.StartWorkflowOptions{ID: id, TaskQueue: a.Records.TaskQueue}, contract.LedgerName, contract.LedgerState{Key: r.Key})
	if err != nil {
		return fmt.Errorf("record the deployment of service %s to infrastructure %s of environment %s: %w", r.Key.Service, r.Key.Infra, r.Key.Environment, err)
	}
	return nil
}
