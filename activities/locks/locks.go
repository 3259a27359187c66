// Package locks carries the messages between lock workflows (activities.LockWorkflow, one per
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
	"golang.org/x/sync/errgroup"

	"github.com/gantry-cd/gantry/activities"
)

// Temporal runs the lock activities.
type Temporal struct {
	// Locks is the client of the lock workflows' namespace, Pipelines that of the stages.
	Locks, Pipelines client.Client
	// TaskQueue is the queue the lock workflows run on (the sequence queue).
	TaskQueue string
	// Check is how often a lock makes sure its holder runs (0: activities.DefaultLockCheck).
	Check time.Duration

	mu      sync.Mutex
	pending map[string][]*acquireCall // requests not sent yet, by lock
}

// acquireCall is one Acquire waiting for the signal that carries its request.
type acquireCall struct {
	r    activities.LockRequest
	done chan error
}

// maxRequestsPerSignal bounds one acquire signal (a request is a few hundred bytes).
const maxRequestsPerSignal = 500

// Acquire queues a request with its lock, starting the lock workflow when it is not running.
// The requests of this process for one lock that arrive while a signal to it is on its way go
// together in the next: a lock takes one signal at a time, and a burst of a thousand stages
// would otherwise queue a thousand signals on it.
func (t *Temporal) Acquire(ctx context.Context, r activities.LockRequest) error {
	if r.Check == 0 {
		r.Check = t.Check
	}
	c := &acquireCall{r: r, done: make(chan error, 1)}
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
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send signals a lock the requests pending for it, again while more arrived meanwhile.
func (t *Temporal) send(lock, key string) {
	for {
		t.mu.Lock()
		calls := t.pending[lock]
		if len(calls) == 0 {
			delete(t.pending, lock)
			t.mu.Unlock()
			return
		}
		calls = calls[:min(len(calls), maxRequestsPerSignal)]
		t.pending[lock] = t.pending[lock][len(calls):]
		t.mu.Unlock()
		reqs := make([]activities.LockRequest, len(calls))
		for i, c := range calls {
			reqs[i] = c.r
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := t.Locks.SignalWithStartWorkflow(ctx, lock, activities.SignalLockAcquire, reqs,
			client.StartWorkflowOptions{ID: lock, TaskQueue: t.TaskQueue, StaticSummary: "Lock of " + key},
			activities.LockWorkflow, activities.LockState{Key: key})
		cancel()
		if err != nil {
			err = fmt.Errorf("queue %d request(s) with lock %s: %w", len(reqs), lock, err)
		}
		for _, c := range calls {
			c.done <- err
		}
	}
}

// Release hands a ticket back. A lock that is not running holds nothing.
func (t *Temporal) Release(ctx context.Context, tk activities.LockTicket) error {
	err := t.Locks.SignalWorkflow(ctx, tk.Lock, "", activities.SignalLockRelease, tk.Ticket)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("release ticket %s of lock %s: %w", tk.Ticket, tk.Lock, err)
	}
	return nil
}

// notifyAtOnce bounds the signals Notify sends at the same time.
const notifyAtOnce = 16

// Notify delivers a lock's notices and reports for each whether its workflow has closed (it
// will never take the lock). Notices to different workflows go out concurrently; one workflow
// may get two in either order (its stage keeps the grant whatever comes after).
func (t *Temporal) Notify(ctx context.Context, ds []activities.LockDelivery) ([]bool, error) {
	closed := make([]bool, len(ds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(notifyAtOnce)
	for i, d := range ds {
		g.Go(func() error {
			err := t.Pipelines.SignalWorkflow(gctx, d.To.ID, d.To.RunID, activities.SignalLockNotice, d.Notice)
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
func (t *Temporal) OwnerClosed(ctx context.Context, w activities.WorkflowRef) (bool, error) {
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
