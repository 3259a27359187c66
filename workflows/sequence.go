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
	q := &sequence{last: last, kept: kept, known: make(map[string]int64, len(kept))}
	for _, k := range kept {
		q.known[k.Key] = k.Number
	}
	if err := q.handle(ctx); err != nil {
		return nil, err
	}
	if err := workflow.Await(ctx, func() bool {
		return (q.handedOver || q.handed >= sequenceBatch) && workflow.AllHandlersFinished(ctx)
	}); err != nil {
		return nil, err
	}
	if q.handedOver {
		return q.state(), nil
	}
	if len(q.kept) > SequenceKeysKept {
		q.kept = q.kept[len(q.kept)-SequenceKeysKept:]
	}
	// A sequence workflow started on the pipelines' queue moves to its own (see SequenceQueue).
	if tq := workflow.GetInfo(ctx).TaskQueueName; !strings.HasSuffix(tq, SequenceQueue("")) &&
		workflow.GetVersion(ctx, changeSequenceQueue, workflow.DefaultVersion, 1) == 1 {
		ctx = workflow.WithWorkflowTaskQueue(ctx, SequenceQueue(tq))
	}
	return nil, workflow.NewContinueAsNewError(ctx, SequenceName, q.last, q.kept)
}

// sequence is a sequence workflow's state in one run.
type sequence struct {
	last       int64
	kept       []KeyedNumber    // keyed numbers, oldest first
	known      map[string]int64 // kept, by key
	handed     int              // numbers handed out in this run
	handedOver bool
}

func (q *sequence) state() *SequenceState { return &SequenceState{Last: q.last, Kept: q.kept} }

// take hands out the next number, or the number a key already has.
func (q *sequence) take(key string) int64 {
	if n, ok := q.known[key]; ok && key != "" {
		return n
	}
	q.last++
	q.handed++
	if key != "" {
		q.known[key] = q.last
		q.kept = append(q.kept, KeyedNumber{Key: key, Number: q.last})
	}
	return q.last
}

// bind gives keys the numbers a caller already took (a pipeline binding its start's key).
func (q *sequence) bind(binds []KeyedNumber) []int64 {
	numbers := make([]int64, len(binds))
	for i, b := range binds {
		if n, ok := q.known[b.Key]; ok {
			numbers[i] = n
			continue
		}
		q.known[b.Key] = b.Number
		q.kept = append(q.kept, b)
		numbers[i] = b.Number
	}
	return numbers
}

// giveBack takes back the last numbers when they are among the unused ones and unbound, and
// returns the last number handed out.
func (q *sequence) giveBack(numbers []int64) int64 {
	unused := make(map[int64]bool, len(numbers))
	for _, n := range numbers {
		unused[n] = true
	}
	bound := make(map[int64]bool, len(q.kept))
	for _, k := range q.kept {
		bound[k.Number] = true
	}
	for q.last > 0 && unused[q.last] && !bound[q.last] {
		q.last--
	}
	return q.last
}

func (q *sequence) notMoved() error {
	if q.handedOver {
		return temporal.NewApplicationError("this sequence moved to the internal namespace", ErrConflict)
	}
	return nil
}

// handle registers the sequence's updates.
func (q *sequence) handle(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateNext, func(ctx workflow.Context) (int64, error) {
		id := workflow.GetCurrentUpdateInfo(ctx).ID
		if _, err := uuid.Parse(id); err == nil {
			id = "" // a random update ID is no key
		}
		return q.take(id), nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context) error { return q.notMoved() }})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateNextBatch, func(ctx workflow.Context, keys []string) ([]int64, error) {
		numbers := make([]int64, len(keys))
		for i, k := range keys {
			numbers[i] = q.take(k)
		}
		return numbers, nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, []string) error { return q.notMoved() }})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateBind, func(ctx workflow.Context, binds []KeyedNumber) ([]int64, error) {
		return q.bind(binds), nil
	}, workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, binds []KeyedNumber) error {
		for _, b := range binds {
			if b.Key == "" || b.Number < 1 || b.Number > q.last {
				return refuse(ErrInvalid, "key %q with number %d: only keys and numbers this sequence handed out can be bound", b.Key, b.Number)
			}
		}
		return q.notMoved()
	}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateGiveBack, func(ctx workflow.Context, numbers []int64) (int64, error) {
		return q.giveBack(numbers), nil
	}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, []int64) error { return q.notMoved() }})
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, UpdateHandover, func(ctx workflow.Context) (*SequenceState, error) {
		q.handedOver = true
		return q.state(), nil
	})
}

// SequenceState is where a sequence stands: the last number handed out and the keyed numbers
// it remembers.
type SequenceState struct {
	Last int64         `json:"last"`
	Kept []KeyedNumber `json:"kept,omitempty"`
}
