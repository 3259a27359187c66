package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// Limits of what a provisioner keeps: plans waiting for their apply expire, and only the
// newest records of each kind are carried into the next run (variables for the tests).
var (
	provisionerPlanTTL    = 7 * 24 * time.Hour
	provisionerKeep       = 5       // records of each kind
	provisionerPerRun     = 50      // records per run before continuing as new
	provisionerCarryBytes = 3 << 19 // 1.5 MiB: a run's input stays below Temporal's 2 MB
)

// Provisioner keeps a provisioner's records: each arrives as a contract.SignalProvisioner through
// SignalWithStart; contract.QueryProvisioner finds one. It never ends by itself; after
// provisionerPerRun records it continues as new with the newest records of each kind, so its
// history stays small however many executions use the provisioner.
func Provisioner(ctx workflow.Context, carried []contract.ProvisionerRecord) error {
	records := carried
	if err := workflow.SetQueryHandler(ctx, contract.QueryProvisioner, func(q contract.ProvisionerQuery) (*contract.ProvisionerRecord, error) {
		return findRecord(records, q), nil
	}); err != nil {
		return err
	}
	ch := workflow.GetSignalChannel(ctx, contract.SignalProvisioner)
	for n := 0; n < provisionerPerRun; n++ {
		var r contract.ProvisionerRecord
		ch.Receive(ctx, &r)
		records = append(records, r)
	}
	for { // records delivered with the last task belong to this run
		var r contract.ProvisionerRecord
		if !ch.ReceiveAsync(&r) {
			break
		}
		records = append(records, r)
	}
	return workflow.NewContinueAsNewError(ctx, contract.ProvisionerName, keepRecords(records, workflow.Now(ctx)))
}

// findRecord returns the newest record matching q.
func findRecord(records []contract.ProvisionerRecord, q contract.ProvisionerQuery) *contract.ProvisionerRecord {
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if !kindIn(r.Kind, q.Kinds) {
			continue
		}
		if q.Execution != "" && (r.Execution == q.Execution) == q.Other {
			continue
		}
		return &r
	}
	return nil
}

func kindIn(k string, kinds []string) bool { return slices.Contains(kinds, k) }

func isPlan(r contract.ProvisionerRecord) bool {
	return r.Kind == contract.RecordKindPlan || r.Kind == contract.RecordKindDestroyPlan
}

// keepRecords keeps, in order, the newest provisionerKeep records of each kind (plans only
// while fresh) within provisionerCarryBytes of sealed data: configurations first, newest
// first, then plans.
func keepRecords(records []contract.ProvisionerRecord, now time.Time) []contract.ProvisionerRecord {
	count := map[string]int{}
	size := 0
	keep := make([]bool, len(records))
	for _, plans := range []bool{false, true} {
		for i := len(records) - 1; i >= 0; i-- {
			r := records[i]
			if isPlan(r) != plans || plans && now.Sub(r.Time) > provisionerPlanTTL {
				continue
			}
			if count[r.Kind] >= provisionerKeep || size+len(r.Sealed) > provisionerCarryBytes {
				continue
			}
			count[r.Kind]++
			size += len(r.Sealed)
			keep[i] = true
		}
	}
	var out []contract.ProvisionerRecord
	for i, r := range records {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out
}
