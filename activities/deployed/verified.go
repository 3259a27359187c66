package deployed

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities"
)

// LastVerified returns the window of the newest passed verification of a monitored service by
// another execution, nil when none: a load test's baseline.
func (a *Activity) LastVerified(ctx context.Context, k activities.VerifiedKey) (*activities.Verified, error) {
	if a.Records == nil {
		return nil, nil
	}
	r, err := a.Records.Find(ctx, activities.VerifiedID(k), "monitored service "+k.Monitored,
		activities.ProvisionerQuery{Kinds: []string{activities.RecordKindVerified}, Execution: k.Execution, Other: true})
	if err != nil || r == nil {
		return nil, err
	}
	return r.Verified, nil
}

// RecordVerified remembers a passed verification's window.
func (a *Activity) RecordVerified(ctx context.Context, in activities.RecordVerifiedInput) error {
	if a.Records == nil {
		return nil
	}
	v := in.Verified
	return a.Records.Record(ctx, activities.VerifiedID(in.Key), "monitored service "+in.Key.Monitored, activities.ProvisionerRecord{
		Kind: activities.RecordKindVerified, Execution: v.Execution, Step: v.Step, Time: activity.GetInfo(ctx).StartedTime, Verified: &v})
}
