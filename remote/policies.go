package remote

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/gantry-cd/gantry/plan"
)

// PolicyLibrary is a policy library read from Git: its folder in a commit's snapshot.
type PolicyLibrary struct {
	Dir    string // the folder, in the Git cache (read it, never write)
	Name   string // repo@commit:path, how messages name its files
	Source plan.Source
}

// HasPolicies reports whether a policy library is registered.
func (r *Registry) HasPolicies() bool { return len(r.policies()) > 0 }

func (r *Registry) policies() []Entry {
	var out []Entry
	for _, e := range r.List() {
		if e.Kind == KindPolicy {
			out = append(out, e)
		}
	}
	return out
}

// Policies reads the registered policy libraries (only, when set, instead: a registration),
// each at the head of its own default branch. Never at a pipeline's branch: a change pushed to
// a branch may not change the policies that decide whether it runs.
func (r *Reader) Policies(ctx context.Context, only *Entry) ([]PolicyLibrary, error) {
	entries := r.Registry.policies()
	if only != nil {
		entries = []Entry{*only}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	rd := &reading{r: r, pins: map[string]string{}, snaps: map[string]string{}, added: map[string]bool{}, conns: map[string]plan.GitConnector{}, stores: map[string]plan.GitStore{}}
	const recent = "\x00policies"
	if only == nil {
		rd.prefetch(ctx, recent)
	}
	var out []PolicyLibrary
	for _, e := range entries {
		st, snap, err := rd.snapshot(ctx, e, e.Branch)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(snap, "files", filepath.FromSlash(e.FilePath))
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, refused(http.StatusNotFound, "git-not-found", "policy %s: %s has no folder %s at %s (branch %s)", e.Identifier, st.RepoDisplay(), e.FilePath, short(st.Commit), e.Branch)
		}
		out = append(out, PolicyLibrary{Dir: dir, Name: fmt.Sprintf("%s@%s:%s", st.Repo(), short(st.Commit), e.FilePath), Source: entrySource(e, st)})
	}
	if only == nil {
		list := make([]plan.GitStore, 0, len(rd.stores))
		for _, st := range rd.stores {
			list = append(list, st)
		}
		r.heads.Store(recent, list)
	}
	return out, nil
}
