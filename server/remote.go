package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/validate"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/triggers/directory"
)

// This file serves the entities kept in Git: registering them (fetched and validated first),
// listing and removing them, and loading a remote pipeline for a start at one commit per
// repository.

// reader is the Git reader of the server's remote entities; nil without a registry.
func (s *Server) reader() *remote.Reader { return s.rd }

// gitConnector resolves a connectorRef among the connector files of the pipelines directory.
func (s *Server) gitConnector(ref string) (plan.GitConnector, error) {
	if s.o.PipelinesDir == "" {
		return plan.GitConnector{}, fmt.Errorf("connector %s: the server has no pipelines directory to hold connector files (--pipelines)", ref)
	}
	return entities.GitConnectorOf(s.connectors(), ref, s.o.PipelinesDir)
}

// connectors are the connector files of the pipelines directory, read again when its files
// change (every start asks: a catalog load per start would cost more than the Git call).
func (s *Server) connectors() map[string]*pipeline.File {
	fp := directory.Fingerprint(s.o.PipelinesDir)
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.conns == nil || fp != s.connFP {
		cat, _ := entities.Load([]string{s.o.PipelinesDir}, func(f *pipeline.File) diag.List { _, d := validate.File(f); return d })
		s.conns, s.connFP = cat.Connectors, fp
	}
	return s.conns
}

// loadRemote reads what req names from Git and loads it as opts ask, the local pipelines
// directory's entities and templates standing behind the remote ones. The result's
// diagnostics name files by repository, commit and path, and its plan records the sources.
// gov, when set, is the start's governance, read meanwhile: opts' policies are its engine.
// order, when set, orders the input sets read from Git (req's, in order) among the others;
// else they come first.
func (s *Server) loadRemote(ctx context.Context, req remote.Request, opts load.Options, gov governed, order func(fromGit []string) []string) (*load.Result, error) {
	rd := s.reader()
	if rd == nil {
		return nil, &remote.Error{Status: http.StatusNotFound, Code: "not-found", Msg: "the server keeps no remote entities (gantry server --remote-entities, gantry git import)"}
	}
	ws, err := rd.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	if s.o.PipelinesDir != "" {
		opts.EntityDirs = append(opts.EntityDirs, s.o.PipelinesDir)
		opts.PipelineDirs = append(opts.PipelineDirs, s.o.PipelinesDir)
		opts.TemplateDirs = append(opts.TemplateDirs, load.DefaultTemplateDirs(filepath.Join(s.o.PipelinesDir, "pipeline.yaml"))...)
	}
	opts.TemplateDirs = append(opts.TemplateDirs, s.o.TemplateDirs...)
	if order != nil {
		opts.InputSets = order(ws.InputSets)
	} else {
		opts.InputSets = append(append([]string(nil), ws.InputSets...), opts.InputSets...)
	}
	opts.TemplatesFromGit = map[string]bool{}
	for _, src := range ws.Sources {
		if src.Kind == remote.KindTemplate {
			opts.TemplatesFromGit[src.Identifier] = true
		}
	}
	var governedBy []plan.Source
	if gov != nil {
		if opts.Policies, governedBy, err = gov(); err != nil {
			return nil, err
		}
	}
	res, err := load.File(ws.Root, opts)
	if err != nil {
		return nil, err
	}
	res.Diags, res.Sources = ws.Rename(res.Diags), ws.RenameSources(res.Sources)
	if res.Plan != nil {
		res.Plan.File, res.Plan.Sources = ws.Name(ws.Root), append(ws.Sources, governedBy...)
	}
	return res, nil
}

// refuseRemote answers a Git refusal (or the loader's I/O error).
func refuseRemote(w http.ResponseWriter, err error) {
	var re *remote.Error
	if errors.As(err, &re) {
		fail(w, re.Status, re.Code, "%s", re.Msg)
		return
	}
	fail(w, http.StatusInternalServerError, "load", "%v", err)
}

// listRemote lists the registered remote entities.
func (s *Server) listRemote(w http.ResponseWriter, _ *http.Request, _ *identity.User) {
	list := []remote.Entry{}
	if s.o.Remote != nil {
		list = append(list, s.o.Remote.List()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"entities": list})
}

// registerRemote registers an entity kept in Git (it needs create): its file is fetched at the
// branch's head and validated with what it refers to; a file that does not load is a 422 with
// every diagnostic at its repository, commit and line.
func (s *Server) registerRemote(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var e remote.Entry
	if !decode(w, r, &e) {
		return
	}
	c := callOf(r)
	if err := e.Check(); err != nil {
		fail(w, http.StatusBadRequest, "bad-request", "%v", err)
		return
	}
	if err := c.dir.Authorize(u, identity.Create, identity.Resource{Pipeline: pipelineOf(e)}); err != nil {
		s.refuse(w, err)
		return
	}
	c.note.pipeline, c.note.detail = pipelineOf(e), fmt.Sprintf("%s %s from %s", e.Kind, e.Identifier, e.FilePath)
	// The file is validated with what it links (not run: a pipeline's runtime inputs stay open).
	if e.Kind == remote.KindPolicy {
		if !s.checkPolicyLibrary(w, r.Context(), e) {
			return
		}
		s.put(w, e)
		return
	}
	res, err := s.loadRemote(r.Context(), remote.Request{Only: &e}, load.Options{Strict: s.o.Strict, BuildInfra: s.o.BuildInfra}, nil, nil)
	if err != nil {
		refuseRemote(w, err)
		return
	}
	if !res.OK() {
		writeJSON(w, http.StatusUnprocessableEntity, Error{Code: "invalid-" + e.Kind,
			Message: e.Kind + " " + e.Identifier + " is invalid at that commit; nothing was registered", Details: details(res.Diags.Errors())})
		return
	}
	s.put(w, e)
}

// put keeps a registration checked already.
func (s *Server) put(w http.ResponseWriter, e remote.Entry) {
	if err := s.o.Remote.Put(e); err != nil {
		if errors.Is(err, remote.ErrDeclared) {
			fail(w, http.StatusConflict, "conflict", "%v", err)
			return
		}
		s.internal(w, "register", err)
		return
	}
	writeJSON(w, http.StatusCreated, e)
}

// checkPolicyLibrary reads a policy library at its branch's head and joins it to the server's
// own and the other libraries in Git, as every start would; one that does not load is a 422.
func (s *Server) checkPolicyLibrary(w http.ResponseWriter, ctx context.Context, e remote.Entry) bool {
	libs, err := s.rd.Policies(ctx, &e)
	if err == nil {
		var others []remote.PolicyLibrary
		if others, err = s.rd.Policies(ctx, nil); err == nil {
			for _, o := range others {
				if o.Source.Identifier != e.Identifier {
					libs = append(libs, o)
				}
			}
			_, err = s.join(ctx, libs)
		}
	}
	var re *remote.Error
	switch {
	case err == nil:
		return true
	case errors.As(err, &re) && re.Code == "invalid-policies":
		writeJSON(w, http.StatusUnprocessableEntity, Error{Code: "invalid-policy",
			Message: "policy library " + e.Identifier + " does not load at that commit; nothing was registered", Details: strings.Split(re.Msg, "\n")})
	default:
		refuseRemote(w, err)
	}
	return false
}

// removeRemote unregisters an entity (it needs create).
func (s *Server) removeRemote(w http.ResponseWriter, r *http.Request, u *identity.User) {
	e := remote.Entry{Kind: r.PathValue("kind"), Identifier: r.PathValue("identifier")}
	c := callOf(r)
	c.note.pipeline, c.note.detail = pipelineOf(e), e.Kind+" "+e.Identifier
	if err := c.dir.Authorize(u, identity.Create, identity.Resource{Pipeline: pipelineOf(e)}); err != nil {
		s.refuse(w, err)
		return
	}
	if s.o.Remote == nil {
		fail(w, http.StatusNotFound, "not-found", "no remote %s %s is registered", e.Kind, e.Identifier)
		return
	}
	ok, err := s.o.Remote.Remove(e.Kind, e.Identifier)
	switch {
	case errors.Is(err, remote.ErrDeclared):
		fail(w, http.StatusConflict, "conflict", "%v", err)
	case err != nil:
		s.internal(w, "unregister", err)
	case !ok:
		fail(w, http.StatusNotFound, "not-found", "no remote %s %s is registered", e.Kind, e.Identifier)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// pipelineOf is the pipeline roles judge a registration by: a pipeline's identifier, "" (any
// pipeline pattern) for the entities pipelines share.
func pipelineOf(e remote.Entry) string {
	if e.Kind == remote.KindPipeline {
		return e.Identifier
	}
	return ""
}

func details(l diag.List) []string {
	out := make([]string, 0, len(l))
	for _, d := range l {
		out = append(out, d.String())
	}
	return out
}

// triggeredRemote loads a trigger's remote pipeline (directory.Registry's Remote): at the
// branch its pipelineBranchName renders to, and, when that is the branch the event pushed to
// (a pull request's source branch), at exactly the event's commit.
func (s *Server) triggeredRemote(t *pipeline.Trigger, event map[string]any, inputSets []directory.InputSetRef, opts load.Options) (*load.Result, error) {
	if _, ok := s.o.Remote.Find(remote.KindPipeline, t.PipelineIdentifier); !ok {
		return nil, fmt.Errorf("trigger %s starts pipeline %s, which is neither in %s nor registered as a remote pipeline (gantry git list)", t.Identifier, t.PipelineIdentifier, s.o.PipelinesDir)
	}
	branch, commit, err := triggerRef(t, event)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := remote.Request{Pipeline: t.PipelineIdentifier, Branch: branch, Commit: commit}
	for _, ref := range inputSets {
		if ref.File == "" {
			req.InputSets = append(req.InputSets, ref.ID)
		}
	}
	// The trigger's order is kept, files of the directory and sets read from Git interleaved.
	order := func(fromGit []string) []string {
		var out []string
		for _, ref := range inputSets {
			if ref.File != "" {
				out = append(out, ref.File)
			} else if len(fromGit) > 0 {
				out, fromGit = append(out, fromGit[0]), fromGit[1:]
			}
		}
		return out
	}
	return s.loadRemote(ctx, req, opts, nil, order)
}

// triggerRef is the branch and commit a trigger's start reads; an empty branch is the
// pipeline's default branch, an empty commit the branch's head.
func triggerRef(t *pipeline.Trigger, event map[string]any) (branch, commit string, err error) {
	branch = strings.TrimSpace(t.PipelineBranchName)
	if strings.Contains(branch, "<+") {
		if event == nil {
			return "", "", fmt.Errorf("trigger %s: pipelineBranchName %s needs a delivery's event; a cron trigger names a fixed branch", t.Identifier, branch)
		}
		if branch, err = expressions.RenderString(branch, expressions.NewScope(map[string]any{"trigger": event}, ""), expressions.Options{}); err != nil {
			return "", "", fmt.Errorf("trigger %s: pipelineBranchName: %v", t.Identifier, err)
		}
		if branch == "" || branch == "null" {
			return "", "", fmt.Errorf("trigger %s: pipelineBranchName %s renders to no branch for this event", t.Identifier, t.PipelineBranchName)
		}
	}
	str := func(k string) string { v, _ := event[k].(string); return v }
	pushed := str("branch")
	if str("event") == "PR" {
		pushed = str("sourceBranch")
	}
	if branch != "" && branch == pushed {
		commit = str("commitSha")
	}
	return branch, commit, nil
}
