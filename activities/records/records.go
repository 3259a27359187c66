// Package records keeps small durable records in one long-lived workflow per subject (the
// gantry.Provisioner workflow type): a provisioner's plans and applies, an infrastructure's
// deployed artifacts. Every worker of the cluster reads the same records and nothing but
// Temporal holds them.
package records

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/contract"
)

// Temporal adds and finds records through a Temporal client.
type Temporal struct {
	Client client.Client
	// TaskQueue is the sequence queue the records workflows run on.
	TaskQueue string
}

// Record adds a record to workflow id, starting it the first time; what names the subject in
// errors.
func (t Temporal) Record(ctx context.Context, id, what string, r contract.ProvisionerRecord) error {
	_, err := t.Client.SignalWithStartWorkflow(ctx, id, contract.SignalProvisioner, r,
		client.StartWorkflowOptions{ID: id, TaskQueue: t.TaskQueue}, contract.ProvisionerName, []contract.ProvisionerRecord(nil))
	if err != nil {
		return fmt.Errorf("record %s of %s: %w", r.Kind, what, err)
	}
	return nil
}

// Find returns the newest record of workflow id matching q, nil when there is none.
func (t Temporal) Find(ctx context.Context, id, what string, q contract.ProvisionerQuery) (*contract.ProvisionerRecord, error) {
	v, err := t.Client.QueryWorkflow(ctx, id, "", contract.QueryProvisioner, q)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the records of %s: %w", what, err)
	}
	var r *contract.ProvisionerRecord
	if err := v.Get(&r); err != nil {
		return nil, fmt.Errorf("read the records of %s: %w", what, err)
	}
	return r, nil
}
