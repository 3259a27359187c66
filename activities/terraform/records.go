package terraform

import (
	"context"

	"github.com/gantry-cd/gantry/activities/records"
	"github.com/gantry-cd/gantry/contract"
)

// Records keeps what the Terraform steps did with each provisioner: the plans waiting for
// their apply and the configurations applied, which rollbacks and inherited destroys read.
type Records interface {
	Record(ctx context.Context, project, provisioner string, r contract.ProvisionerRecord) error
	Find(ctx context.Context, project, provisioner string, q contract.ProvisionerQuery) (*contract.ProvisionerRecord, error)
}

// TemporalRecords keeps the records in one Provisioner workflow per provisioner.
type TemporalRecords struct{ records.Temporal }

// Record adds a record, starting the provisioner's workflow the first time.
func (t TemporalRecords) Record(ctx context.Context, project, provisioner string, r contract.ProvisionerRecord) error {
	return t.Temporal.Record(ctx, contract.ProvisionerID(project, provisioner), "provisioner "+provisioner, r)
}

// Find returns the newest record matching q, nil when the provisioner has none.
func (t TemporalRecords) Find(ctx context.Context, project, provisioner string, q contract.ProvisionerQuery) (*contract.ProvisionerRecord, error) {
	return t.Temporal.Find(ctx, contract.ProvisionerID(project, provisioner), "provisioner "+provisioner, q)
}
