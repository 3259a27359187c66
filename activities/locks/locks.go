// Package locks carries the messages between lock workflows (contract.LockWorkflow, one per
// key, in the internal namespace) and the stages that wait for them (the pipelines'
// namespace): a workflow can signal only within its own namespace, so these activities do it
// through a client of each.
package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/gantry-cd/gantry/contract"
)

// Temporal runs the lock activities.
type Temporal struct {
	// Locks is the client of the lock workflows' namespace, Pipelines that of the stages.
	Locks, Pipelines client.Client
	// TaskQueue is the queue the lock workflows run on (the sequence queue).
	TaskQueue string
	// Check is how often a lock makes sure its holder runs (0: contract.DefaultLockCheck).
	Check time.Duration
	// Log receives releases that could not be delivered (nil: none).
	Log *zap.Logger

	mu      sync.Mutex
	pending map[string][]*acquireCall // requests not sent yet, by lock
}

// acquireCall is one Acquire waiting for the update that carries its request.
type acquireCall struct {
	r    contract.LockRequest
	done chan acquireAnswer
}

type acquireAnswer struct {
	n   contract.LockNotice
	err error
}

// maxRequestsPerUpdate bounds one acquire update (a request is a few hundred bytes).
const maxRequestsPerUpdate = 500

// Acquire queues a request with its lock, starting the lock workflow when it is not running,
// and returns the lock's answer: granted, or where the ticket stands. The requests of this
// process for one lock that arrive while an update to it is on its way go together in the
// next: a lock takes one update at a time, and a burst of a thousand stages would otherwise
// queue a thousand updates on it.
func (t *Temporal) Acquire(ctx context.Context, r contract.LockRequest) (contract.LockNotice, error) {
	if r.Check == 0 {
		r.Check = t.Check
	}
	c := &acquireCall{r: r, done: make(chan acquireAnswer, 1)}
	t.mu.Lock()
	if t.pending == nil {
		t.pending = map[string][]*acquireCall{}
	}
	calls, sending := t.pending[r.Lock]
	t.pending[r.Lock] = append(calls, c)
	t.mu.Unlock()
	if !sending {
		go t.send(r.Lock, r.Key)
	}
	select {
	case a := <-c.done:
		return a.n, a.err
	case <-ctx.Done():
		return contract.LockNotice{}, ctx.Err()
	}
}

// send updates a lock with the requests pending for it, again while more arrived meanwhile.
func (t *Temporal) send(lock, key string) {
	for {
		t.mu.Lock()
		calls := t.pending[lock]
		if len(calls) == 0 {
			delete(t.pending, lock)
			t.mu.Unlock()
			return
		}
		calls = calls[:min(len(calls), maxRequestsPerUpdate)]
		t.pending[lock] = t.pending[lock][len(calls):]
		t.mu.Unlock()
		reqs := make([]contract.LockRequest, len(calls))
		for i, c := range calls {
			reqs[i] = c.r
		}
		answers, err := t.update(lock, key, reqs)
		for i, c := range calls {
			a := acquireAnswer{err: err}
			if err == nil {
				a.n = answers[i]
			}
			c.done <- a
		}
	}
}

// update sends one acquire update, starting the lock when it is not running, and waits for
// its answers.
func (t *Temporal) update(lock, key string, reqs []contract.LockRequest) ([]contract.LockNotice, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A running lock takes a plain update, cheaper for the server than update-with-start.
	h, err := t.Locks.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: lock, UpdateName: contract.UpdateLockAcquire, Args: []any{reqs},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var answers []contract.LockNotice
	if err == nil {
		if err = h.Get(ctx, &answers); err == nil {
			return checkAnswers(lock, reqs, answers)
		}
	}
	// Not running, or ended or continued as new under the update: update-with-start. A
	// request the lock did take already is answered again as a repeat (by its ticket).
	start := t.Locks.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: lock, TaskQueue: t.TaskQueue, StaticSummary: "Lock of " + key,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, contract.LockWorkflow, contract.LockState{Key: key})
	h, err = t.Locks.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: lock, UpdateName: contract.UpdateLockAcquire, Args: []any{reqs},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err == nil {
		err = h.Get(ctx, &answers)
	}
	if err != nil {
		return nil, fmt.Errorf("queue %d request(s) with lock %s: %w", len(reqs), lock, err)
	}
	return checkAnswers(lock, reqs, answers)
}

// checkAnswers returns a lock's answers, one per request.
func checkAnswers(lock string, reqs []contract.LockRequest, answers []contract.LockNotice) ([]contract.LockNotice, error) {
	if len(answers) != len(reqs) {
		return nil, fmt.Errorf("queue %d request(s) with lock %s: %d answers", len(reqs), lock, len(answers))
	}
	return answers, nil
}

// Release hands a ticket back without waiting for the lock to hear it: the stage that
// releases is about to end, and its end should not wait on the lock. The signal is retried
// for a while; should it never arrive (this worker dies first), the lock releases the ticket
// itself at its next check of the owner (LockRequest.Check).
func (t *Temporal) Release(_ context.Context, tk contract.LockTicket) error {
	go func() {
		wait := 100 * time.Millisecond
		for deadline := time.Now().Add(releaseRetries); ; wait = min(2*wait, 5*time.Second) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := t.Locks.SignalWorkflow(ctx, tk.Lock, "", contract.SignalLockRelease, tk.Ticket)
			cancel()
			var nf *serviceerror.NotFound
			if err == nil || errors.As(err, &nf) { // a lock that is not running holds nothing
				return
			}
			if time.Now().Add(wait).After(deadline) {
				if t.Log != nil {
					t.Log.Warn("could not release a lock ticket; the lock releases it at its next check of the owner",
						zap.String("lock", tk.Lock), zap.String("ticket", tk.Ticket), zap.Error(err))
				}
				return
			}
			time.Sleep(wait)
		}
	}()
	return nil
}

// releaseRetries is how long a release is retried before the lock's own check is left to it.
const releaseRetries = 2 * time.Minute

// notifyAtOnce bounds the signals Notify sends at the same time.
const notifyAtOnce = 16

// Notify delivers a lock's notices and reports for each whether its workflow has closed (it
// will never take the lock). Notices to different workflows go out concurrently; one workflow
// may get two in either order (its stage keeps the grant whatever comes after).
func (t *Temporal) Notify(ctx context.Context, ds []contract.LockDelivery) ([]bool, error) {
	closed := make([]bool, len(ds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(notifyAtOnce)
	for i, d := range ds {
		g.Go(func() error {
			err := t.Pipelines.SignalWorkflow(gctx, d.To.ID, d.To.RunID, contract.SignalLockNotice, d.Notice)
			var nf *serviceerror.NotFound
			switch {
			case errors.As(err, &nf):
				closed[i] = true
			case err != nil:
				return fmt.Errorf("tell %s of lock %s: %w", d.To.ID, d.Notice.Lock, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return closed, nil
}

// OwnerClosed tells whether a ticket's owner has closed; one whose history is gone closed
// long ago.
func (t *Temporal) OwnerClosed(ctx context.Context, w contract.WorkflowRef) (bool, error) {
	d, err := t.Pipelines.DescribeWorkflowExecution(ctx, w.ID, w.RunID)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe %s: %w", w.ID, err)
	}
	return d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
