package remote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/plan"
)

// Git is what the reader needs of a Git client (activities/gitstore's Fetcher): a branch's
// head in one call, and a commit's YAML files, fetched once per repository and commit.
type Git interface {
	Head(ctx context.Context, st *plan.GitStore) (string, error)
	Snapshot(ctx context.Context, st *plan.GitStore) (dir, commit string, err error)
}

// Reader gathers a run's files from Git.
type Reader struct {
	Registry *Registry
	Git      Git
	// Connector resolves a connectorRef to the Git connector that reaches its repository.
	Connector func(ref string) (plan.GitConnector, error)
	// Attempts is how often a Git call that could not reach the server is tried (default 3).
	Attempts int
	// Backoff is the first wait between attempts (default 500 ms), doubled each time.
	Backoff time.Duration

	// heads remembers, per entry and branch read, the repositories and branches its last read
	// needed, so that the next read asks for all their heads at once.
	heads sync.Map // string → []plan.GitStore
}

// Request is what a start names.
type Request struct {
	Pipeline string
	// Branch (default: the pipeline's default branch) or Commit (a commit of that branch, or
	// of any branch) selects what is read from the pipeline's repository.
	Branch, Commit string
	// InputSets are identifiers of registered input sets, applied in order.
	InputSets []string
	// Only is an entry of any kind read on its own (with what it refers to), for a
	// registration that is not yet in the registry.
	Only *Entry
}

// Error is a start refused because of Git: the API answers with Status.
type Error struct {
	Status int
	Code   string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func refused(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Workspace is the files of one start, laid out for the loader: every file in Dir, named by
// its kind and identifier. Close removes it.
type Workspace struct {
	Dir       string
	Root      string   // the file of the entry read (the pipeline of a start)
	Pipeline  string   // the pipeline file
	InputSets []string // the input set files, in the request's order
	Sources   []plan.Source
	names     map[string]string // workspace file → repo@commit:path
}

// Close removes the workspace.
func (w *Workspace) Close() error { return os.RemoveAll(w.Dir) }

// Name is how diagnostics name a workspace file: its repository, commit and path.
func (w *Workspace) Name(file string) string {
	if n, ok := w.names[file]; ok {
		return n
	}
	return file
}

// Rename names the workspace files of diagnostics by repository, commit and path.
func (w *Workspace) Rename(l diag.List) diag.List {
	out := make(diag.List, len(l))
	for i, d := range l {
		d.Pos.File = w.Name(d.Pos.File)
		out[i] = d
	}
	return out
}

// RenameSources keys file texts by the names Rename gives, for caret snippets.
func (w *Workspace) RenameSources(s diag.Sources) diag.Sources {
	out := diag.Sources{}
	for k, v := range s {
		out[w.Name(k)] = v
	}
	return out
}

// Identify returns the kind and identifier of an entity file ("" when it is none, "unparsed"
// when it is not YAML).
func Identify(src []byte) (kind, id string) {
	f, d := pipeline.ParseYAML("remote", src)
	if d.HasErrors() {
		return "unparsed", ""
	}
	if f.Root == nil || len(f.Root.Content) < 2 {
		return "", ""
	}
	key := f.Root.Content[0].Value
	for k, roots := range rootKeys {
		if slices.Contains(roots, key) {
			if n := pipeline.Field(f.Root.Content[1], "identifier"); n != nil {
				id = n.Value
			}
			return k, id
		}
	}
	return "", ""
}

// maxRounds bounds how deep references are followed (a template linking a template linking...).
const maxRounds = 16

// reading is one Read in progress.
type reading struct {
	r      *Reader
	ws     *Workspace
	pins   map[string]string // repository URL and branch → commit
	snaps  map[string]string // repository URL and commit → snapshot folder
	added  map[string]bool   // entry keys in the workspace
	conns  map[string]plan.GitConnector
	stores map[string]plan.GitStore // pin → the store whose branch it pins
	pipe   Entry
	repo   string // the pipeline's repository URL
	branch string
}

// Read gathers the pipeline of req, the input sets it names and the registered templates and
// entities it refers to (following references from file to file): every file of one repository
// and branch at one commit, the pipeline's repository at the commit asked for. Entities in the
// pipeline's repository are read at the pipeline's branch, others at their default branch (a
// template link's gitBranch, when it names one). Failures are *Error.
func (r *Reader) Read(ctx context.Context, req Request) (*Workspace, error) {
	pe, ok := Entry{}, false
	if req.Only != nil {
		pe, ok = *req.Only, true
	} else {
		pe, ok = r.Registry.Find(KindPipeline, req.Pipeline)
	}
	if !ok {
		return nil, refused(http.StatusNotFound, "not-found", "no remote pipeline %s is registered (gantry git list)", req.Pipeline)
	}
	dir, err := os.MkdirTemp("", "gantry-remote-*")
	if err != nil {
		return nil, err
	}
	rd := &reading{r: r, ws: &Workspace{Dir: dir, names: map[string]string{}}, pins: map[string]string{}, snaps: map[string]string{}, added: map[string]bool{}, conns: map[string]plan.GitConnector{}, stores: map[string]plan.GitStore{}, pipe: pe}
	ws, err := rd.read(ctx, req)
	if err != nil {
		_ = rd.ws.Close()
		return nil, err
	}
	return ws, nil
}

func (rd *reading) read(ctx context.Context, req Request) (*Workspace, error) {
	pe := rd.pipe
	rd.branch = req.Branch
	if rd.branch == "" {
		rd.branch = pe.Branch
	}
	st, err := rd.store(pe, rd.branch)
	if err != nil {
		return nil, err
	}
	rd.repo = st.RepoURL()
	if req.Commit != "" {
		rd.pins[rd.repo+"\x00"+rd.branch] = req.Commit
	}
	recent := pe.Key() + "\x00" + rd.branch
	rd.prefetch(ctx, recent)
	defer func() {
		list := make([]plan.GitStore, 0, len(rd.stores))
		for _, st := range rd.stores {
			list = append(list, st)
		}
		rd.r.heads.Store(recent, list)
	}()
	file, text, err := rd.add(ctx, pe, rd.branch)
	if err != nil {
		return nil, err
	}
	switch pe.Kind {
	case KindPipeline:
		rd.ws.Pipeline = file
	case KindInputSet:
		rd.ws.InputSets = append(rd.ws.InputSets, file)
	}
	rd.ws.Root = file
	queue := [][]byte{text}
	for _, id := range req.InputSets {
		e, ok := rd.r.Registry.Find(KindInputSet, id)
		if !ok {
			return nil, refused(http.StatusNotFound, "not-found", "no remote input set %s is registered (gantry git list)", id)
		}
		file, text, err := rd.add(ctx, e, rd.branchOf(e, ""))
		if err != nil {
			return nil, err
		}
		rd.ws.InputSets = append(rd.ws.InputSets, file)
		queue = append(queue, text)
	}
	for round := 0; len(queue) > 0 && round < maxRounds; round++ {
		var next [][]byte
		for _, text := range queue {
			for _, ref := range scanRefs(text) {
				for _, e := range rd.r.matching(ref) {
					if rd.added[e.Key()] {
						continue
					}
					_, t, err := rd.add(ctx, e, rd.branchOf(e, ref.gitBranch))
					if err != nil {
						return nil, err
					}
					next = append(next, t)
				}
			}
		}
		queue = next
	}
	return rd.ws, nil
}

// prefetch asks, all at once, for the heads of the branches the entry's last read needed (a
// start reads the same repositories as the one before it, one call each, in parallel rather
// than one after the other). A failure is left to the read, which reports it in place.
func (rd *reading) prefetch(ctx context.Context, recent string) {
	v, ok := rd.r.heads.Load(recent)
	if !ok {
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	heads := map[string]string{}
	for _, st := range v.([]plan.GitStore) {
		pin := st.RepoURL() + "\x00" + st.Branch
		if _, pinned := rd.pins[pin]; pinned {
			continue
		}
		wg.Add(1)
		go func(st plan.GitStore) {
			defer wg.Done()
			if commit, err := rd.r.Git.Head(ctx, &st); err == nil {
				mu.Lock()
				heads[pin] = commit
				mu.Unlock()
			}
		}(st)
	}
	wg.Wait()
	maps.Copy(rd.pins, heads)
}

// branchOf is the branch an entry is read at: the pipeline's in the pipeline's repository,
// else the link's gitBranch or the entry's default branch.
func (rd *reading) branchOf(e Entry, gitBranch string) string {
	if gitBranch != "" && !strings.Contains(gitBranch, "<+") {
		return gitBranch
	}
	if st, err := rd.store(e, e.Branch); err == nil && st.RepoURL() == rd.repo {
		return rd.branch
	}
	return e.Branch
}

// store is the Git store of an entry's repository at a branch.
func (rd *reading) store(e Entry, branch string) (*plan.GitStore, error) {
	conn, ok := rd.conns[e.ConnectorRef]
	if !ok {
		var err error
		if conn, err = rd.r.Connector(e.ConnectorRef); err != nil {
			return nil, refused(http.StatusUnprocessableEntity, "git-connector", "%s %s: %v", e.Kind, e.Identifier, err)
		}
		rd.conns[e.ConnectorRef] = conn
	}
	return &plan.GitStore{Type: conn.Type, Connector: conn, RepoName: e.RepoName, Branch: branch}, nil
}

// add copies an entry's file at a branch into the workspace and records its source.
func (rd *reading) add(ctx context.Context, e Entry, branch string) (string, []byte, error) {
	rd.added[e.Key()] = true
	st, snap, err := rd.snapshot(ctx, e, branch)
	if err != nil {
		return "", nil, err
	}
	commit := st.Commit
	src, err := os.ReadFile(filepath.Join(snap, "files", filepath.FromSlash(e.FilePath)))
	if err != nil {
		return "", nil, refused(http.StatusNotFound, "git-not-found", "%s %s: %s has no file %s at %s (branch %s)", e.Kind, e.Identifier, st.RepoDisplay(), e.FilePath, short(commit), branch)
	}
	where := fmt.Sprintf("%s at %s (branch %s)", e.FilePath, short(commit), branch)
	// A file that does not parse is left to the loader, which reports where.
	if kind, id := Identify(src); kind != "unparsed" && (kind != e.Kind || id != e.Identifier) {
		got := "no entity"
		if kind != "" {
			got = kind + " " + id
		}
		return "", nil, refused(http.StatusUnprocessableEntity, "git-mismatch", "%s: %s %s is registered at this file, but it holds %s", where, e.Kind, e.Identifier, got)
	}
	name := filepath.Join(rd.ws.Dir, e.Kind+"-"+e.Identifier+path.Ext(e.FilePath))
	if err := os.WriteFile(name, src, 0o600); err != nil {
		return "", nil, err
	}
	rd.ws.names[name] = fmt.Sprintf("%s@%s:%s", st.Repo(), short(commit), e.FilePath)
	rd.ws.Sources = append(rd.ws.Sources, entrySource(e, st))
	return name, src, nil
}

// snapshot is the snapshot of an entry's repository at a branch, at the commit this reading
// pins the branch to (its head, asked for once); the store returned carries the full commit.
func (rd *reading) snapshot(ctx context.Context, e Entry, branch string) (*plan.GitStore, string, error) {
	st, err := rd.store(e, branch)
	if err != nil {
		return nil, "", err
	}
	url := st.RepoURL()
	pin := url + "\x00" + branch
	rd.stores[pin] = *st
	commit, ok := rd.pins[pin]
	if !ok {
		if err := rd.r.retry(ctx, func() (err error) { commit, err = rd.r.Git.Head(ctx, st); return err }); err != nil {
			return nil, "", gitRefused(err, e, branch, "")
		}
		rd.pins[pin] = commit
	}
	st.Commit = commit
	snap, ok := rd.snaps[url+"\x00"+commit]
	if !ok {
		var full string
		if err := rd.r.retry(ctx, func() (err error) { snap, full, err = rd.r.Git.Snapshot(ctx, st); return err }); err != nil {
			return nil, "", gitRefused(err, e, branch, commit)
		}
		// An abbreviated commit is recorded in full, as every later read of the run uses it.
		rd.snaps[url+"\x00"+commit], rd.snaps[url+"\x00"+full], rd.pins[pin] = snap, snap, full
		st.Commit = full
	}
	return st, snap, nil
}

func entrySource(e Entry, st *plan.GitStore) plan.Source {
	return plan.Source{Kind: e.Kind, Identifier: e.Identifier, Connector: e.ConnectorRef, Repo: st.Repo(),
		URL: st.RepoDisplay(), FilePath: e.FilePath, Branch: st.Branch, Commit: st.Commit}
}

// retry runs fn until it succeeds, fails for a reason other than reaching the server, or has
// been tried Attempts times.
func (r *Reader) retry(ctx context.Context, fn func() error) error {
	attempts, wait := r.Attempts, r.Backoff
	if attempts <= 0 {
		attempts = 3
	}
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	var err error
	for i := 0; i < attempts; i++ {
		if err = fn(); err == nil || contract.Classify(err).Category != contract.Connectivity {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
	return err
}

// gitRefused turns a Git failure into the refusal of the start.
func gitRefused(err error, e Entry, branch, commit string) *Error {
	what := fmt.Sprintf("%s %s (branch %s", e.Kind, e.Identifier, branch)
	if commit != "" {
		what += ", commit " + short(commit)
	}
	what += ")"
	f := contract.Classify(err)
	switch f.Category {
	case contract.Authentication:
		return refused(http.StatusFailedDependency, "git-credentials", "%s: %s; check connector %s and its secrets", what, f.Message, e.ConnectorRef)
	case contract.Verification:
		return refused(http.StatusNotFound, "git-not-found", "%s: %s", what, f.Message)
	case contract.Connectivity:
		return refused(http.StatusBadGateway, "git-unreachable", "%s: %s (tried 3 times)", what, f.Message)
	}
	var gerr *Error
	if errors.As(err, &gerr) {
		return gerr
	}
	return refused(http.StatusBadGateway, "git", "%s: %s", what, f.Message)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// ref is an identifier a file refers to, with the kinds it may name.
type ref struct {
	kinds     []string
	id        string // "" matches every entry of the kinds (the reference is an expression)
	gitBranch string // a template link's branch
}

// refKeys are the keys whose values name entities, and the kinds they name.
var refKeys = map[string][]string{
	"templateRef": {KindTemplate}, "serviceRef": {KindService}, "environmentRef": {KindEnvironment},
	"connectorRef": {KindConnector}, "inputSetRefs": {KindInputSet},
}

// scanRefs finds the identifiers a YAML text refers to: template links (with their
// gitBranch), service, environment, connector and input set references, the identifiers
// of infrastructure definitions a stage deploys to, and the pipelines Pipeline stages chain
// with their input sets. Text that is not YAML refers to nothing.
func scanRefs(src []byte) []ref {
	f, d := pipeline.ParseYAML("remote", src)
	if f.Root == nil || d.HasErrors() {
		return nil
	}
	var out []ref
	var walk func(n *yaml.Node, under string)
	walk = func(n *yaml.Node, under string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i].Value, n.Content[i+1]
				if kinds, ok := refKeys[k]; ok {
					for _, id := range scalars(v) {
						r := ref{kinds: kinds, id: plan.LocalRef(id)}
						if strings.Contains(id, "<+") {
							r.id = ""
						}
						if k == "templateRef" {
							if b := pipeline.Field(n, "gitBranch"); b != nil {
								r.gitBranch = b.Value
							}
						}
						out = append(out, r)
					}
				}
				// A Pipeline stage's spec names the pipeline it chains and that one's input sets
				// (the chained identifier is never an expression: validation refuses it).
				if under == "spec" && (k == "pipeline" || k == "inputSetReferences") {
					kind := map[string]string{"pipeline": KindPipeline, "inputSetReferences": KindInputSet}[k]
					for _, id := range scalars(v) {
						if !strings.Contains(id, "<+") {
							out = append(out, ref{kinds: []string{kind}, id: id})
						}
					}
				}
				if under == "infrastructureDefinitions" || under == "infrastructureDefinition" {
					if k == "identifier" {
						out = append(out, ref{kinds: []string{KindInfrastructure}, id: v.Value})
					}
				}
				walk(v, k)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, under)
			}
		case yaml.ScalarNode:
			if (under == "infrastructureDefinitions" || under == "infrastructureDefinition") && strings.Contains(n.Value, "<+") {
				out = append(out, ref{kinds: []string{KindInfrastructure}})
			}
		}
	}
	walk(f.Root, "")
	return out
}

func scalars(n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "" {
			return []string{n.Value}
		}
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode && c.Value != "" {
				out = append(out, c.Value)
			}
		}
		return out
	}
	return nil
}

// matching are the registered entries a reference may name.
func (r *Reader) matching(rf ref) []Entry {
	var out []Entry
	for _, k := range rf.kinds {
		if rf.id != "" {
			if e, ok := r.Registry.Find(k, rf.id); ok {
				out = append(out, e)
			}
			continue
		}
		for _, e := range r.Registry.List() {
			if e.Kind == k {
				out = append(out, e)
			}
		}
	}
	return out
}
