package deployed

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/contract"
)

// LastVerified returns the window of the newest passed verification of a monitored service by
// another execution, nil when none: a load test's baseline.
func (a *Activity) LastVerified(ctx context.Context, k contract.VerifiedKey) (*contract.Verified, error) {
	if a.Records == nil {
		return nil, nil
	}
	r, err := a.Records.Find(ctx, contract.VerifiedID(k), "monitored service "+k.Monitored,
		contract.ProvisionerQuery{Kinds: []string{contract.RecordKindVerified}, Execution: k.Execution, Other: true})
	if err != nil || r == nil {
		return nil, err
	}
	return r.Verified, nil
}

// RecordVerified remembers a passed verification's window.
func (a *Activity) RecordVerified(ctx context.Context, in contract.RecordVerifiedInput) error {
	if a.Records == nil {
		return nil
	}
	v := in.Verified
	return a.Records.Record(ctx, contract.VerifiedID(in.Key), "monitored service "+in.Key.Monitored, contract.ProvisionerRecord{
		Kind: contract.RecordKindVerified, Execution: v.Execution, Step: v.Step, Time: activity.GetInfo(ctx).StartedTime, Verified: &v})
}
