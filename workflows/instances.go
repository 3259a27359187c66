package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// How the instance sync and the sweep run (variables for the tests): how many loops a run
// takes before it continues as new, and how long reads may take.
var (
	instancesPerRun  = 200
	instancesReadFor = 2 * time.Minute
	sweepsPerRun     = 100
	sweepFor         = time.Hour
)

// Instances keeps a target's instances. It reads them itself (contract.ReadInstances) when it
// starts, when a deployment ends there (contract.SignalInstancesTarget) and when asked
// (contract.SignalInstancesSync); between those the sweep (InstanceSweep) reads the target and
// signals a reading only when it differs (contract.SignalInstancesReading). Each reading
// becomes the snapshot the query answers with and, without its instance list, the memo
// listings read; the memo also holds the target, for the sweep. A failed read keeps the
// reading before it and says it failed. When the target is gone the workflow ends, and with
// it the target's entry in the listing; a later deployment there starts it again.
func Instances(ctx workflow.Context, in contract.InstanceSync) error {
	st := in
	if err := workflow.SetQueryHandler(ctx, contract.QueryInstances, func() (*contract.InstanceSnapshot, error) { return st.Snapshot, nil }); err != nil {
		return err
	}
	targets := workflow.GetSignalChannel(ctx, contract.SignalInstancesTarget)
	syncs := workflow.GetSignalChannel(ctx, contract.SignalInstancesSync)
	readings := workflow.GetSignalChannel(ctx, contract.SignalInstancesReading)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: instancesReadFor,
		Summary:             "read the instances of " + in.Target.Key.Service + " in " + in.Target.Key.Environment + "/" + in.Target.Key.Infra,
		// A reading that fails is reported as such; the sweep reads again.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	// read reads the target now; false when it is gone.
	read := func() (bool, error) {
		var r contract.InstanceRead
		err := workflow.ExecuteActivity(actx, contract.ReadInstances, st.Target).Get(ctx, &r)
		var msg string
		if err != nil {
			msg = instanceReadFailure(err)
		}
		return apply(ctx, &st, contract.InstanceReading{Read: r, Error: msg, At: workflow.Now(ctx).UTC()})
	}
	// drain takes what was delivered: the newest target and reading; any number of syncs
	// count as one.
	drain := func() (retarget bool, reading *contract.InstanceReading) {
		for {
			var t contract.InstanceTarget
			var r contract.InstanceReading
			switch {
			case targets.ReceiveAsync(&t):
				st.Target, retarget = t, true
			case readings.ReceiveAsync(&r):
				reading = &r
			case syncs.ReceiveAsync(nil):
				retarget = true
			default:
				return retarget, reading
			}
		}
	}
	for n := 0; n < instancesPerRun; n++ {
		retarget, reading := drain()
		live, err := true, error(nil)
		switch {
		case n == 0 || retarget: // read at the start, and when told to
			live, err = read()
		case reading != nil:
			live, err = apply(ctx, &st, *reading)
		}
		if err != nil || !live {
			return err
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(targets, func(workflow.ReceiveChannel, bool) {})
		sel.AddReceive(syncs, func(workflow.ReceiveChannel, bool) {})
		sel.AddReceive(readings, func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx) // the loop's top takes what arrived
	}
	drain() // a new target goes with the state; the next run reads at once anyway
	return workflow.NewContinueAsNewError(ctx, contract.InstancesName, st)
}

// apply makes a reading the target's snapshot and memo; false when it says the target is gone.
func apply(ctx workflow.Context, st *contract.InstanceSync, r contract.InstanceReading) (bool, error) {
	if r.Error == "" && r.Read.Gone != "" {
		return false, nil
	}
	st.Snapshot = InstanceSnapshotOf(st.Target, st.Snapshot, r)
	return true, workflow.UpsertMemo(ctx, map[string]any{contract.MemoInstances: InstanceSummaryOf(st.Snapshot), contract.MemoInstancesTarget: st.Target})
}

// InstanceSweep reads every target's instances (contract.SweepInstances) every st.Every, the
// first time at once; contract.SignalSweepEvery changes the interval. Its memo holds the last
// completed sweep, which says until when the targets it did not signal read as before.
func InstanceSweep(ctx workflow.Context, st contract.InstanceSweepState) error {
	every := workflow.GetSignalChannel(ctx, contract.SignalSweepEvery)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: sweepFor,
		HeartbeatTimeout:    30 * time.Second, // a worker lost mid-sweep: another goes on from its last heartbeat
		Summary:             "read every deployed target's instances",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	drain := func() { // the newest interval delivered
		var d time.Duration
		for every.ReceiveAsync(&d) {
			st.Every = d
		}
		if st.Every <= 0 {
			st.Every = contract.DefaultInstanceSync
		}
	}
	for n := 0; n < sweepsPerRun; n++ {
		was := st.Every
		if drain(); st.Every != was || n == 0 {
			if err := workflow.UpsertMemo(ctx, map[string]any{contract.MemoSweep: st}); err != nil {
				return err
			}
		}
		started := workflow.Now(ctx).UTC()
		var res contract.SweepResult
		if err := workflow.ExecuteActivity(actx, contract.SweepInstances).Get(ctx, &res); err == nil {
			res.Started, res.Ended = started, workflow.Now(ctx).UTC()
			st.Last = &res
			if err := workflow.UpsertMemo(ctx, map[string]any{contract.MemoSweep: st}); err != nil {
				return err
			}
		} else {
			workflow.GetLogger(ctx).Warn("an instance sweep failed; the next comes with the timer", "error", err)
		}
		wait, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(wait, st.Every), func(workflow.Future) {})
		sel.AddReceive(every, func(workflow.ReceiveChannel, bool) {})
		sel.Select(ctx)
		cancel()
	}
	drain()
	return workflow.NewContinueAsNewError(ctx, contract.SweepName, st)
}

// InstanceSnapshotOf is the snapshot after one reading: the reading itself, or, when it
// failed, the snapshot before with the failure said.
func InstanceSnapshotOf(t contract.InstanceTarget, before *contract.InstanceSnapshot, r contract.InstanceReading) *contract.InstanceSnapshot {
	if r.Error != "" {
		s := contract.InstanceSnapshot{Key: t.Key}
		if before != nil {
			s = *before
		}
		s.DeploymentType, s.Execution, s.Version = t.DeploymentType, t.Execution, t.Version
		s.TriedAt, s.Error = r.At, r.Error
		return &s
	}
	read := r.Read
	return &contract.InstanceSnapshot{Key: t.Key, DeploymentType: t.DeploymentType, Execution: t.Execution, Version: t.Version,
		SyncedAt: r.At, TriedAt: r.At, Count: read.Count, Ready: read.Ready, Artifacts: read.Artifacts, Drift: read.Drift, Instances: read.Instances}
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
