// Package notify sends notification deliveries (spec 20): e-mail through SMTP, Slack and
// Microsoft Teams incoming webhooks, PagerDuty and Datadog events and plain webhooks, one
// attempt per activity execution, with secrets masked in what is sent back and logged. The
// notifier workflow decides what to send and when to retry.
package notify

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/contract"
)

// Activity sends deliveries for the notifier workflow: one attempt per activity execution; the
// workflow owns the retry schedule (spec 20.5.4), so every attempt is recorded.
type Activity struct {
	Sender *Sender
	Log    *zap.Logger // nil: no log
}

// Run sends a delivery once. A failure is an ApplicationError (never retried by Temporal) of
// type "Retryable" or "Permanent" with an contract.DeliveryFailure as its details.
func (a *Activity) Run(ctx context.Context, d contract.Delivery) (contract.DeliveryResult, error) {
	res, err := a.Sender.Send(ctx, d)
	log := a.Log
	if log == nil {
		log = zap.NewNop()
	}
	fields := []zap.Field{zap.String("execution", d.Event.ExecutionID), zap.String("event", d.Event.Type),
		zap.String("rule", d.Rule), zap.String("target", d.Describe()), zap.Int32("attempt", activity.GetInfo(ctx).Attempt)}
	if err == nil {
		log.Info("notification delivered", append(fields, zap.Int("code", res.Code))...)
		return res, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Retryable: true, Msg: err.Error()}
	}
	kind := "Permanent"
	if e.Retryable {
		kind = "Retryable"
	}
	log.Warn("notification not delivered", append(fields, zap.String("error", e.Msg), zap.Bool("retryable", e.Retryable))...)
	return contract.DeliveryResult{}, temporal.NewApplicationErrorWithOptions(e.Msg, kind, temporal.ApplicationErrorOptions{
		NonRetryable: true, Details: []any{contract.DeliveryFailure{Retryable: e.Retryable, Code: e.Code, RetryAfter: e.RetryAfter}}})
}
