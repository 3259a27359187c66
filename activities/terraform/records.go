package terraform

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/workflows"
)

// Records keeps what the Terraform steps did with each provisioner: the plans waiting for
// their apply and the configurations applied, which rollbacks and inherited destroys read.
type Records interface {
	Record(ctx context.Context, project, provisioner string, r workflows.ProvisionerRecord) error
	Find(ctx context.Context, project, provisioner string, q workflows.ProvisionerQuery) (*workflows.ProvisionerRecord, error)
}

// TemporalRecords keeps the records in one Provisioner workflow per provisioner, so every
// worker of the cluster reads the same ones and nothing but Temporal holds state.
type TemporalRecords struct {
	Client client.Client
	// TaskQueue is the sequence queue the Provisioner workflows run on.
	TaskQueue string
}

// Record adds a record, starting the provisioner's workflow the first time.
func (t TemporalRecords) Record(ctx context.Context, project, provisioner string, r workflows.ProvisionerRecord) error {
	id := workflows.ProvisionerID(project, provisioner)
	_, err := t.Client.SignalWithStartWorkflow(ctx, id, workflows.SignalProvisioner, r,
		client.StartWorkflowOptions{ID: id, TaskQueue: t.TaskQueue}, workflows.ProvisionerName, []workflows.ProvisionerRecord(nil))
	if err != nil {
		return fmt.Errorf("record %s of provisioner %s: %w", r.Kind, provisioner, err)
	}
	return nil
}

// Find returns the newest record matching q, nil when the provisioner has none.
func (t TemporalRecords) Find(ctx context.Context, project, provisioner string, q workflows.ProvisionerQuery) (*workflows.ProvisionerRecord, error) {
	v, err := t.Client.QueryWorkflow(ctx, workflows.ProvisionerID(project, provisioner), "", workflows.QueryProvisioner, q)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the records of provisioner %s: %w", provisioner, err)
	}
	var r *workflows.ProvisionerRecord
	if err := v.Get(&r); err != nil {
		return nil, fmt.Errorf("read the records of provisioner %s: %w", provisioner, err)
	}
	return r, nil
}
