package workflows

import (
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// sequenceBatch bounds a sequence workflow's history: it continues as new after this many
// numbers.
const sequenceBatch = 500

// SequenceKeysKept is how many keyed numbers (webhook deliveries, cron ticks) a sequence
// workflow remembers across continue-as-new: a repeat of one of them gets its
// first number again, and so starts nothing (oldest dropped first). Temporal forgets update IDs when a workflow
// continues as new; this list is what carries them over.
const SequenceKeysKept = 2000

// KeyedNumber is a sequence number handed out for an idempotency key.
type KeyedNumber struct {
	Key    string `json:"k"`
	Number int64  `json:"n"`
}

// Sequence hands out a pipeline's sequence numbers (<+pipeline.sequenceId>) through the "next"
// update. It is one long-lived workflow per pipeline identifier, so the counter is durable and
// shared by every client and survives restarts. An update whose ID is an idempotency key
// rather than a random UUID is remembered with its number, in this run by Temporal and in later
// runs by kept.
//
// A sequence workflow of a pipeline's namespace (Gantry before internal namespaces) hands its
// state over through the "handover" update and completes with it as its result, so that the
// sequence workflow of the internal namespace carries on from where it stopped.
func Sequence(ctx workflow.Context, last int64, kept []KeyedNumber) (*SequenceState, error) {
	known := make(map[string]int64, len(kept))
	for _, k := range kept {
		known[k.Key] = k.Number
	}
	handed, handedOver := 0, false
	// take hands out the next number, or the number a key already has.
	take := func(key string) int64 {
		if n, ok := known[key]; ok && key != "" {
			return n
		}
		last++
		handed++
		if key != "" {
			known[key] = last
			kept = append(kept, KeyedNumber{Key: key, Number: last})
		}
		return last
	}
	notMoved := func() error {
		if handedOver {
			return temporal.NewApplicationError("this sequence moved to the internal namespace", ErrConflict)
		}
		return nil
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateNext, func(ctx workflow.Context) (int64, error) {
		id := workflow.GetCurrentUpdateInfo(ctx).ID
		if _, err := uuid.Parse(id); err == nil {
			id = "" // a random update ID is no key
		}
		return take(id), nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context) error { return notMoved() }})
	if err != nil {
		return nil, err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateNextBatch, func(ctx workflow.Context, keys []string) ([]int64, error) {
		numbers := make([]int64, len(keys))
		for i, k := range keys {
			numbers[i] = take(k)
		}
		return numbers, nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, []string) error { return notMoved() }})
	if err != nil {
		return nil, err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateBind, func(ctx workflow.Context, binds []KeyedNumber) ([]int64, error) {
		numbers := make([]int64, len(binds))
		for i, b := range binds {
			if n, ok := known[b.Key]; ok {
				numbers[i] = n
				continue
			}
			known[b.Key] = b.Number
			kept = append(kept, b)
			numbers[i] = b.Number
		}
		return numbers, nil
	}, workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, binds []KeyedNumber) error {
		for _, b := range binds {
			if b.Key == "" || b.Number < 1 || b.Number > last {
				return refuse(ErrInvalid, "key %q with number %d: only keys and numbers this sequence handed out can be bound", b.Key, b.Number)
			}
		}
		return notMoved()
	}})
	if err != nil {
		return nil, err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateGiveBack, func(ctx workflow.Context, numbers []int64) (int64, error) {
		unused := make(map[int64]bool, len(numbers))
		for _, n := range numbers {
			unused[n] = true
		}
		bound := make(map[int64]bool, len(kept))
		for _, k := range kept {
			bound[k.Number] = true
		}
		for last > 0 && unused[last] && !bound[last] {
			last--
		}
		return last, nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, []int64) error { return notMoved() }})
	if err != nil {
		return nil, err
	}
	err = workflow.SetUpdateHandler(ctx, UpdateHandover, func(ctx workflow.Context) (*SequenceState, error) {
		handedOver = true
		return &SequenceState{Last: last, Kept: kept}, nil
	})
	if err != nil {
		return nil, err
	}
	if err := workflow.Await(ctx, func() bool {
		return (handedOver || handed >= sequenceBatch) && workflow.AllHandlersFinished(ctx)
	}); err != nil {
		return nil, err
	}
	if handedOver {
		return &SequenceState{Last: last, Kept: kept}, nil
	}
	if len(kept) > SequenceKeysKept {
		kept = kept[len(kept)-SequenceKeysKept:]
	}
	// A sequence workflow started on the pipelines' queue moves to its own (see SequenceQueue).
	if q := workflow.GetInfo(ctx).TaskQueueName; !strings.HasSuffix(q, SequenceQueue("")) &&
		workflow.GetVersion(ctx, changeSequenceQueue, workflow.DefaultVersion, 1) == 1 {
		ctx = workflow.WithWorkflowTaskQueue(ctx, SequenceQueue(q))
	}
	return nil, workflow.NewContinueAsNewError(ctx, SequenceName, last, kept)
}

// SequenceState is where a sequence stands: the last number handed out and the keyed numbers
// it remembers.
type SequenceState struct {
	Last int64         `json:"last"`
	Kept []KeyedNumber `json:"kept,omitempty"`
}
