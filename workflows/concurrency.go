package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

// LockConcurrency is the kind of the locks that bound how many executions run at once
// (Settings.MaxRunning, MaxRunningPerPipeline): locks with room for that many tickets.
const LockConcurrency = "concurrency"

// concurrencyLimit is one limit an execution takes a place under: a lock key and its room.
type concurrencyLimit struct {
	key      string
	capacity int
}

// concurrencyLimits are the limits an execution takes places under before it runs, in the
// order it takes them: its pipeline's first, so an execution waiting for its pipeline's turn
// holds no place of the server-wide limit.
func (p *pipelineRun) concurrencyLimits() []concurrencyLimit {
	if p.in.Parent != nil {
		return nil // a chained execution runs in its parent's place: waiting for another could never end
	}
	var out []concurrencyLimit
	if n := p.in.Settings.MaxRunningPerPipeline; n > 0 {
		out = append(out, concurrencyLimit{"pipeline/" + p.in.Plan.Identifier, n})
	}
	if n := p.in.Settings.MaxRunning; n > 0 {
		out = append(out, concurrencyLimit{"all", n})
	}
	return out
}

// takeTurn waits, QUEUED, until the execution has a place under every concurrency limit its
// settings name; false when it was aborted (or expired) while it waited. The places are held
// until the execution ends (see result), and a lock releases those of an execution that
// closed without handing them back.
func (p *pipelineRun) takeTurn(ctx workflow.Context) bool {
	limits := p.concurrencyLimits()
	if len(limits) == 0 || workflow.GetVersion(ctx, changeConcurrency, workflow.DefaultVersion, 1) < 1 {
		return true
	}
	info := workflow.GetInfo(ctx)
	self := contract.WorkflowRef{ID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	ticket := self.ID + "/" + self.RunID + "#run"
	notices := map[string][]contract.LockNotice{}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, contract.SignalLockNotice)
		for {
			var n contract.LockNotice
			ch.Receive(ctx, &n)
			if n.Ticket == ticket {
				notices[n.Lock] = append(notices[n.Lock], n)
			}
		}
	})
	for _, lim := range limits {
		id := LockID(LockConcurrency, lim.key)
		p.turns = append(p.turns, contract.LockTicket{Lock: id, Ticket: ticket})
		req := contract.LockRequest{Lock: id, Key: lim.key, Ticket: ticket, Execution: p.id, Notify: self, Owner: self, Capacity: lim.capacity}
		var answer contract.LockNotice
		if err := workflow.ExecuteLocalActivity(lockContext(ctx), contract.LockAcquire, req).Get(ctx, &answer); err != nil {
			return false // cancelled: only an abort or expiry stops the activity's retries
		}
		granted, seen := answer.Granted, 0
		last := answer
		since := workflow.Now(ctx)
		for !granted {
			for _, n := range notices[id][seen:] {
				last, granted = n, granted || n.Granted
			}
			seen = len(notices[id])
			if granted {
				break
			}
			p.tree.Status = status.Queued
			p.tree.Resource = &ResourceView{Kind: LockConcurrency, Key: lim.key, Lock: id, Holder: last.Holder, Ahead: last.Ahead}
			p.upsert(ctx, status.Queued)
			if err := workflow.Await(ctx, func() bool { return len(notices[id]) > seen || p.aborted || p.expired }); err != nil || p.aborted || p.expired {
				return false
			}
		}
		if p.tree.Resource != nil {
			p.tree.Notes = append(p.tree.Notes, fmt.Sprintf("queued %s for a place under the limit of %d running executions (%s)",
				workflow.Now(ctx).Sub(since).Round(time.Millisecond), lim.capacity, lim.key))
			p.tree.Resource = nil
		}
	}
	p.tree.Status = status.Running
	return true
}

// giveBackTurns hands the execution's places back (or withdraws its place in the queue).
func (p *pipelineRun) giveBackTurns(ctx workflow.Context) {
	for i := len(p.turns) - 1; i >= 0; i-- {
		releaseLock(ctx, p.turns[i])
	}
	p.turns = nil
}
