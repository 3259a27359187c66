package workflows

import "go.temporal.io/sdk/workflow"

// sequenceBatch bounds a sequence workflow's history: it continues as new after this many
// numbers.
const sequenceBatch = 500

// Sequence hands out a pipeline's sequence numbers (<+pipeline.sequenceId>) through the "next"
// update. It is one long-lived workflow per pipeline identifier, so the counter is durable and
// shared by every client and survives restarts.
func Sequence(ctx workflow.Context, last int64) error {
	handed := 0
	err := workflow.SetUpdateHandler(ctx, UpdateNext, func(ctx workflow.Context) (int64, error) {
		last++
		handed++
		return last, nil
	})
	if err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool { return handed >= sequenceBatch && workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, SequenceName, last)
}
