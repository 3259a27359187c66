package starter

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
)

// UpdateRetry bounds how a person's decision (an approval, a rejection, an intervention, an
// input answer or an abort) is re-sent when the server aborted it for a transient reason.
type UpdateRetry struct {
	// Within is how long to keep trying; 0 is two minutes (or the caller's deadline, if sooner).
	Within time.Duration
	// First is the first pause; it doubles up to Max.
	First, Max time.Duration
}

func (r UpdateRetry) within() time.Duration {
	if r.Within > 0 {
		return r.Within
	}
	return 2 * time.Minute
}

func (r UpdateRetry) first() time.Duration {
	if r.First > 0 {
		return r.First
	}
	return 50 * time.Millisecond
}

func (r UpdateRetry) max() time.Duration {
	if r.Max > 0 {
		return r.Max
	}
	return 2 * time.Second
}

// update sends a Temporal update and waits for its outcome. The update ID is fixed before the
// first attempt and reused by every retry, so the workflow applies the decision once however
// often it is sent: Temporal answers a repeat of an accepted ID with the first outcome. Only
// aborts that say nothing about the decision are retried (see transientUpdateErr); a
// validator's refusal or the handler's answer is final.
func (s *Starter) update(ctx context.Context, workflowID, name string, arg any, out any) error {
	opts := client.UpdateWorkflowOptions{
		UpdateID:     uuid.NewString(),
		WorkflowID:   workflowID,
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	}
	return s.resend(ctx, workflowID, name, opts.UpdateID, func() error {
		h, err := s.Client.UpdateWorkflow(ctx, opts)
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	})
}

// resend calls send until it succeeds, fails for good, or the retry bound or ctx ends. send
// must reuse one update ID on every call.
func (s *Starter) resend(ctx context.Context, workflowID, name, updateID string, send func() error) error {
	deadline := time.Now().Add(s.Resend.within())
	pause := s.Resend.first()
	for attempt := 1; ; attempt++ {
		err := send()
		if err == nil || !transientUpdateErr(err) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return err
		}
		s.resent.Add(1)
		s.logger().Info("update not applied yet; sending it again with the same update ID",
			zap.String("workflow", workflowID), zap.String("update", name), zap.String("updateId", updateID),
			zap.Int("attempt", attempt), zap.Duration("pause", pause), zap.Error(err))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, s.Resend.max())
	}
}

// transientUpdateErr tells whether the server dropped an update without deciding it: the
// workflow task that carried it failed or timed out (the task is retried, the update is not),
// the workflow is continuing as new, the server was busy or briefly unreachable, or a long
// poll for the outcome expired before the caller's own deadline. Sending it again with the
// same ID is safe: an update the workflow already accepted is answered with its outcome.
func transientUpdateErr(err error) bool {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return false // the validator or the handler answered
	}
	var poll *client.WorkflowUpdateServiceTimeoutOrCanceledError
	if errors.As(err, &poll) {
		return true // the caller's ctx is checked by resend
	}
	var (
		notReady    *serviceerror.WorkflowNotReady
		exhausted   *serviceerror.ResourceExhausted
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		aborted     *serviceerror.Aborted
	)
	return errors.As(err, &notReady) || errors.As(err, &exhausted) || errors.As(err, &unavailable) ||
		errors.As(err, &deadline) || errors.As(err, &aborted)
}

// Resent counts the updates this starter had to send again.
func (s *Starter) Resent() int64 { return s.resent.Load() }

func (s *Starter) logger() *zap.Logger {
	if s.Log != nil {
		return s.Log
	}
	return zap.NewNop()
}
