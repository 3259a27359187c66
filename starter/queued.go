package starter

import (
	"context"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// queuePlace brings a QUEUED execution's place up to date from its lock's queue: the
// execution keeps the place it was last told, and a lock tells only the first few in line of
// every change (so ten thousand waiters are not sent ten thousand notices each).
func (s *Starter) queuePlace(ctx context.Context, executionID string, tree *workflows.Node) {
	r := tree.Resource
	if tree.Status != status.Queued || r == nil || r.Lock == "" {
		return
	}
	v, err := s.internal().QueryWorkflow(ctx, r.Lock, "", contract.QueryLock)
	if err != nil {
		return // the place it was told stands
	}
	var st contract.LockState
	if v.Get(&st) != nil {
		return
	}
	for i, q := range st.Queue {
		if q.Execution == executionID {
			r.Ahead = i
			return
		}
	}
}
