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

// Notify delivers a lock's notices, in order, and reports for each whether its workflow has
// closed (it will never take the lock).
func (t *Temporal) Notify(ctx context.Context, ds []activities.LockDelivery) ([]bool, error) {
	closed := make([]bool, len(ds))
	for i, d := range ds {
		err := t.Pipelines.SignalWorkflow(ctx, d.To.ID, d.To.RunID, activities.SignalLockNotice, d.Notice)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			closed[i] = true
		case err != nil:
			return nil, fmt.Errorf("tell %s of lock %s: %w", d.To.ID, d.Notice.Lock, err)
		}
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
