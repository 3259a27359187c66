package starter

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

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

// LockView is one key's lock as `gantry locks` shows it: its kind (queue, infrastructure), key,
// holders and the requests waiting, in order.
type LockView struct {
	Kind    string                 `json:"kind"`
	Key     string                 `json:"key"`
	Holders []contract.LockRequest `json:"holders"`
	Since   time.Time              `json:"since,omitzero"`
	Waiting []contract.LockRequest `json:"waiting"`
	Grants  int64                  `json:"grants"`
}

// Locks returns the locks whose workflows run now (a lock idle for five minutes has ended and
// holds nothing), by kind and key.
func (s *Starter) Locks(ctx context.Context) ([]LockView, error) {
	var out []LockView
	var token []byte
	for {
		resp, err := listVisibility(ctx, s.internal(), &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.LockWorkflow),
			PageSize:      200,
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list locks: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			v, err := s.internal().QueryWorkflow(ctx, id, "", contract.QueryLock)
			if err != nil {
				continue // ended meanwhile
			}
			var st contract.LockState
			if v.Get(&st) != nil {
				continue
			}
			kind := strings.TrimPrefix(id, "gantry-lock/")
			kind, _, _ = strings.Cut(kind, "/")
			lv := LockView{Kind: kind, Key: st.Key, Since: st.Since, Waiting: st.Queue, Grants: st.Grants, Holders: []contract.LockRequest{}}
			if st.Holder != nil {
				lv.Holders = append(append(lv.Holders, *st.Holder), st.Others...)
			}
			if lv.Waiting == nil {
				lv.Waiting = []contract.LockRequest{}
			}
			out = append(out, lv)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	slices.SortFunc(out, func(a, b LockView) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key)) })
	return out, nil
}
