package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/workflows"
)

// lockEnv runs a lock workflow with the notices it sends recorded; closed names the workflows
// that have ended (a notice to one comes back "closed"; an owner check says so).
type lockEnv struct {
	env     *testsuite.TestWorkflowEnvironment
	notices []string // "workflow: granted" or "workflow: holder+ahead", in order
	closed  map[string]bool
}

func newLockEnv(t *testing.T) *lockEnv {
	var s testsuite.WorkflowTestSuite
	l := &lockEnv{env: s.NewTestWorkflowEnvironment(), closed: map[string]bool{}}
	l.env.RegisterWorkflowWithOptions(workflows.Lock, workflow.RegisterOptions{Name: contract.LockWorkflow})
	l.env.RegisterActivityWithOptions(func(_ context.Context, ds []contract.LockDelivery) ([]bool, error) {
		out := make([]bool, len(ds))
		for i, d := range ds {
			out[i] = l.closed[d.To.ID]
			l.notices = append(l.notices, noticeText(d.To.ID, d.Notice))
		}
		return out, nil
	}, activity.RegisterOptions{Name: contract.LockNotify})
	l.env.RegisterActivityWithOptions(func(_ context.Context, w contract.WorkflowRef) (bool, error) {
		return l.closed[w.ID], nil
	}, activity.RegisterOptions{Name: contract.LockOwnerClosed})
	return l
}

func (l *lockEnv) at(d time.Duration, fn func()) { l.env.RegisterDelayedCallback(fn, d) }

// acquire sends who's request at d; its answer is recorded like a notice, with "(answer)".
func (l *lockEnv) acquire(d time.Duration, who string) { l.acquireOf(d, who, 0) }

// acquireOf is acquire on a lock with room for capacity tickets at once.
func (l *lockEnv) acquireOf(d time.Duration, who string, capacity int) {
	l.at(d, func() {
		l.env.UpdateWorkflow(contract.UpdateLockAcquire, fmt.Sprintf("%s@%s", who, d), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { l.notices = append(l.notices, who+": rejected "+err.Error()) },
			OnComplete: func(v any, err error) {
				ns, _ := v.([]contract.LockNotice)
				if err != nil || len(ns) != 1 {
					l.notices = append(l.notices, fmt.Sprintf("%s: answer %v %v", who, v, err))
					return
				}
				l.notices = append(l.notices, noticeText(who, ns[0])+" (answer)")
			},
		}, []contract.LockRequest{{Lock: "L", Key: "k", Ticket: who + "#t", Execution: who,
			Notify: contract.WorkflowRef{ID: who}, Owner: contract.WorkflowRef{ID: who}, Check: time.Minute, Capacity: capacity}})
	})
}

func noticeText(who string, n contract.LockNotice) string {
	if n.Granted {
		return who + ": granted"
	}
	return fmt.Sprintf("%s: %s+%d", who, n.Holder, n.Ahead)
}

func (l *lockEnv) release(d time.Duration, who string) {
	l.at(d, func() { l.env.SignalWorkflow(contract.SignalLockRelease, who+"#t") })
}

func (l *lockEnv) state(t *testing.T) contract.LockState {
	v, err := l.env.QueryWorkflow(contract.QueryLock)
	if err != nil {
		t.Fatal(err)
	}
	var st contract.LockState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// Tickets are granted one at a time in arrival order; a waiter hears who holds the lock and its
// place when it queues and, while among the next few, at each change; a withdrawn ticket
// leaves the queue; a repeated request changes nothing but hears its place again.
func TestLockGrantsInArrivalOrder(t *testing.T) {
	l := newLockEnv(t)
	l.acquire(time.Second, "a")
	l.acquire(2*time.Second, "b")
	l.acquire(3*time.Second, "c")
	l.acquire(4*time.Second, "d")
	l.acquire(5*time.Second, "b") // a repeat
	l.release(6*time.Second, "c") // withdrawn while queued
	l.release(7*time.Second, "a")
	var mid contract.LockState
	l.at(8*time.Second, func() { mid = l.state(t) })
	l.release(9*time.Second, "b")
	l.release(10*time.Second, "d")
	l.at(11*time.Second, func() {
		if st := l.state(t); st.Holder != nil || len(st.Queue) != 0 || st.Grants != 3 {
			t.Errorf("after all released: %+v", st)
		}
	})
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	if !l.env.IsWorkflowCompleted() || l.env.GetWorkflowError() != nil {
		t.Fatalf("the idle lock did not complete: %v", l.env.GetWorkflowError())
	}
	if mid.Holder == nil || mid.Holder.Execution != "b" || len(mid.Queue) != 1 || mid.Queue[0].Execution != "d" {
		t.Errorf("after a released: %+v", mid)
	}
	want := []string{
		"a: granted (answer)", "b: a+0 (answer)", "c: a+1 (answer)", "d: a+2 (answer)", "b: a+0 (answer)",
		// c withdrew: the next in line hear their new places.
		"b: a+0", "d: a+1",
		"b: granted", "d: b+0",
		"d: granted",
	}
	if !slices.Equal(l.notices, want) {
		t.Errorf("notices\n got %q\nwant %q", l.notices, want)
	}
}

// A holder whose owner closed without releasing (terminated) loses the lock at the next check;
// a waiter whose workflow closed is passed over when its turn comes.
func TestLockPassesOverClosedWorkflows(t *testing.T) {
	l := newLockEnv(t)
	l.acquire(time.Second, "a")
	l.acquire(2*time.Second, "b")
	l.acquire(3*time.Second, "c")
	l.at(4*time.Second, func() { l.closed["a"], l.closed["b"] = true, true })
	var st contract.LockState
	l.at(2*time.Minute, func() { st = l.state(t) })
	l.release(3*time.Minute, "c")
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	if st.Holder == nil || st.Holder.Execution != "c" || len(st.Queue) != 0 {
		t.Errorf("after a's owner closed: %+v", st)
	}
	// b's turn came after it closed: it was passed over, and c heard of nobody but a.
	want := []string{"a: granted (answer)", "b: a+0 (answer)", "c: a+1 (answer)", "b: granted", "c: granted"}
	if !slices.Equal(l.notices, want) {
		t.Errorf("notices\n got %q\nwant %q", l.notices, want)
	}
}

// A lock with room for two (a concurrency limit) grants two tickets at once and the next in
// arrival order as each is released, whichever holder releases; a holder whose owner closed
// without releasing is found at the check, whether it stands first or not.
func TestLockWithCapacity(t *testing.T) {
	l := newLockEnv(t)
	for i, who := range []string{"a", "b", "c", "d", "e"} {
		l.acquireOf(time.Duration(i+1)*time.Second, who, 2)
	}
	var mid contract.LockState
	l.at(6*time.Second, func() { mid = l.state(t) })
	l.release(7*time.Second, "b") // not the first holder
	l.release(8*time.Second, "a")
	l.at(9*time.Second, func() { l.closed["d"] = true }) // terminated while it holds
	var late contract.LockState
	l.at(2*time.Minute, func() { late = l.state(t) })
	l.release(3*time.Minute, "c")
	l.release(3*time.Minute+time.Second, "e")
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	if mid.Holder == nil || mid.Holder.Execution != "a" || len(mid.Others) != 1 || mid.Others[0].Execution != "b" || len(mid.Queue) != 3 {
		t.Errorf("with two held: %+v", mid)
	}
	if late.Holder == nil || late.Holder.Execution != "c" || len(late.Others) != 1 || late.Others[0].Execution != "e" || late.Grants != 5 {
		t.Errorf("after d's owner closed: %+v", late)
	}
	want := []string{
		"a: granted (answer)", "b: granted (answer)", "c: a and 1 more+0 (answer)", "d: a and 1 more+1 (answer)", "e: a and 1 more+2 (answer)",
		"c: granted", "d: a and 1 more+0", "e: a and 1 more+1",
		"d: granted", "e: c and 1 more+0",
		"e: granted",
	}
	if !slices.Equal(l.notices, want) {
		t.Errorf("notices\n got %q\nwant %q", l.notices, want)
	}
}

// The holder asking again (a pipeline-scoped key in a later stage) is granted at once.
func TestLockHolderAsksAgain(t *testing.T) {
	l := newLockEnv(t)
	l.acquire(time.Second, "a")
	l.acquire(2*time.Second, "b")
	l.acquire(3*time.Second, "a")
	l.release(4*time.Second, "a")
	l.release(5*time.Second, "b")
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	want := []string{"a: granted (answer)", "b: a+0 (answer)", "a: granted (answer)", "b: granted"}
	if !slices.Equal(l.notices, want) {
		t.Errorf("notices\n got %q\nwant %q", l.notices, want)
	}
}

// A lock whose history grows continues as new with its holder and queue.
func TestLockContinuesAsNew(t *testing.T) {
	defer workflows.SetLockHistory(60)()
	l := newLockEnv(t)
	for i := range 30 {
		l.acquire(time.Duration(i+1)*time.Second, fmt.Sprintf("w%02d", i))
	}
	for i := range 30 { // so that a lock that never continues as new ends too
		l.release(time.Duration(i+100)*time.Second, fmt.Sprintf("w%02d", i))
	}
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	err := l.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var st contract.LockState
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &st); err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.Execution != "w00" || len(st.Queue) == 0 || st.Queue[0].Execution != "w01" {
		t.Errorf("state carried over: holder %+v, %d queued", st.Holder, len(st.Queue))
	}
}

// A release that arrives while the lock's notices go out, just before it continues as new,
// is taken first: a signal left in the channel would be lost with the run, and the released
// holder would keep the lock until its owner check.
func TestLockContinuesAsNewAfterReleasesInFlight(t *testing.T) {
	defer workflows.SetLockHistory(18)() // continues as new at its fourth round
	l := newLockEnv(t)
	l.env.RegisterActivityWithOptions(func(_ context.Context, ds []contract.LockDelivery) ([]bool, error) {
		for _, d := range ds {
			l.notices = append(l.notices, noticeText(d.To.ID, d.Notice))
			if d.To.ID == "b" && d.Notice.Granted { // b is done before the notice's answer is back
				l.env.SignalWorkflow(contract.SignalLockRelease, "b#t")
			}
		}
		return make([]bool, len(ds)), nil
	}, activity.RegisterOptions{Name: contract.LockNotify})
	l.acquire(time.Second, "a")
	l.acquire(2*time.Second, "b")
	l.release(3*time.Second, "a")
	l.env.ExecuteWorkflow(contract.LockWorkflow, contract.LockState{Key: "k"})
	var can *workflow.ContinueAsNewError
	if err := l.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want continue-as-new, got %v", err)
	}
	var st contract.LockState
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &st); err != nil {
		t.Fatal(err)
	}
	if st.Holder != nil || len(st.Queue) != 0 || st.Grants != 2 {
		t.Errorf("carried over: holder %+v, %d queued, %d grants; want b's release taken", st.Holder, len(st.Queue), st.Grants)
	}
}
