package webui

import (
	"context"
	"sync"
	"time"

	"github.com/gantry-cd/gantry/workflows"
)

// sharedTrees lets the open log pages of one execution share their reads of its tree. Each
// page asks every half second while its step runs, and a read of a running execution is a
// describe and a query of the pipeline and of each running stage, answered by a worker: with
// twenty people watching a deployment that was eighty calls a second, now it is a few.
type sharedTrees struct {
	read  func(ctx context.Context, executionID string) (*workflows.Node, error)
	fresh time.Duration // how long a finished read answers later callers
	mu    sync.Mutex
	reads map[string]*treeRead // by execution ID
}

// treeRead is one read of an execution's tree, in flight until done is closed.
type treeRead struct {
	done chan struct{}
	at   time.Time // when it finished
	tree *workflows.Node
	err  error
}

// treeReadTimeout bounds a shared read, which outlives the caller that started it when that
// page goes away: the others still wait for it.
const treeReadTimeout = 30 * time.Second

// get answers the execution's tree from a read in flight or finished within fresh, else reads
// it. A failed read answers only those that waited for it. Callers must not change the tree.
func (s *sharedTrees) get(ctx context.Context, executionID string) (*workflows.Node, error) {
	s.mu.Lock()
	r := s.reads[executionID]
	if r == nil || s.stale(r, time.Now()) {
		r = &treeRead{done: make(chan struct{})}
		s.forgetStale()
		if s.reads == nil {
			s.reads = map[string]*treeRead{}
		}
		s.reads[executionID] = r
		s.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), treeReadTimeout)
		tree, err := s.read(rctx, executionID)
		cancel()
		s.mu.Lock()
		r.tree, r.err, r.at = tree, err, time.Now()
		s.mu.Unlock()
		close(r.done)
		return tree, err
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.tree, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stale tells whether a read may no longer answer: it finished with an error, or longer than
// fresh ago. s.mu is held.
func (s *sharedTrees) stale(r *treeRead, now time.Time) bool {
	if r.at.IsZero() {
		return false // in flight
	}
	return r.err != nil || now.Sub(r.at) > s.fresh
}

// forgetStale drops the reads no page can use any more, so executions nobody watches now take
// no memory. s.mu is held.
func (s *sharedTrees) forgetStale() {
	now := time.Now()
	for id, r := range s.reads {
		if s.stale(r, now) {
			delete(s.reads, id)
		}
	}
}
