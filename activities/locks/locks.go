// Package locks carries the messages between lock workflows (activities.LockWorkflow, one per
// key, in the internal namespace) and the stages that wait for them (the pipelines'
// namespace): a workflow can signal only within its own namespace, so these activities do it
// through a client of each.
package locks

import (
	"context"
	"errors"
	"fmt"
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
}

// Acquire queues a request with its lock, starting the lock workflow when it is not running.
func (t *Temporal) Acquire(ctx context.Context, r activities.LockRequest) error {
	if r.Check == 0 {
		r.Check = t.Check
	}
	_, err := t.Locks.SignalWithStartWorkflow(ctx, r.Lock, activities.SignalLockAcquire, r,
		client.StartWorkflowOptions{ID: r.Lock, TaskQueue: t.TaskQueue,
			StaticSummary: "Lock of " + r.Key},
		activities.LockWorkflow, activities.LockState{Key: r.Key})
	if err != nil {
		return fmt.Errorf("queue ticket %s with lock %s: %w", r.Ticket, r.Lock, err)
	}
	return nil
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
