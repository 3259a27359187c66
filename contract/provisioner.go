package contract

import "time"

// Records are small durable facts kept in one long-lived workflow per subject (the
// ProvisionerName workflow type): a provisioner's plans and applies, and what an infrastructure
// was last deployed with. This file is the contract the records workflow (package workflows)
// and the activities that read and write it (packages records, terraform, deployed) share.

// ProvisionerRecord is one thing a Terraform step did with a provisioner: a saved plan waiting
// for its apply, or a configuration applied, about to be applied, re-applied by a rollback, or
// destroyed. Sealed holds the configuration (and for a plan the plan file) sealed with the
// workers' keys: it carries variable values, which may be secrets.
type ProvisionerRecord struct {
	Kind      string    `json:"kind"` // one of the RecordKind* kinds
	Execution string    `json:"execution"`
	Step      string    `json:"step,omitempty"`
	Time      time.Time `json:"time"`
	Sealed    []byte    `json:"sealed,omitempty"`
	// Deployed is a RecordKindDeployed record's artifact: the same workflow type keeps what an
	// infrastructure was last deployed with, under DeployedID.
	Deployed *Deployed `json:"deployed,omitempty"`
	// Verified is a RecordKindVerified record's window: a monitored service's last passed
	// verification, under VerifiedID.
	Verified *Verified `json:"verified,omitempty"`
}

// The kinds of records.
const (
	RecordKindPlan        = "plan" // a TerraformPlan's saved plan (its command in Step's result)
	RecordKindDestroyPlan = "destroy-plan"
	RecordKindApplying    = "applying"  // about to apply: what a rollback destroys after a first apply failed
	RecordKindApplied     = "applied"   // applied successfully
	RecordKindRollback    = "rollback"  // a rollback re-applied an earlier configuration
	RecordKindDestroyed   = "destroyed" // everything the configuration managed was destroyed
	RecordKindDeployed    = "deployed"  // an Ssh stage deployed Deployed successfully
	RecordKindVerified    = "verified"  // a Verify step passed over the window Verified
)

// ProvisionerQuery selects the newest record of one of Kinds, of Execution (or, with Other,
// of any other execution); an empty Execution matches any.
type ProvisionerQuery struct {
	Kinds     []string `json:"kinds"`
	Execution string   `json:"execution,omitempty"`
	Other     bool     `json:"other,omitempty"`
}

const (
	// ProvisionerName is the records workflow's type; ProvisionerID(scope, id) and DeployedID
	// its IDs.
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
func DeployedID(k DeployedKey) string {
	return "gantry-deployed/" + k.Project + "/" + k.Environment + "/" + k.Infra + "/" + k.Service
}

// VerifiedID is the records workflow of a monitored service's passed verifications.
func VerifiedID(k VerifiedKey) string {
	return "gantry-verified/" + k.Project + "/" + k.Monitored
}
