package contract

import "github.com/gantry-cd/gantry/plan"

// CommitStatus reports a CI stage's build status on a commit to the codebase's Git provider.
const CommitStatus = "gantry.CommitStatus"

// Commit states, as GitHub names them (the activity maps them for GitLab and Bitbucket).
const (
	CommitPending = "pending"
	CommitSuccess = "success"
	CommitFailure = "failure"
	CommitError   = "error" // the build was aborted or could not run
)

// CommitStatusInput is one status report on a commit.
type CommitStatusInput struct {
	Repo        plan.GitStore `json:"repo"`
	SHA         string        `json:"sha"`
	State       string        `json:"state"`
	Context     string        `json:"context"` // the check's name on the commit
	Description string        `json:"description"`
	// Namespace and ExecutionID link the status to the execution in the Web UI.
	Namespace   string `json:"namespace"`
	ExecutionID string `json:"executionId"`
}
