package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities"
)

// ProvisionerRecord is one thing a Terraform step did with a provisioner (issue 55): a saved
// plan waiting for its apply, or a configuration applied, about to be applied, re-applied by a
// rollback, or destroyed. Sealed holds the configuration (and for a plan the plan file) sealed
// with the workers' keys: it carries variable values, which may be secrets.
type ProvisionerRecord struct {
	Kind      string    `json:"kind"` // one of the Record* kinds
	Execution string    `json:"execution"`
	Step      string    `json:"step,omitempty"`
	Time      time.Time `json:"time"`
	Sealed    []byte    `json:"sealed,omitempty"`
	// Deployed is a RecordDeployed record's artifact (issue 56): the same workflow type keeps
	// what an infrastructure was last deployed with, under DeployedID.
	Deployed *activities.Deployed `json:"deployed,omitempty"`
}

// The kinds of provisioner records.
const (
	RecordPlan        = "plan" // a TerraformPlan's saved plan (its command in Step's result)
	RecordDestroyPlan = "destroy-plan"
	RecordApplying    = "applying"  // about to apply: what a rollback destroys after a first apply failed
	RecordApplied     = "applied"   // applied successfully
	RecordRollback    = "rollback"  // a rollback re-applied an earlier configuration
	RecordDestroyed   = "destroyed" // everything the configuration managed was destroyed
	RecordDeployed    = "deployed"  // an Ssh stage deployed Deployed successfully
)

// ProvisionerQuery selects the newest record of one of Kinds, of Execution (or, with Other,
// of any other execution); an empty Execution matches any.
type ProvisionerQuery struct {
	Kinds     []string `json:"kinds"`
	Execution string   `json:"execution,omitempty"`
	Other     bool     `json:"other,omitempty"`
}

const (
	// ProvisionerName is the Provisioner workflow's type; ProvisionerID(scope, id) its ID.
	ProvisionerName = "gantry.Provisioner"
	// SignalProvisioner carries one ProvisionerRecord; QueryProvisioner answers a
	// ProvisionerQuery with the record found (nil when none).
	SignalProvisioner = "record"
	QueryProvisioner  = "find"
)

// ProvisionerID is the workflow ID of a provisioner's records: its identifier within its
// project (org/project).
func ProvisionerID(project, id string) string { return "gantry-provisioner/" + project + "/" + id }

// DeployedID is the workflow ID of the records of what a service was deployed with to an
// infrastructure.
func DeployedID(k activities.DeployedKey) string {
	return "gantry-deployed/" + k.Project + "/" + k.Environment + "/" + k.Infra + "/" + k.Service
}

// Limits of what a provisioner keeps: plans waiting for their apply expire, and only the
// newest records of each kind are carried into the next run (variables for the tests).
var (
	provisionerPlanTTL    = 7 * 24 * time.Hour
	provisionerKeep       = 5       // records of each kind
	provisionerPerRun     = 50      // records per run before continuing as new
	provisionerCarryBytes = 3 << 19 // 1.5 MiB: a run's input stays below Temporal's 2 MB
)

// Provisioner keeps a provisioner's records: each arrives as a SignalProvisioner through
// SignalWithStart; QueryProvisioner finds one. It never ends by itself; after
// provisionerPerRun records it continues as new with the newest records of each kind, so its
// history stays small however many executions use the provisioner.
func Provisioner(ctx workflow.Context, carried []ProvisionerRecord) error {
	records := carried
	if err := workflow.SetQueryHandler(ctx, QueryProvisioner, func(q ProvisionerQuery) (*ProvisionerRecord, error) {
		return findRecord(records, q), nil
	}); err != nil {
		return err
	}
	ch := workflow.GetSignalChannel(ctx, SignalProvisioner)
	for n := 0; n < provisionerPerRun; n++ {
		var r ProvisionerRecord
		ch.Receive(ctx, &r)
		records = append(records, r)
	}
	for { // records delivered with the last task belong to this run
		var r ProvisionerRecord
		if !ch.ReceiveAsync(&r) {
			break
		}
		records = append(records, r)
	}
	return workflow.NewContinueAsNewError(ctx, ProvisionerName, keepRecords(records, workflow.Now(ctx)))
}

// findRecord returns the newest record matching q.
func findRecord(records []ProvisionerRecord, q ProvisionerQuery) *ProvisionerRecord {
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

func isPlan(r ProvisionerRecord) bool { return r.Kind == RecordPlan || r.Kind == RecordDestroyPlan }

// keepRecords keeps, in order, the newest provisionerKeep records of each kind (plans only
// while fresh) within provisionerCarryBytes of sealed data: configurations first, newest
// first, then plans.
func keepRecords(records []ProvisionerRecord, now time.Time) []ProvisionerRecord {
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
	var out []ProvisionerRecord
	for i, r := range records {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out
}
