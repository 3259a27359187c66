package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
)

// Lock bounds, variables so tests can shorten them.
var (
	// lockHistory is the history length past which a lock workflow continues as new.
	lockHistory = 4000
	// lockIdle is how long a lock nobody holds or waits for stays up before it completes
	// (the next acquire starts it again).
	lockIdle = 5 * time.Minute
)

// lockNoticed is how many queued tickets hear of each change of holder: those next in line.
// Further back a ticket keeps the holder and place it was told when it queued, which saves a
// thousand waiters a thousand signals each.
const lockNoticed = 5

// lockNoticeBatch is the most notices one LockNotify activity delivers.
const lockNoticeBatch = 100

// lockDoneKept is how many released tickets a lock remembers (see LockState.Done).
const lockDoneKept = 200

// Lock is the lock workflow of one key (contract.LockWorkflow): it grants one ticket at a
// time, in the order the requests arrived, and queues the others. A request is an update: a
// free lock is granted in its answer, which spares the requester a signal and a workflow task;
// a queued ticket hears of its grant by signal. A ticket is released by its holder (signal),
// or, when the holder's owner closed without releasing (terminated from the Temporal UI), by
// the lock itself, which checks its owner every LockRequest.Check.
func Lock(ctx workflow.Context, st contract.LockState) error {
	l := &lockRun{st: st}
	if err := workflow.SetQueryHandler(ctx, contract.QueryLock, func() (contract.LockState, error) { return l.st, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, contract.UpdateLockAcquire, func(ctx workflow.Context, rs []contract.LockRequest) ([]contract.LockNotice, error) {
		out := make([]contract.LockNotice, len(rs))
		for i, r := range rs {
			out[i] = l.acquire(ctx, r)
		}
		l.woken = true
		return out, nil
	}); err != nil {
		return err
	}
	release := workflow.GetSignalChannel(ctx, contract.SignalLockRelease)
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second},
	})
	if workflow.GetVersion(ctx, changeLockTick, workflow.DefaultVersion, 1) == 1 {
		return l.loop(ctx, lctx, release)
	}
	rounds := 0
	for {
		l.drain(release)
		l.settle(lctx)
		// An iteration adds at most about eight events (a workflow task, a timer started and
		// cancelled, messages, a marker): counting them bounds the history where the length
		// is not known (the SDK's test environment). Requests in flight go to the next run.
		if rounds++; workflow.GetInfo(ctx).GetCurrentHistoryLength() > lockHistory || rounds > lockHistory/8 {
			return workflow.NewContinueAsNewError(ctx, contract.LockWorkflow, l.st)
		}
		wait := l.checkEvery()
		if l.st.Holder == nil {
			wait = lockIdle
		}
		l.woken = false
		woken, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return l.woken || release.Len() > 0 })
		if err != nil {
			return err
		}
		if woken {
			continue
		}
		if l.st.Holder == nil {
			if len(l.st.Queue) == 0 && workflow.AllHandlersFinished(ctx) {
				return nil // idle: the next acquire starts a new run
			}
			continue
		}
		l.checkOwner(ctx, lctx)
	}
}

// loop is the lock's main loop since changeLockTick. One timer ticks every check interval,
// kept across requests and releases (restarting it for each cost two history events and a
// timer task per message); at a tick the lock checks its holder's owner, or, when nobody has
// held or asked for it for lockIdle, completes. Releases that arrive while notices go out are
// taken before the lock continues as new: a signal left unread in its channel would be lost.
func (l *lockRun) loop(ctx, lctx workflow.Context, release workflow.ReceiveChannel) error {
	rounds := 0
	var tick workflow.Future
	var due time.Time
	stopTick := func() {}
	active := workflow.Now(ctx)
	for {
		if l.drain(release) || l.woken {
			active = workflow.Now(ctx)
		}
		l.settle(lctx)
		if release.Len() > 0 {
			continue
		}
		// An iteration adds at most about six events (a workflow task, messages, a marker, a
		// tick): counting them bounds the history where the length is not known (the SDK's
		// test environment). Requests in flight go to the next run.
		if rounds++; workflow.GetInfo(ctx).GetCurrentHistoryLength() > lockHistory || rounds > lockHistory/6 {
			return workflow.NewContinueAsNewError(ctx, contract.LockWorkflow, l.st)
		}
		now := workflow.Now(ctx)
		wait := l.checkEvery()
		if l.st.Holder == nil {
			wait = max(wait, lockIdle-now.Sub(active))
		} else if tick != nil && due.After(now.Add(wait)) {
			stopTick() // idle until now: the new holder is checked sooner
			tick = nil
		}
		if tick == nil {
			tctx, cancel := workflow.WithCancel(ctx)
			tick, due, stopTick = workflow.NewTimer(tctx, wait), now.Add(wait), cancel
		}
		l.woken = false
		if err := workflow.Await(ctx, func() bool { return l.woken || release.Len() > 0 || tick.IsReady() }); err != nil {
			return err
		}
		if !tick.IsReady() {
			continue
		}
		tick = nil
		switch {
		case l.st.Holder != nil:
			l.checkOwner(ctx, lctx)
			l.checkOthers(ctx, lctx)
		case len(l.st.Queue) == 0 && workflow.Now(ctx).Sub(active) >= lockIdle && workflow.AllHandlersFinished(ctx):
			return nil // idle: the next acquire starts a new run
		}
	}
}

// checkOwner releases the holder's ticket when its owner has closed without releasing it
// (terminated from the Temporal UI).
func (l *lockRun) checkOwner(ctx, lctx workflow.Context) {
	var closed bool
	if err := workflow.ExecuteLocalActivity(lctx, contract.LockOwnerClosed, l.st.Holder.Owner).Get(ctx, &closed); err == nil && closed {
		l.release(l.st.Holder.Ticket)
	}
}

// checkOthers releases the tickets of the other holders of a lock with room for several
// (LockState.Capacity) whose owners have closed without releasing them.
func (l *lockRun) checkOthers(ctx, lctx workflow.Context) {
	for _, r := range slices.Clone(l.st.Others) {
		var closed bool
		if err := workflow.ExecuteLocalActivity(lctx, contract.LockOwnerClosed, r.Owner).Get(ctx, &closed); err == nil && closed {
			l.release(r.Ticket)
		}
	}
}

// free reports whether the lock has room for another holder.
func (l *lockRun) free() bool {
	if l.st.Holder == nil {
		return true
	}
	return 1+len(l.st.Others) < l.st.Capacity
}

// hold makes r a holder: the holder, or, on a lock with room for several, one of the others.
func (l *lockRun) hold(ctx workflow.Context, r contract.LockRequest) {
	if l.st.Holder == nil {
		l.st.Holder, l.st.Since = &r, workflow.Now(ctx)
	} else {
		l.st.Others = append(l.st.Others, r)
	}
	l.st.Grants++
}

// lockRun is a lock workflow's state and the notices it owes.
type lockRun struct {
	st    contract.LockState
	owed  []contract.LockDelivery
	moved bool // the holder changed since the last notices
	woken bool // a request arrived while the loop waited
}

func (l *lockRun) checkEvery() time.Duration {
	if l.st.Holder != nil && l.st.Holder.Check > 0 {
		return l.st.Holder.Check
	}
	return contract.DefaultLockCheck
}

// drain takes every release received so far; true when there was one.
func (l *lockRun) drain(release workflow.ReceiveChannel) bool {
	took := false
	for {
		var t string
		if !release.ReceiveAsync(&t) {
			return took
		}
		l.release(t)
		took = true
	}
}

// acquire queues a request and answers it: granted when the lock is free (or the holder asks
// again), otherwise who holds it and how many wait ahead.
func (l *lockRun) acquire(ctx workflow.Context, r contract.LockRequest) contract.LockNotice {
	if l.st.Key == "" {
		l.st.Key = r.Key
	}
	if r.Capacity > 0 { // the latest request's word: a limit that changes applies from now
		l.st.Capacity = r.Capacity
	}
	granted := contract.LockNotice{Lock: workflow.GetInfo(ctx).WorkflowExecution.ID, Ticket: r.Ticket, Granted: true}
	switch {
	case l.st.Holder != nil && l.st.Holder.Ticket == r.Ticket:
		// The holder asks again (a pipeline-scoped ticket from its next stage): granted.
		l.st.Holder.Notify = r.Notify
		return granted
	case slices.ContainsFunc(l.st.Others, func(o contract.LockRequest) bool { return o.Ticket == r.Ticket }):
		return granted
	case slices.Contains(l.st.Done, r.Ticket):
		// Released already: a request repeated after its release takes nothing.
		return contract.LockNotice{Lock: granted.Lock, Ticket: r.Ticket, Holder: l.holderName()}
	}
	if i := slices.IndexFunc(l.st.Queue, func(q contract.LockRequest) bool { return q.Ticket == r.Ticket }); i >= 0 {
		return contract.LockNotice{Lock: granted.Lock, Ticket: r.Ticket, Holder: l.holderName(), Ahead: i} // a repeat
	}
	if l.free() && len(l.st.Queue) == 0 {
		l.hold(ctx, r)
		return granted
	}
	l.st.Queue = append(l.st.Queue, r)
	return contract.LockNotice{Lock: granted.Lock, Ticket: r.Ticket, Holder: l.holderName(), Ahead: len(l.st.Queue) - 1}
}

// release hands back the holder's ticket or withdraws a queued one.
func (l *lockRun) release(ticket string) {
	if !slices.Contains(l.st.Done, ticket) {
		l.st.Done = append(l.st.Done, ticket)
		if len(l.st.Done) > lockDoneKept {
			l.st.Done = l.st.Done[len(l.st.Done)-lockDoneKept:]
		}
	}
	if l.st.Holder != nil && l.st.Holder.Ticket == ticket {
		l.st.Holder, l.moved = nil, true
		if len(l.st.Others) > 0 { // the longest-standing other holder stands first
			next := l.st.Others[0]
			l.st.Holder, l.st.Others = &next, l.st.Others[1:]
		}
		return
	}
	if i := slices.IndexFunc(l.st.Others, func(o contract.LockRequest) bool { return o.Ticket == ticket }); i >= 0 {
		l.st.Others, l.moved = slices.Delete(l.st.Others, i, i+1), true
		return
	}
	if i := slices.IndexFunc(l.st.Queue, func(q contract.LockRequest) bool { return q.Ticket == ticket }); i >= 0 {
		l.st.Queue = slices.Delete(l.st.Queue, i, i+1)
		l.moved = true
	}
}

func (l *lockRun) owe(to contract.WorkflowRef, n contract.LockNotice, ticket string) {
	n.Ticket = ticket
	l.owed = append(l.owed, contract.LockDelivery{To: to, Notice: n})
}

// settle grants the lock when it is free and delivers the notices owed, until nothing changes:
// a ticket whose workflow has closed is dropped (and, when it was just granted, the next one
// is granted).
func (l *lockRun) settle(ctx workflow.Context) {
	for {
		granted := false
		for l.free() && len(l.st.Queue) > 0 {
			next := l.st.Queue[0]
			l.st.Queue = l.st.Queue[1:]
			l.hold(ctx, next)
			l.moved, granted = true, true
			l.owe(next.Notify, contract.LockNotice{Granted: true}, next.Ticket)
		}
		// The waiters hear of a new holder once its grant is delivered: a holder whose
		// workflow closed is passed over first.
		if l.moved && !granted {
			if l.st.Holder != nil {
				for i, q := range l.st.Queue[:min(lockNoticed, len(l.st.Queue))] {
					l.owe(q.Notify, contract.LockNotice{Holder: l.holderName(), Ahead: i}, q.Ticket)
				}
			}
			l.moved = false
		}
		if len(l.owed) == 0 {
			return
		}
		owed := l.owed
		l.owed = nil
		// A burst of requests owes a notice each: sent in slices, each well within its
		// activity's timeout.
		for len(owed) > 0 {
			batch := owed[:min(lockNoticeBatch, len(owed))]
			owed = owed[len(batch):]
			for i := range batch {
				batch[i].Notice.Lock = workflow.GetInfo(ctx).WorkflowExecution.ID
			}
			var closed []bool
			if err := workflow.ExecuteLocalActivity(ctx, contract.LockNotify, batch).Get(ctx, &closed); err != nil {
				return // retried until it succeeds; an error here is a cancelled workflow
			}
			for i, gone := range closed {
				if gone {
					l.release(batch[i].Notice.Ticket)
				}
			}
		}
	}
}

// holderName is how a waiter reads who holds the lock ("" when nobody does).
func (l *lockRun) holderName() string {
	r := l.st.Holder
	if r == nil {
		return ""
	}
	name := r.Execution
	if r.Node != "" {
		name += " (" + r.Node + ")"
	}
	if n := len(l.st.Others); n > 0 {
		name += fmt.Sprintf(" and %d more", n)
	}
	return name
}
