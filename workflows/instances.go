package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// How the instance sync runs (variables for the tests): how many readings a run takes before
// it continues as new, and how long one read may take.
var (
	instancesPerRun  = 200
	instancesReadFor = 2 * time.Minute
)

// DefaultInstanceSync is how often a target's instances are read unless the worker says
// otherwise: the reference's ten minutes.
const DefaultInstanceSync = 10 * time.Minute

// Instances keeps a target's instances: it reads them (contract.ReadInstances) at once, then
// every in.Every, and at once again when a deployment ends there (contract.SignalInstancesTarget)
// or someone asks (contract.SignalInstancesSync). Each reading becomes the snapshot the query
// answers with and, without its instance list, the memo listings read. A failed read keeps
// the reading before it and says it failed. When the target is gone the workflow ends, and
// with it the target's entry in the listing; a later deployment there starts it again.
func Instances(ctx workflow.Context, in contract.InstanceSync) error {
	st := in
	if st.Every <= 0 {
		st.Every = DefaultInstanceSync
	}
	if err := workflow.SetQueryHandler(ctx, contract.QueryInstances, func() (*contract.InstanceSnapshot, error) { return st.Snapshot, nil }); err != nil {
		return err
	}
	targets := workflow.GetSignalChannel(ctx, contract.SignalInstancesTarget)
	syncs := workflow.GetSignalChannel(ctx, contract.SignalInstancesSync)
	drain := func() {
		var t contract.InstanceTarget
		for targets.ReceiveAsync(&t) {
			st.Target = t
		}
		for syncs.ReceiveAsync(nil) {
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: instancesReadFor,
		Summary:             "read the instances of " + in.Target.Key.Service + " in " + in.Target.Key.Environment + "/" + in.Target.Key.Infra,
		// A reading that fails is reported as such; the next one comes with the timer.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	for n := 0; n < instancesPerRun; n++ {
		drain()
		var read contract.InstanceRead
		err := workflow.ExecuteActivity(actx, contract.ReadInstances, st.Target).Get(ctx, &read)
		now := workflow.Now(ctx).UTC()
		if err == nil && read.Gone != "" {
			return nil
		}
		st.Snapshot = InstanceSnapshotOf(st.Target, st.Snapshot, read, err, now)
		if err := workflow.UpsertMemo(ctx, map[string]any{contract.MemoInstances: InstanceSummaryOf(st.Snapshot)}); err != nil {
			return err
		}
		wait, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(wait, st.Every), func(workflow.Future) {})
		sel.AddReceive(targets, func(c workflow.ReceiveChannel, _ bool) {
			var t contract.InstanceTarget
			c.Receive(ctx, &t)
			st.Target = t
		})
		sel.AddReceive(syncs, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		cancel()
	}
	drain()
	return workflow.NewContinueAsNewError(ctx, contract.InstancesName, st)
}

// InstanceSnapshotOf is the snapshot after one reading: the reading itself, or, when it
// failed (err), the snapshot before with the failure said.
func InstanceSnapshotOf(t contract.InstanceTarget, before *contract.InstanceSnapshot, read contract.InstanceRead, err error, at time.Time) *contract.InstanceSnapshot {
	if err != nil {
		s := contract.InstanceSnapshot{Key: t.Key}
		if before != nil {
			s = *before
		}
		s.DeploymentType, s.Execution, s.Version = t.DeploymentType, t.Execution, t.Version
		s.TriedAt, s.Error = at, instanceReadFailure(err)
		return &s
	}
	return &contract.InstanceSnapshot{Key: t.Key, DeploymentType: t.DeploymentType, Execution: t.Execution, Version: t.Version,
		SyncedAt: at, TriedAt: at, Count: read.Count, Ready: read.Ready, Artifacts: read.Artifacts, Drift: read.Drift, Instances: read.Instances}
}

// instanceReadFailure is a failed read's message without the SDK's wrapping.
func instanceReadFailure(err error) string {
	if app, ok := errors.AsType[*temporal.ApplicationError](err); ok {
		return app.Message()
	}
	return err.Error()
}

// InstanceSummaryOf is what the memo keeps: the snapshot without its instance list.
func InstanceSummaryOf(s *contract.InstanceSnapshot) contract.InstanceSnapshot {
	out := *s
	out.Instances = nil
	return out
}
