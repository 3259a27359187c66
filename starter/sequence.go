package starter

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/workflows"
)

// A numberBatcher gathers the sequence numbers this process asks of one pipeline while an
// update for earlier ones is under way, and takes them all with the next update. A burst of
// starts (webhook deliveries) then costs the sequence workflow one update and one workflow task
// per batch instead of one per start, and stays below Temporal's limit of in-flight updates
// per workflow (history.maxInFlightUpdates, default 10), past which the server refuses updates
// and the SDK backs off for up to seconds.
type numberBatcher struct {
	mu       sync.Mutex
	waiting  []*numberRequest
	inFlight int
}

type numberRequest struct {
	key  string // an idempotency key, or "" for a number of its own
	done chan struct{}
	n    int64
	err  error
}

const (
	// batchesInFlight is how many updates one process keeps in flight per pipeline: the next
	// batch gathers while one waits for its workflow task.
	batchesInFlight = 2
	// maxBatch bounds the numbers one update takes.
	maxBatch = 100
)

// nextSequence takes the pipeline's next sequence number from its sequence workflow, starting
// that workflow on first use. A key (a delivery ID, a cron tick) gets the number it got
// before, however often and however concurrently it is asked for, across restarts.
func (s *Starter) nextSequence(ctx context.Context, pipelineID, key string) (int64, error) {
	v, _ := s.sequences.LoadOrStore(pipelineID, &numberBatcher{})
	b := v.(*numberBatcher)
	r := &numberRequest{key: key, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, r)
	lead := b.inFlight < batchesInFlight
	if lead {
		b.inFlight++
	}
	b.mu.Unlock()
	if lead {
		// Sent on behalf of every caller, so no caller's cancellation cuts it short.
		go s.sendBatches(context.WithoutCancel(ctx), pipelineID, b)
	}
	select {
	case <-r.done:
		if r.err != nil {
			return 0, fmt.Errorf("take a sequence number for pipeline %s (is a gantry worker running on task queue %s?): %w", pipelineID, s.queue(), r.err)
		}
		return r.n, nil
	case <-ctx.Done():
		// A keyed number taken meanwhile is kept for the key: asking again gets it.
		return 0, fmt.Errorf("take a sequence number for pipeline %s: %w", pipelineID, ctx.Err())
	}
}

// sendBatches takes numbers for the waiting requests, a batch per update, until none wait.
func (s *Starter) sendBatches(ctx context.Context, pipelineID string, b *numberBatcher) {
	ctx, cancel := context.WithTimeout(ctx, s.Resend.within())
	defer cancel()
	for {
		b.mu.Lock()
		if len(b.waiting) == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		batch := b.waiting[:min(len(b.waiting), maxBatch)]
		b.waiting = b.waiting[len(batch):]
		b.mu.Unlock()
		keys := make([]string, len(batch))
		for i, r := range batch {
			keys[i] = r.key
		}
		numbers, err := s.takeNumbers(ctx, pipelineID, keys)
		for i, r := range batch {
			if err == nil {
				r.n = numbers[i]
			}
			r.err = err
			close(r.done)
		}
	}
}

// takeNumbers takes one number per key with one update to the pipeline's sequence workflow.
func (s *Starter) takeNumbers(ctx context.Context, pipelineID string, keys []string) ([]int64, error) {
	if err := s.adoptSequence(ctx, pipelineID); err != nil {
		return nil, err
	}
	var numbers []int64
	err := s.sequenceUpdate(ctx, pipelineID, workflows.UpdateNextBatch, uuid.NewString(), []any{keys}, &numbers)
	if err != nil && strings.Contains(err.Error(), "unknown update") {
		// A worker from before batches (a rolling upgrade): one update per number, keyed by
		// its update ID as that worker expects.
		numbers = make([]int64, len(keys))
		for i, k := range keys {
			id := k
			if id == "" {
				id = uuid.NewString()
			}
			if err = s.sequenceUpdate(ctx, pipelineID, workflows.UpdateNext, id, nil, &numbers[i]); err != nil {
				break
			}
		}
	}
	if err == nil && len(numbers) != len(keys) {
		err = fmt.Errorf("the sequence workflow answered %d numbers for %d starts", len(numbers), len(keys))
	}
	return numbers, err
}

// sequenceUpdate sends an update to the pipeline's sequence workflow, starting it if needed,
// and re-sends it with the same ID while the server drops it undecided.
func (s *Starter) sequenceUpdate(ctx context.Context, pipelineID, name, updateID string, args []any, out any) error {
	return s.resend(ctx, sequenceID(pipelineID), name, updateID, func() error {
		// An operation runs once; each attempt gets its own.
		op := s.internal().NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       sequenceID(pipelineID),
			TaskQueue:                workflows.SequenceQueue(s.queue()),
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			StaticSummary:            "Sequence numbers of pipeline " + pipelineID,
		}, workflows.SequenceName, int64(0))
		h, err := s.internal().UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID:     updateID,
				UpdateName:   name,
				Args:         args,
				WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	})
}
