package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

// changeCommitStatus: a CI stage reports its build's status on the codebase's commit.
const changeCommitStatus = "commit-status"

// commitStatus reports the CI stage's build of the codebase's commit to its Git provider
// (pending once the clone named the commit, then the outcome), in a coroutine: the build does
// not wait for the provider, and a provider that refuses or cannot be reached is a note on the
// stage, never a failed build.
func (s *stageRun) commitStatus(ctx workflow.Context, state string) {
	repo := s.in.Settings.CommitStatus
	if repo == nil || s.in.Stage.Pod == nil || s.in.Batch != nil || s.in.Mode == ModePipelineRollback {
		return
	}
	cb, _ := s.root["codebase"].(map[string]any)
	sha, _ := cb["commitSha"].(string)
	if sha == "" || workflow.GetVersion(ctx, changeCommitStatus, workflow.DefaultVersion, 1) < 1 {
		return
	}
	pipe, _ := s.root["pipeline"].(map[string]any)
	pipeline, _ := pipe["identifier"].(string)
	in := contract.CommitStatusInput{Repo: *repo, SHA: sha, State: state,
		Context:     fmt.Sprintf("gantry/%s/%s", pipeline, s.in.Stage.ID),
		Description: commitDescription(s.in.Stage.Name, state),
		Namespace:   workflow.GetInfo(ctx).Namespace, ExecutionID: s.in.ExecutionID}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		// The stage's end waits for its outcome's report: a provider that does not answer
		// holds it up a minute at most.
		StartToCloseTimeout: 20 * time.Second, ScheduleToCloseTimeout: time.Minute,
		Summary:     "commit status " + state,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 2 * time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
	before := s.statusSent
	done := false
	s.statusSent = func() bool { return done }
	workflow.Go(dctx, func(ctx workflow.Context) {
		// In order: the outcome must not overtake the pending status on the provider.
		if before != nil {
			_ = workflow.Await(ctx, before)
		}
		if err := workflow.ExecuteActivity(actx, contract.CommitStatus, in).Get(ctx, nil); err != nil {
			s.tree.Notes = append(s.tree.Notes, fmt.Sprintf("the %s commit status of %s could not be reported: %s", state, sha[:min(len(sha), 12)], contract.Classify(err).Message))
		}
		done = true
	})
}

// finalCommitStatus reports the stage's outcome on its commit and waits until it is sent (or
// given up), before the stage hands back its tree.
func (s *stageRun) finalCommitStatus(ctx workflow.Context) {
	if s.statusSent == nil {
		return // nothing reported: not a CI stage with a commit status, or not cloned
	}
	state := contract.CommitFailure
	switch s.tree.Status {
	case status.Succeeded, status.IgnoreFailed:
		state = contract.CommitSuccess
	case status.Aborted:
		state = contract.CommitError
	}
	s.commitStatus(ctx, state)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.Await(dctx, s.statusSent)
}

// commitDescription is the status's text on the commit.
func commitDescription(stage, state string) string {
	switch state {
	case contract.CommitPending:
		return "Stage " + stage + " is running"
	case contract.CommitSuccess:
		return "Stage " + stage + " succeeded"
	case contract.CommitError:
		return "Stage " + stage + " was aborted"
	}
	return "Stage " + stage + " failed"
}
