package starter

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/workflows"
)

// A pipeline's sequence numbers come from its sequence workflow, one update at a time per
// batch of concurrent starts. An update needs a workflow task of the sequence workflow, which
// under a burst costs more than the start itself: so during a burst the starter takes numbers
// ahead ("spares") and a start takes one without a round trip. A start with an idempotency key
// (a webhook delivery, a cron tick) that takes a spare does not wait for its key to be recorded
// either: the execution records it before anything runs and ends SKIPPED if the key started
// another execution first (workflows.BindActivity). Repeats of a key this process saw are
// answered here with the first start's number, so they start nothing.
//
// numbers is one pipeline's state in this process.
type numbers struct {
	mu    sync.Mutex
	queue batchQueue[*numberRequest] // starts waiting for an update
	// keys maps the idempotency keys this process started, or is starting, to their request.
	keys     map[string]*numberRequest
	keyOrder []*numberRequest
	spares   []int64
	// ahead is how many spares a round trip takes; 0 while starts come one at a time.
	ahead     int
	refilling bool
	lastUse   time.Time // when a spare last arrived or was taken
	expiry    *time.Timer
	binds     batcher[workflows.KeyedNumber]
}

type numberRequest struct {
	key   string // an idempotency key, or "" for a number of its own
	done  chan struct{}
	n     int64
	bound bool // the key is recorded with the number (else the execution records it)
	err   error
}

const (
	// batchesInFlight is how many updates one process keeps in flight per pipeline: the next
	// batch gathers while one waits for its workflow task.
	batchesInFlight = 2
	// maxBatch bounds the numbers one update takes, spares included.
	maxBatch = 100
	// minAhead is how many spares a start takes ahead when it has to ask; maxAhead bounds them.
	minAhead, maxAhead = 4, 64
	// spareLife is how long spares wait for starts before they are given back (so numbers
	// stay close to start order across processes, and a process that stops leaves no gap).
	spareLife = 30 * time.Second
	// keysKept is how many keys a process remembers per pipeline to answer repeats itself.
	keysKept = 4096
)

func (s *Starter) numbersOf(pipelineID string) *numbers {
	v, _ := s.sequences.LoadOrStore(pipelineID, &numbers{keys: map[string]*numberRequest{}})
	return v.(*numbers)
}

// nextSequence takes the pipeline's next sequence number, starting its sequence workflow on
// first use. A key (a delivery ID, a cron tick) gets the number it got before, however often
// and however concurrently it is asked for: across restarts when bound is true, and otherwise
// once the execution recorded it (PipelineInput.Key).
func (s *Starter) nextSequence(ctx context.Context, pipelineID, key string) (n int64, bound bool, err error) {
	b := s.numbersOf(pipelineID)
	b.mu.Lock()
	if r := b.keys[key]; key != "" && r != nil {
		b.mu.Unlock()
		return s.await(ctx, pipelineID, r)
	}
	r := &numberRequest{key: key, done: make(chan struct{})}
	if key != "" {
		b.remember(r)
	}
	if len(b.spares) > 0 {
		r.n, r.bound = b.spares[0], key == ""
		b.spares = b.spares[1:]
		b.lastUse = time.Now()
		close(r.done)
		if len(b.spares) <= b.ahead/2 && !b.refilling {
			b.refilling = true
			go s.refill(context.WithoutCancel(ctx), pipelineID, b)
		}
		b.mu.Unlock()
		return r.n, r.bound, nil
	}
	// Starts outran the spares: take more ahead from now on.
	b.ahead = min(maxAhead, max(minAhead, 2*b.ahead))
	lead := b.queue.add(r)
	b.mu.Unlock()
	if lead {
		// Sent on behalf of every caller, so no caller's cancellation cuts it short.
		go s.sendBatches(context.WithoutCancel(ctx), pipelineID, b)
	}
	return s.await(ctx, pipelineID, r)
}

func (s *Starter) await(ctx context.Context, pipelineID string, r *numberRequest) (int64, bool, error) {
	select {
	case <-r.done:
		if r.err != nil {
			return 0, false, fmt.Errorf("take a sequence number for pipeline %s (is a gantry worker running on task queue %s?): %w", pipelineID, s.queue(), r.err)
		}
		return r.n, r.bound, nil
	case <-ctx.Done():
		// A keyed number taken meanwhile is kept for the key: asking again gets it.
		return 0, false, fmt.Errorf("take a sequence number for pipeline %s: %w", pipelineID, ctx.Err())
	}
}

// remember keeps a key's request for repeats, forgetting the oldest past keysKept.
func (b *numbers) remember(r *numberRequest) {
	b.keys[r.key] = r
	b.keyOrder = append(b.keyOrder, r)
	if len(b.keyOrder) > keysKept {
		if old := b.keyOrder[0]; b.keys[old.key] == old {
			delete(b.keys, old.key)
		}
		b.keyOrder = b.keyOrder[1:]
	}
}

// sendBatches takes numbers for the waiting requests, a batch per update, until none wait.
// When requests piled up behind an update, starts come in a burst: the update also takes
// spares for the starts to come.
func (s *Starter) sendBatches(ctx context.Context, pipelineID string, b *numbers) {
	ctx, cancel := context.WithTimeout(ctx, s.Resend.within())
	defer cancel()
	for {
		b.mu.Lock()
		batch := b.queue.take()
		if len(batch) == 0 {
			b.mu.Unlock()
			return
		}
		extra := min(maxBatch-len(batch), max(0, b.ahead-len(b.spares)))
		b.mu.Unlock()
		keys := make([]string, len(batch), len(batch)+extra)
		for i, r := range batch {
			keys[i] = r.key
		}
		keys = append(keys, make([]string, extra)...)
		numbers, err := s.takeNumbers(ctx, pipelineID, keys)
		b.mu.Lock()
		for i, r := range batch {
			if err == nil {
				r.n, r.bound = numbers[i], true
			} else if r.key != "" && b.keys[r.key] == r {
				delete(b.keys, r.key) // asking again sends the key again
			}
			r.err = err
			close(r.done)
		}
		if err == nil && extra > 0 {
			s.addSpares(pipelineID, b, numbers[len(batch):])
		}
		b.mu.Unlock()
	}
}

// refill takes spares ahead of the starts of a burst.
func (s *Starter) refill(ctx context.Context, pipelineID string, b *numbers) {
	ctx, cancel := context.WithTimeout(ctx, s.Resend.within())
	defer cancel()
	b.mu.Lock()
	want := min(maxBatch, max(0, b.ahead-len(b.spares)))
	b.mu.Unlock()
	var numbers []int64
	var err error
	if want > 0 {
		numbers, err = s.takeNumbers(ctx, pipelineID, make([]string, want))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refilling = false
	if err != nil {
		s.logger().Warn("could not take sequence numbers ahead; starts take theirs one batch at a time", zap.String("pipeline", pipelineID), zap.Error(err))
		b.ahead = 0
		return
	}
	s.addSpares(pipelineID, b, numbers)
}

// addSpares keeps numbers taken ahead, hands them to the starts that wait for an update still
// under way, and gives them back once they wait longer than spareLife. Call with b.mu held.
func (s *Starter) addSpares(pipelineID string, b *numbers, spare []int64) {
	b.spares = append(b.spares, spare...)
	b.lastUse = time.Now()
	for len(b.queue.waiting) > 0 && len(b.spares) > 0 {
		r := b.queue.waiting[0]
		b.queue.waiting = b.queue.waiting[1:]
		r.n, r.bound = b.spares[0], r.key == ""
		b.spares = b.spares[1:]
		close(r.done)
	}
	if b.expiry == nil {
		b.expiry = time.AfterFunc(spareLife, func() { s.expireSpares(pipelineID, b) })
	} else {
		b.expiry.Reset(spareLife)
	}
}

func (s *Starter) expireSpares(pipelineID string, b *numbers) {
	b.mu.Lock()
	if wait := spareLife - time.Since(b.lastUse); wait > 0 {
		b.expiry.Reset(wait)
		b.mu.Unlock()
		return
	}
	spare := b.spares
	b.spares, b.ahead = nil, 0
	b.mu.Unlock()
	if len(spare) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.giveBack(ctx, pipelineID, spare)
	}
}

// Close gives back the numbers this starter took ahead and no start used, so a server that
// stops leaves no gap in its pipelines' numbers (unless others took numbers meanwhile).
func (s *Starter) Close(ctx context.Context) {
	s.sequences.Range(func(k, v any) bool {
		b := v.(*numbers)
		b.mu.Lock()
		spare := b.spares
		b.spares, b.ahead = nil, 0
		if b.expiry != nil {
			b.expiry.Stop()
		}
		b.mu.Unlock()
		if len(spare) > 0 {
			s.giveBack(ctx, k.(string), spare)
		}
		return true
	})
}

func (s *Starter) giveBack(ctx context.Context, pipelineID string, spare []int64) {
	var last int64
	if err := s.sequenceUpdate(ctx, pipelineID, workflows.UpdateGiveBack, uuid.NewString(), []any{spare}, &last); err != nil {
		s.logger().Info("numbers taken ahead not given back; the sequence skips them", zap.String("pipeline", pipelineID), zap.Error(err))
	}
}

// BindKey records that key started execution number n of the pipeline, unless the key started
// another execution before, and returns the number the key started first. Concurrent calls
// for one pipeline share an update.
func (s *Starter) BindKey(ctx context.Context, req workflows.BindRequest) (int64, error) {
	b := s.numbersOf(req.Pipeline)
	return b.binds.do(ctx, workflows.KeyedNumber{Key: req.Key, Number: req.Number}, func(ctx context.Context, binds []workflows.KeyedNumber) ([]int64, error) {
		if err := s.adoptSequence(ctx, req.Pipeline); err != nil {
			return nil, err
		}
		var first []int64
		err := s.sequenceUpdate(ctx, req.Pipeline, workflows.UpdateBind, uuid.NewString(), []any{binds}, &first)
		if err == nil && len(first) != len(binds) {
			err = fmt.Errorf("the sequence workflow answered %d numbers for %d keys", len(first), len(binds))
		}
		return first, err
	})
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

// A batcher gathers the calls that arrive while an update for earlier ones is under way, and
// sends them all with the next update: a burst then costs one update and one workflow task per
// batch instead of one per call, and stays below Temporal's limit of in-flight updates per
// workflow (history.maxInFlightUpdates, default 10), past which the server refuses updates and
// the SDK backs off for up to seconds.
type batcher[T any] struct {
	mu    sync.Mutex
	queue batchQueue[*call[T]]
}

type call[T any] struct {
	arg  T
	done chan struct{}
	out  int64
	err  error
}

// do sends arg with the next batch and returns its answer.
func (b *batcher[T]) do(ctx context.Context, arg T, send func(context.Context, []T) ([]int64, error)) (int64, error) {
	c := &call[T]{arg: arg, done: make(chan struct{})}
	b.mu.Lock()
	lead := b.queue.add(c)
	b.mu.Unlock()
	if lead {
		go b.sendAll(context.WithoutCancel(ctx), send)
	}
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (b *batcher[T]) sendAll(ctx context.Context, send func(context.Context, []T) ([]int64, error)) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		b.mu.Lock()
		batch := b.queue.take()
		b.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		args := make([]T, len(batch))
		for i, c := range batch {
			args[i] = c.arg
		}
		out, err := send(ctx, args)
		for i, c := range batch {
			if err == nil {
				c.out = out[i]
			}
			c.err = err
			close(c.done)
		}
	}
}

// batchQueue is what the starter's batchers share: the calls waiting for the next update, and
// the senders draining them, at most batchesInFlight, each sending batches of up to maxBatch
// until none wait. Its owner's lock guards it.
type batchQueue[T any] struct {
	waiting  []T
	inFlight int
}

// add queues x and reports whether the caller is to start a sender.
func (q *batchQueue[T]) add(x T) bool {
	q.waiting = append(q.waiting, x)
	if q.inFlight < batchesInFlight {
		q.inFlight++
		return true
	}
	return false
}

// take returns a sender's next batch; none means the sender stops.
func (q *batchQueue[T]) take() []T {
	if len(q.waiting) == 0 {
		q.inFlight--
		return nil
	}
	batch := q.waiting[:min(len(q.waiting), maxBatch)]
	q.waiting = q.waiting[len(batch):]
	return batch
}

// ChainNumber takes the number of a chained pipeline's execution (workflows.ChainNumberActivity):
// the same number for the same key, however often it is asked.
func (s *Starter) ChainNumber(ctx context.Context, req workflows.ChainNumberRequest) (int64, error) {
	n, _, err := s.nextSequence(ctx, req.Pipeline, req.Key)
	return n, err
}
