package contract

import "time"

// The deployments ledger: every Deployment stage that ends records what it deployed where, in
// one long-lived workflow per target (service, environment, infrastructure of a project) of the
// internal namespace. The target's workflow keeps its newest deployments in full and a summary
// per day of all of them, so that what runs where, its history and the DORA figures are read
// from Temporal alone, whatever the namespace's retention.

// RecordDeployment is the activity a Deployment stage runs when it ends: it signals the
// stage's DeploymentRecord to its target's ledger workflow, starting it the first time.
const RecordDeployment = "gantry.RecordDeployment"

const (
	// LedgerName is the ledger workflow's type; LedgerID(key) its ID.
	LedgerName = "gantry.Deployments"
	// SignalLedger carries one DeploymentRecord; QueryLedger answers with the LedgerState.
	SignalLedger = "deployment"
	QueryLedger  = "deployments"
	// MemoLedger is the memo key holding the target's LedgerSummary, so that a listing of
	// every target reads the services page from visibility in one call.
	MemoLedger = "gantryLedger"
)

// DeploymentKey names one target: a service deployed to an infrastructure of an environment
// of a project (org/project).
type DeploymentKey struct {
	Project     string `json:"project"`
	Service     string `json:"service"`
	Environment string `json:"environment"`
	Infra       string `json:"infra"`
}

// LedgerID is the workflow ID of a target's ledger.
func LedgerID(k DeploymentKey) string {
	return "gantry-deployments/" + k.Project + "/" + k.Environment + "/" + k.Infra + "/" + k.Service
}

// The outcomes of a deployment.
const (
	OutcomeSucceeded  = "succeeded"
	OutcomeFailed     = "failed"
	OutcomeRolledBack = "rolledBack" // failed, and the stage's or the pipeline's rollback ran
	OutcomeAborted    = "aborted"
	OutcomeBlocked    = "blocked" // a deployment freeze stopped it before it began
)

// DeploymentRecord is one Deployment stage's end, as the ledger keeps it.
type DeploymentRecord struct {
	Key DeploymentKey `json:"key"`
	// The names and kinds behind the key: the environment's type (Production or
	// PreProduction) and the stage's deployment type (Kubernetes, NativeHelm, ECS, ...).
	ServiceName     string `json:"serviceName,omitempty"`
	EnvironmentName string `json:"environmentName,omitempty"`
	EnvironmentType string `json:"environmentType,omitempty"`
	InfraName       string `json:"infraName,omitempty"`
	DeploymentType  string `json:"deploymentType,omitempty"`
	// Where the stage ran: the execution, its number and pipeline, and the stage.
	Execution string `json:"execution"`
	Sequence  int64  `json:"sequence,omitempty"`
	Pipeline  string `json:"pipeline"`
	Stage     string `json:"stage"` // identifier
	StageName string `json:"stageName,omitempty"`
	// StartedBy is the user who started the execution; Trigger its trigger type (MANUAL,
	// WEBHOOK, SCHEDULER_CRON, ...).
	StartedBy string    `json:"startedBy,omitempty"`
	Trigger   string    `json:"trigger,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Outcome   string    `json:"outcome"` // one of the Outcome* words
	// RestoredSeconds is, for a success that followed failures, the time since the first of
	// them (set by the ledger).
	RestoredSeconds int64 `json:"restoredSeconds,omitempty"`
	// RolledBackAt is when a pipeline rollback rolled a deployment back after it had ended.
	RolledBackAt time.Time `json:"rolledBackAt,omitzero"`
	// Status is the stage's own status (Succeeded, Failed, Expired, ApprovalRejected, ...).
	Status   string          `json:"status"`
	Artifact *LedgerArtifact `json:"artifact,omitempty"`
	// Commit is the commit the run built from, CommitTime that commit's time, when the run
	// knows them (a trigger's event, the CI codebase).
	Commit     string    `json:"commit,omitempty"`
	CommitTime time.Time `json:"commitTime,omitzero"`
	// Namespace and Release are a Kubernetes or Helm target's; Cluster an ECS one's, Asg an
	// ASG's base group, Function a Lambda's; Hosts an Ssh or WinRm target's.
	Namespace string   `json:"namespace,omitempty"`
	Release   string   `json:"release,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Asg       string   `json:"asg,omitempty"`
	Hosts     []string `json:"hosts,omitempty"`
}

// LedgerArtifact is what a deployment deployed: an image with its tag and digest, a chart and
// its version, an AMI, an object, a package version. Version names it in one word for lists.
type LedgerArtifact struct {
	Type    string `json:"type,omitempty"` // DockerRegistry, Ecr, AmazonS3, AmazonMachineImage, CustomArtifact, HelmChart, ...
	Image   string `json:"image,omitempty"`
	Tag     string `json:"tag,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Version string `json:"version"`
}

// LedgerDay sums one day's (UTC) deployments of a target: what the DORA figures are computed
// from, kept for every day however many deployments there were.
type LedgerDay struct {
	Day        string `json:"day"` // 2006-01-02
	Deployed   int    `json:"deployed"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"` // rolled back ones included
	RolledBack int    `json:"rolledBack,omitempty"`
	Aborted    int    `json:"aborted,omitempty"`
	Blocked    int    `json:"blocked,omitempty"`
	// LeadSeconds sums, over LeadCount successful deployments whose commit time is known, the
	// seconds from the commit to the deployment's end.
	LeadSeconds int64 `json:"leadSeconds,omitempty"`
	LeadCount   int   `json:"leadCount,omitempty"`
	// RestoreSeconds sums, over RestoreCount successful deployments that followed failed ones,
	// the seconds from the first of those failures' end to this success's end.
	RestoreSeconds int64 `json:"restoreSeconds,omitempty"`
	RestoreCount   int   `json:"restoreCount,omitempty"`
}

// LedgerState is a target's ledger: its newest deployments (oldest first), its last two
// successful ones (what a rollback restores), its days, and since when it has been failing.
type LedgerState struct {
	Key        DeploymentKey      `json:"key"`
	Recent     []DeploymentRecord `json:"recent,omitempty"`
	Successes  []DeploymentRecord `json:"successes,omitempty"`
	Days       []LedgerDay        `json:"days,omitempty"`
	Total      int                `json:"total"`
	FailingFor *time.Time         `json:"failingSince,omitempty"`
}

// LedgerSummary is a target's memo: its last deployment and its last successful one (what runs
// there as far as Gantry deployed it).
type LedgerSummary struct {
	Key             DeploymentKey     `json:"key"`
	ServiceName     string            `json:"serviceName,omitempty"`
	EnvironmentType string            `json:"environmentType,omitempty"`
	DeploymentType  string            `json:"deploymentType,omitempty"`
	Last            *DeploymentRecord `json:"last,omitempty"`
	Current         *DeploymentRecord `json:"current,omitempty"`
	Total           int               `json:"total"`
	// Instances is the target's last instance reading, without its instance list (nil: not
	// read, or the target is gone). Readers join it in; the ledger's memo never holds it.
	Instances *InstanceSnapshot `json:"instances,omitempty"`
}
