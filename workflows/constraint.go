package workflows

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/stepspec"
)

// constraints are the stage's resource constraints and Queue steps: the lock tickets it holds.
type constraints struct {
	*stageRun
	held      map[string]*heldLock // this workflow's lock tickets, by lock ID
	inherited []HeldLock           // tickets its loop batches handed up
}

// changeResourceLocks: a Deployment stage holds its infrastructure's lock from its
// infrastructure phase to its end (a resource constraint), and Queue steps run.
const changeResourceLocks = "resource-locks"

// Kinds of locks, as ResourceView.Kind names them.
const (
	LockInfrastructure = "infrastructure"
	LockQueue          = "queue"
)

// LockID is the lock workflow's ID for a key of a kind. Keys of any length and alphabet fit:
// a long one is shortened, its hash keeping it apart.
func LockID(kind, key string) string {
	const keep = 200
	if len(key) > keep {
		sum := sha1.Sum([]byte(key))
		key = key[:keep] + "~" + hex.EncodeToString(sum[:8])
	}
	return "gantry-lock/" + kind + "/" + key
}

// ResourceView describes what a RESOURCE_WAITING stage or QUEUED step waits for.
type ResourceView struct {
	Kind string `json:"kind"` // LockInfrastructure or LockQueue
	Key  string `json:"key"`
	// Lock is the lock workflow (internal namespace) whose query answers the whole queue.
	Lock string `json:"lock"`
	// Holder is the execution (and node) holding the key, Ahead the tickets queued before
	// this one, as the lock last told (it tells the first few waiters of every change).
	Holder string `json:"holder,omitempty"`
	Ahead  int    `json:"ahead"`
}

// HeldLock is a ticket a stage (or a batch of its iterations) took, handed up in its result:
// a batch's to its stage, a stage's pipeline-scoped ones to the pipeline, which release them
// when their scope ends.
type HeldLock struct {
	contract.LockTicket
	Pipeline bool `json:"pipeline,omitempty"`
}

// heldLock is a ticket of this workflow: requested, waiting or granted.
type heldLock struct {
	ticket   contract.LockTicket
	pipeline bool
	granted  bool
	notice   contract.LockNotice
	notices  int // received so far
}

// holdInfrastructure takes the stage's infrastructure lock (spec: resource constraints): the
// key is the service, environment, connector and infrastructure, and a second stage deploying
// there waits, RESOURCE_WAITING, until the first ends. allowSimultaneousDeployments turns it
// off. false: the stage was aborted or expired while waiting.
func (s *constraints) holdInfrastructure(ctx workflow.Context) bool {
	d := s.in.Stage.Deploy
	if d == nil || d.Infra == nil || d.Infra.AllowSimultaneous || s.dep.key == "" {
		return true
	}
	if workflow.GetVersion(ctx, changeResourceLocks, workflow.DefaultVersion, 1) < 1 {
		return true
	}
	return s.acquireLock(ctx, s.tree, LockInfrastructure, s.dep.key, false, status.ResourceWaiting) == nil
}

// infrastructureKey is a deployment's constraint key, as people read it.
func infrastructureKey(service, env, connector, infra string) string {
	return strings.Join([]string{service, env, connector, infra}, "/")
}

// queueStep runs a Queue step: it waits, QUEUED, until it holds its key, which it keeps until
// its scope (the stage, or the whole pipeline) ends.
func (s *constraints) queueStep(ctx workflow.Context, t *Node, spec any, timeout time.Duration) *contract.Failure {
	sp, err := specOf[stepspec.QueueSpec](spec)
	if err != nil {
		return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Queue spec: %v", err)}
	}
	key := strings.TrimSpace(string(sp.Key))
	if key == "" {
		return &contract.Failure{Category: contract.Unknown, Message: "Queue key rendered empty: give `key` a value (or an expression that resolves to one)"}
	}
	scope := string(sp.Scope)
	if workflow.GetVersion(ctx, changeResourceLocks, workflow.DefaultVersion, 1) < 1 {
		return &contract.Failure{Category: contract.Unknown, Message: "Queue steps need a newer worker"}
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	expired := false
	workflow.Go(tctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, timeout) == nil {
			expired = true
			cancel()
		}
	})
	f := s.acquireLock(tctx, t, LockQueue, key, scope == "Pipeline", status.Queued)
	if expired {
		return &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("still queued for %q after the step's timeout of %s", key, timeout)}
	}
	return f
}

// unresolvedKey fails a Queue step whose key holds an expression that does not resolve:
// rendered as null, it would name a lock "null" that unrelated pipelines share. The failure
// names the expression and the missing path. (A barrier reference cannot be an expression.)
func unresolvedKey(ctx workflow.Context, n *plan.Node, scope *expressions.Scope, field string) *contract.Failure {
	m, _ := n.Spec.(map[string]any)
	raw, _ := m[field].(string)
	if !expressions.Has(raw) {
		return nil
	}
	_, err := expressions.Render(raw, expressions.Text, scope, expressions.Options{Unresolved: expressions.UnresolvedFail})
	if err == nil || workflow.GetVersion(ctx, changeResolvedKeys, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Queue key %s does not resolve (%v): a lock cannot be named by a missing value", raw, err)}
}

// acquireLock asks the lock of a key for this workflow's ticket and waits, showing waiting
// on t, until it is granted. The ticket is released when its scope ends, whatever happens
// before (see releaseLocks); a nil failure means it is held.
func (s *constraints) acquireLock(ctx workflow.Context, t *Node, kind, key string, pipelineScope bool, waiting status.Status) *contract.Failure {
	info := workflow.GetInfo(ctx)
	self := contract.WorkflowRef{ID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	owner := self
	if s.in.Batch != nil && info.ParentWorkflowExecution != nil { // a batch of the stage's iterations
		owner = contract.WorkflowRef{ID: info.ParentWorkflowExecution.ID, RunID: info.ParentWorkflowExecution.RunID}
	}
	ticket := owner.ID + "/" + owner.RunID + "#" + kind
	if pipelineScope {
		owner = contract.WorkflowRef{ID: s.in.ExecutionID}
		ticket = s.in.ExecutionID + "#pipeline"
	}
	id := LockID(kind, key)
	if h := s.held[id]; h != nil && h.granted && h.ticket.Ticket == ticket {
		return nil // this scope holds it already
	}
	h := &heldLock{ticket: contract.LockTicket{Lock: id, Ticket: ticket}, pipeline: pipelineScope}
	s.listenLocks(ctx)
	s.held[id] = h
	req := contract.LockRequest{Lock: id, Key: key, Ticket: ticket, Execution: s.in.ExecutionID, Node: t.Path, Notify: self, Owner: owner}
	var answer contract.LockNotice
	if err := workflow.ExecuteLocalActivity(lockContext(ctx), contract.LockAcquire, req).Get(ctx, &answer); err != nil {
		if ctx.Err() != nil {
			return &contract.Failure{Category: aborted, Message: "aborted"}
		}
		return &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("queue for %s %q: %v", kind, key, err)}
	}
	if !h.granted && h.notices == 0 { // a notice may have overtaken the answer
		h.notice, h.granted = answer, answer.Granted
		h.notices++
	}
	prev, since, shown := t.Status, workflow.Now(ctx), -1
	reported := false
	for !h.granted {
		if h.notices != shown {
			shown = h.notices
			t.Status = waiting
			t.Resource = &ResourceView{Kind: kind, Key: key, Lock: id, Holder: h.notice.Holder, Ahead: h.notice.Ahead}
			if !reported && workflow.GetVersion(ctx, changeReportQueued, workflow.DefaultVersion, 1) == 1 {
				// The pipeline shows the wait in its status, as lists read it.
				reported = true
				s.decisions.waitStatus[t.Path] = waiting
				s.decisions.reportWaiting(ctx)
			}
			s.publish(ctx)
		}
		if err := workflow.Await(ctx, func() bool { return h.granted || h.notices != shown }); err != nil {
			s.stopReportingWait(ctx, t, reported)
			return &contract.Failure{Category: aborted, Message: "aborted"}
		}
	}
	s.stopReportingWait(ctx, t, reported)
	if t.Resource != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("waited %s for %s %s (held by %s)",
			workflow.Now(ctx).Sub(since).Round(time.Millisecond), kind, key, t.Resource.Holder))
		t.Status, t.Resource = prev, nil
		s.publish(ctx)
	}
	return nil
}

// stopReportingWait tells the pipeline the node no longer waits for a lock, if it was told.
func (s *constraints) stopReportingWait(ctx workflow.Context, t *Node, reported bool) {
	if reported {
		delete(s.decisions.waitStatus, t.Path)
		s.decisions.reportWaiting(ctx)
	}
}

// listenLocks routes the locks' notices to this workflow's tickets (once per workflow).
func (s *constraints) listenLocks(ctx workflow.Context) {
	if s.held != nil {
		return
	}
	s.held = map[string]*heldLock{}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, contract.SignalLockNotice)
		for {
			var n contract.LockNotice
			ch.Receive(ctx, &n)
			h := s.held[n.Lock]
			if h == nil || h.ticket.Ticket != n.Ticket || h.granted {
				continue // a ticket given up on, or a notice overtaken by the grant
			}
			h.notice, h.granted = n, n.Granted
			h.notices++
		}
	})
}

// releaseLocks releases the tickets whose scope ends with this workflow, and returns those
// its parent releases: a batch's all (its stage's scope goes on), a stage's pipeline-scoped.
func (s *constraints) releaseLocks(ctx workflow.Context) []HeldLock {
	held := s.inherited
	for _, h := range s.held {
		held = append(held, HeldLock{LockTicket: h.ticket, Pipeline: h.pipeline})
	}
	if len(held) == 0 {
		return nil
	}
	// Deterministic order: map iteration is not.
	slices.SortFunc(held, func(a, b HeldLock) int { return cmp.Compare(a.Lock+a.Ticket, b.Lock+b.Ticket) })
	if s.in.Batch != nil {
		return held
	}
	var up []HeldLock
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, h := range held {
		if h.Pipeline {
			up = append(up, h)
			continue
		}
		releaseLock(dctx, h.LockTicket)
	}
	return up
}

// releaseLock hands a ticket back; a lock that cannot be reached releases it itself once it
// sees the owner closed.
func releaseLock(ctx workflow.Context, t contract.LockTicket) {
	_ = workflow.ExecuteLocalActivity(lockContext(ctx), contract.LockRelease, t).Get(ctx, nil)
}

// lockContext runs the lock activities: short calls to Temporal, retried while it is
// unreachable.
func lockContext(ctx workflow.Context) workflow.Context {
	// A lock takes its requests one at a time: under a burst a call may wait its turn for a
	// while, and retrying it early only adds to the burst.
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 30 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
		Summary:                "lock",
	})
}
