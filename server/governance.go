package server

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/remote"
)

// This file joins the policy libraries kept in Git to the server's own for every start's
// on-run decision, each library read at the head of its own branch.

// governed is a start's policy engine and the libraries read from Git for it.
type governed func() (*policies.Engine, []plan.Source, error)

// maxJoined bounds the joined engines kept (one per set of library commits).
const maxJoined = 8

// joinedEngines caches the engines joined from libraries at given commits: compiling and
// preparing a library costs far more than a start.
type joinedEngines struct {
	mu      sync.Mutex
	engines map[string]*policies.Engine
	order   []string
}

// governance is the engine a start is decided by: the server's own library joined with those
// registered in Git, and the sources read (recorded on the run). Without libraries in Git it
// is the server's own engine alone, and nothing is read. A library that cannot be read or
// does not compile refuses the start: governance fails closed.
func (s *Server) governance(ctx context.Context) (*policies.Engine, []plan.Source, error) {
	if s.rd == nil || !s.o.Remote.HasPolicies() {
		return s.o.Policies, nil, nil
	}
	libs, err := s.rd.Policies(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	eng, err := s.join(ctx, libs)
	if err != nil {
		return nil, nil, err
	}
	srcs := make([]plan.Source, len(libs))
	for i, l := range libs {
		srcs[i] = l.Source
	}
	return eng, srcs, nil
}

// governAsync starts reading the governance of a start, for the caller to wait on when it
// needs the engine (a start from Git reads its pipeline meanwhile).
func (s *Server) governAsync(ctx context.Context) governed {
	if s.rd == nil || !s.o.Remote.HasPolicies() {
		return func() (*policies.Engine, []plan.Source, error) { return s.o.Policies, nil, nil }
	}
	var eng *policies.Engine
	var srcs []plan.Source
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		eng, srcs, err = s.governance(ctx)
	}()
	return func() (*policies.Engine, []plan.Source, error) {
		<-done
		return eng, srcs, err
	}
}

// join is the server's engine joined with the libraries, compiled once per set of commits.
func (s *Server) join(ctx context.Context, libs []remote.PolicyLibrary) (*policies.Engine, error) {
	keys := make([]string, len(libs))
	for i, l := range libs {
		keys[i] = l.Source.URL + "\x00" + l.Source.FilePath + "\x00" + l.Source.Commit
	}
	key := strings.Join(keys, "\x01")
	j := &s.joined
	j.mu.Lock()
	defer j.mu.Unlock()
	if e, ok := j.engines[key]; ok {
		return e, nil
	}
	bundles := make([]policies.Bundle, 0, len(libs))
	for _, l := range libs {
		b, err := policies.ReadBundle(os.DirFS(l.Dir), l.Name)
		if err != nil {
			return nil, &remote.Error{Status: http.StatusUnprocessableEntity, Code: "invalid-policies", Msg: err.Error()}
		}
		bundles = append(bundles, b)
	}
	e, err := s.o.Policies.With(ctx, bundles...)
	if err != nil {
		return nil, &remote.Error{Status: http.StatusUnprocessableEntity, Code: "invalid-policies",
			Msg: "the policies kept in Git do not load, so nothing may start until they are mended: " + err.Error()}
	}
	if j.engines == nil {
		j.engines = map[string]*policies.Engine{}
	}
	if len(j.order) >= maxJoined {
		delete(j.engines, j.order[0])
		j.order = j.order[1:]
	}
	j.engines[key], j.order = e, append(j.order, key)
	return e, nil
}
