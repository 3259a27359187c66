// Package server is Gantry's JSON API: start executions, read trees, list executions and
// pending decisions, approve or reject, abort and intervene. Every call needs a bearer token
// from the identity file; the user it names is the one recorded in history.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gantry-cd/gantry/contract"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/triggers"
	"github.com/gantry-cd/gantry/triggers/directory"
	"github.com/gantry-cd/gantry/workflows"
)

// MaxBody bounds request bodies.
const MaxBody = 1 << 20

// Options configure the API.
type Options struct {
	Starter *starter.Starter
	// IdentityFile is read on every request, so users and tokens can change without a restart.
	IdentityFile string
	// PipelinesDir holds the pipeline files a start request may name ("file").
	PipelinesDir string
	// TemplateDirs are template folders beyond the pipelines directory's templates/ (spec 19.4).
	TemplateDirs []string
	// Strict makes unknown keys errors in the pipelines started and the triggers loaded.
	Strict bool
	// BuildInfra runs the CI stages that name a runtime (--ci-connector); nil: none.
	BuildInfra *pipeline.BuildInfra
	Log        *zap.Logger
	Settings   workflows.Settings
	// Secrets resolves webhook secrets (encryptedWebhookSecretIdentifier).
	Secrets secrets.Resolver
	// Events records every webhook delivery (gantry triggers events).
	Events *triggers.EventLog
	// Policies are evaluated on run for every start (API and triggers); nil disables them.
	Policies *policies.Engine
	// Logs are the step logs (with a bucket, those of every worker).
	Logs logs.Store
	// Remote is the registry of entities kept in Git, read through Git (nil: none).
	Remote *remote.Registry
	Git    remote.Git
	// SSO, when set, accepts ID tokens of the company's identity provider besides the
	// identity file's tokens, and redeems gantry login's handoff codes.
	SSO *sso.Provider
}

// Server serves the API.
type Server struct {
	o     Options
	mux   *http.ServeMux
	regMu sync.Mutex
	reg   *directory.Registry
	regFP string
	gate  *access.Gate
	// The connector files of the pipelines directory, by its fingerprint (remote entities).
	connMu sync.Mutex
	conns  map[string]*pipeline.File
	connFP string
	// rd is the Git reader of the remote entities, one for the server's life: it remembers
	// which branch heads each start needed, to ask for them all at once the next time.
	rd *remote.Reader
	// joined are the policy engines joined with libraries kept in Git, by their commits.
	joined joinedEngines
}

// New returns the API handler.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	s := &Server{o: o, mux: http.NewServeMux(), gate: &access.Gate{IdentityFile: o.IdentityFile, Starter: o.Starter, Log: o.Log, SSO: o.SSO}}
	if o.Remote != nil && o.Git != nil {
		s.rd = &remote.Reader{Registry: o.Remote, Git: o.Git, Connector: s.gitConnector}
	}
	for _, r := range Routes {
		s.mux.HandleFunc(r.Method+" "+r.Pattern, s.auth(r))
	}
	// Webhooks authenticate per trigger (signatures, X-Api-Key), not with bearer tokens; the
	// sign-in calls come before the caller has a token.
	for _, r := range append(Webhooks, SignInRoutes...) {
		s.mux.HandleFunc(r.Method+" "+r.Pattern, r.handler(s))
	}
	s.mux.HandleFunc("GET /api/v1/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
	return s
}

// Route is one API operation; the OpenAPI document lists the same set (a test checks it).
type Route struct {
	Method, Pattern string
	handler         func(*Server) handlerFunc
	// perm is what the caller needs on the execution the path names (the pipeline it runs);
	// "" where the handler decides (starts, lists, approvals, which follow their own groups).
	perm identity.Action
	// audit names the action in the audit trail; reads are audited only when refused.
	audit string
}

// WebhookRoute is a webhook endpoint.
type WebhookRoute struct {
	Method, Pattern string
	handler         func(*Server) http.HandlerFunc
}

// Webhooks are the trigger endpoints.
var Webhooks = []WebhookRoute{
	{"POST", "/api/v1/webhooks/{provider}", func(s *Server) http.HandlerFunc { return s.gitWebhook }},
	{"POST", "/api/v1/webhooks/custom/{trigger}", func(s *Server) http.HandlerFunc { return s.customWebhook }},
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, u *identity.User)

// Routes are the API's operations.
var Routes = []Route{
	{"POST", "/api/v1/executions", func(s *Server) handlerFunc { return s.start }, "", "start"},
	{"GET", "/api/v1/executions", func(s *Server) handlerFunc { return s.list }, "", ""},
	{"GET", "/api/v1/executions/{id}", func(s *Server) handlerFunc { return s.tree }, identity.View, ""},
	{"GET", "/api/v1/executions/{id}/logs/{step}", func(s *Server) handlerFunc { return s.stepLog }, identity.View, ""},
	{"GET", "/api/v1/executions/{id}/notifications", func(s *Server) handlerFunc { return s.notifications }, identity.View, ""},
	{"POST", "/api/v1/executions/{id}/abort", func(s *Server) handlerFunc { return s.abort }, identity.Abort, "abort"},
	{"POST", "/api/v1/executions/{id}/pause", func(s *Server) handlerFunc { return s.pause(true) }, identity.Abort, "pause"},
	{"POST", "/api/v1/executions/{id}/resume", func(s *Server) handlerFunc { return s.pause(false) }, identity.Abort, "resume"},
	{"POST", "/api/v1/executions/{id}/intervene", func(s *Server) handlerFunc { return s.intervene }, identity.Abort, "intervene"},
	{"POST", "/api/v1/executions/{id}/approve", func(s *Server) handlerFunc { return s.vote("APPROVE") }, "", "approve"},
	{"POST", "/api/v1/executions/{id}/reject", func(s *Server) handlerFunc { return s.vote("REJECT") }, "", "reject"},
	{"POST", "/api/v1/executions/{id}/input", func(s *Server) handlerFunc { return s.input }, identity.Execute, "input"},
	{"POST", "/api/v1/executions/{id}/rerun", func(s *Server) handlerFunc { return s.restart(false) }, identity.Execute, "rerun"},
	{"POST", "/api/v1/executions/{id}/retry", func(s *Server) handlerFunc { return s.restart(true) }, identity.Execute, "retry"},
	{"GET", "/api/v1/pending", func(s *Server) handlerFunc { return s.pending }, "", ""},
	{"GET", "/api/v1/audit", func(s *Server) handlerFunc { return s.audit }, identity.Admin, ""},
	{"GET", "/api/v1/freeze", func(s *Server) handlerFunc { return s.freeze }, "", ""},
	{"PUT", "/api/v1/freeze", func(s *Server) handlerFunc { return s.setFreeze }, identity.Admin, "freeze"},
	{"GET", "/api/v1/remote-entities", func(s *Server) handlerFunc { return s.listRemote }, "", ""},
	{"POST", "/api/v1/remote-entities", func(s *Server) handlerFunc { return s.registerRemote }, "", "register"},
	{"DELETE", "/api/v1/remote-entities/{kind}/{identifier}", func(s *Server) handlerFunc { return s.removeRemote }, "", "unregister"},
	{"GET", "/api/v1/services", func(s *Server) handlerFunc { return s.services }, "", ""},
	{"GET", "/api/v1/services/{service}", func(s *Server) handlerFunc { return s.service }, "", ""},
	{"GET", "/api/v1/services/{service}/instances", func(s *Server) handlerFunc { return s.instances }, "", ""},
	{"POST", "/api/v1/services/{service}/rollback", func(s *Server) handlerFunc { return s.rollback }, "", "rollback"},
	{"GET", "/api/v1/dora", func(s *Server) handlerFunc { return s.dora }, "", ""},
	{"POST", "/api/v1/auth/sign-out", func(s *Server) handlerFunc { return s.signOut }, "", "sign-out"},
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Error is the body of every error response.
type Error struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Details []string `json:"details,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, c, format string, args ...any) {
	writeJSON(w, code, Error{Code: c, Message: fmt.Sprintf(format, args...)})
}

// auth authenticates the bearer token, authorizes what the route needs on the execution it
// names, runs the handler and writes the audit line of an action or a refusal.
func (s *Server) auth(route Route) http.HandlerFunc {
	h := route.handler(s)
	return func(w http.ResponseWriter, r *http.Request) {
		u, dir, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		var err error
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		note := &auditNote{execution: r.PathValue("id")}
		r = r.WithContext(context.WithValue(ctx, callKey{}, &call{dir: dir, note: note}))
		rec := &recorder{ResponseWriter: w}
		defer s.auditCall(r, route, u, rec, note)
		switch {
		case route.perm == identity.Admin:
			err = dir.Authorize(u, identity.Admin, identity.Resource{})
		case route.perm != "" && note.execution != "":
			note.pipeline, err = s.gate.Execution(r.Context(), dir, u, route.perm, note.execution)
		}
		if err != nil {
			s.refuse(rec, err)
			return
		}
		h(rec, r, u)
	}
}

// authenticate finds the caller of a request, or answers it with why not.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*identity.User, *identity.Directory, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	u, dir, err := s.gate.User(r.Context(), strings.TrimSpace(tok))
	switch {
	case dir == nil:
		s.o.Log.Error("identity file unreadable", zap.String("file", s.o.IdentityFile), zap.Error(err))
		fail(w, http.StatusInternalServerError, "identity", "the server's identity file cannot be read")
		return nil, nil, false
	case !ok || err != nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="gantry"`)
		msg := "send a valid API token as Authorization: Bearer <token>"
		if ok && s.o.SSO != nil && sso.LooksLikeIDToken(tok) {
			msg = fmt.Sprintf("your sign-in is refused: %v (gantry login --server URL signs in again)", err)
		}
		fail(w, http.StatusUnauthorized, "unauthenticated", "%s", msg)
		return nil, nil, false
	}
	return u, dir, true
}

// call is what the auth wrapper hands the handlers besides the user.
type call struct {
	dir  *identity.Directory
	note *auditNote
}

type callKey struct{}

func callOf(r *http.Request) *call {
	if c, ok := r.Context().Value(callKey{}).(*call); ok {
		return c
	}
	return &call{dir: &identity.Directory{}, note: &auditNote{}}
}

// auditNote is what a handler learns for the audit line: the execution it started, the
// pipeline, the node a decision is about.
type auditNote struct{ execution, pipeline, path, detail string }

// recorder keeps a response's status and an error's message for the audit line.
type recorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status >= 400 && len(r.body) < 4096 {
		r.body = append(r.body, b[:min(len(b), 4096-len(r.body))]...)
	}
	return r.ResponseWriter.Write(b)
}

// auditCall writes the audit line of an action, and of any refusal (403).
func (s *Server) auditCall(r *http.Request, route Route, u *identity.User, rec *recorder, note *auditNote) {
	action := route.audit
	if rec.status == http.StatusForbidden && action == "" {
		action = string(route.perm)
		if action == "" {
			action = "view"
		}
	}
	if action == "" {
		return
	}
	out := workflows.AuditRecord{User: u.Name, Action: action, Execution: note.execution, Pipeline: note.pipeline, Path: note.path, Detail: note.detail, Outcome: "ok"}
	if rec.status >= 400 {
		out.Outcome = "failed"
		if rec.status == http.StatusForbidden {
			out.Outcome = "refused"
		}
		var e Error
		if json.Unmarshal(rec.body, &e) == nil && e.Message != "" {
			out.Detail = strings.TrimPrefix(out.Detail+"; "+e.Message, "; ")
		}
	}
	s.gate.Audit(r.Context(), out)
}

// refuse answers an authorization refusal (403) or the error of finding what it is about.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	if access.Forbidden(err) {
		fail(w, http.StatusForbidden, "forbidden", "%v", err)
		return
	}
	s.callErr(w, err)
}

// decode reads a JSON body strictly: unknown fields and trailing data are errors.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("trailing data after the JSON object")
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, "too-large", "request body is larger than %d bytes", MaxBody)
		return false
	case errors.Is(err, io.EOF):
		fail(w, http.StatusBadRequest, "bad-request", "request body is empty; send a JSON object")
		return false
	case err != nil:
		fail(w, http.StatusBadRequest, "bad-request", "invalid JSON body: %v", err)
		return false
	}
	return true
}

// StartRequest starts a pipeline: inline YAML, a file of the pipelines directory, or a remote
// pipeline by identifier (at a branch or commit, with registered input sets), with runtime
// inputs as FQN=value assignments.
type StartRequest struct {
	File     string `json:"file,omitempty"`
	YAML     string `json:"yaml,omitempty"`
	Pipeline string `json:"pipeline,omitempty"`
	// Branch (default: the remote pipeline's default branch) or Commit selects what is read.
	Branch    string   `json:"branch,omitempty"`
	Commit    string   `json:"commit,omitempty"`
	InputSets []string `json:"inputSets,omitempty"`
	Sets      []string `json:"sets,omitempty"`
	// OverrideFreeze lets the execution deploy while a deployment freeze holds; it needs the
	// override-freeze permission on the pipeline and is recorded in the audit trail.
	OverrideFreeze bool `json:"overrideFreeze,omitempty"`
}

func (s *Server) start(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	name, src := "request.yaml", []byte(req.YAML)
	given := 0
	for _, v := range []string{req.File, req.YAML, req.Pipeline} {
		if v != "" {
			given++
		}
	}
	switch {
	case given != 1:
		fail(w, http.StatusBadRequest, "bad-request", "give exactly one of file, yaml and pipeline")
		return
	case req.Pipeline == "" && (req.Branch != "" || req.Commit != "" || len(req.InputSets) > 0):
		fail(w, http.StatusBadRequest, "bad-request", "branch, commit and inputSets select what a remote pipeline (pipeline) reads")
		return
	case req.File != "":
		if s.o.PipelinesDir == "" || strings.Contains(req.File, "..") || filepath.IsAbs(req.File) {
			fail(w, http.StatusBadRequest, "bad-request", "file must name a pipeline inside the server's pipelines directory")
			return
		}
		name = filepath.Join(s.o.PipelinesDir, req.File)
		b, err := os.ReadFile(name)
		if err != nil {
			fail(w, http.StatusNotFound, "not-found", "no pipeline file %s", req.File)
			return
		}
		src = b
	}
	var entityDirs, pipelineDirs []string
	templateDirs, beside := s.o.TemplateDirs, ""
	if s.o.PipelinesDir != "" {
		entityDirs = []string{s.o.PipelinesDir} // services, environments, infrastructure, connectors
		pipelineDirs = entityDirs               // the pipelines Pipeline stages chain
		templateDirs = append(load.DefaultTemplateDirs(filepath.Join(s.o.PipelinesDir, "pipeline.yaml")), templateDirs...)
		beside = s.o.PipelinesDir
	}
	gov := s.governAsync(r.Context())
	opts := load.Options{Sets: req.Sets, ForRun: true, Strict: s.o.Strict, BuildInfra: s.o.BuildInfra,
		PolicyMeta: map[string]any{"user": map[string]any{"name": u.Name, "email": u.Email}, "userGroups": u.Groups,
			"trigger": "MANUAL", "timestamp": time.Now().UTC().Format(time.RFC3339)}}
	var res *load.Result
	if req.Pipeline != "" {
		// Roles are checked before Git is read: the identifier is the pipeline's.
		if err := callOf(r).dir.Authorize(u, identity.Execute, identity.Resource{Pipeline: req.Pipeline}); err != nil {
			s.refuse(w, err)
			return
		}
		var err error
		name = "remote pipeline " + req.Pipeline
		if res, err = s.loadRemote(r.Context(), remote.Request{Pipeline: req.Pipeline, Branch: req.Branch, Commit: req.Commit, InputSets: req.InputSets}, opts, gov, nil); err != nil {
			refuseRemote(w, err)
			return
		}
	} else {
		var governedBy []plan.Source
		var err error
		if opts.Policies, governedBy, err = gov(); err != nil {
			refuseRemote(w, err)
			return
		}
		opts.EntityDirs, opts.TemplateDirs, opts.TemplatesBeside, opts.PipelineDirs = entityDirs, templateDirs, beside, pipelineDirs
		if res = load.Bytes(name, src, opts); res.Plan != nil {
			res.Plan.Sources = append(res.Plan.Sources, governedBy...)
		}
	}
	logDecision(s.o.Log, name, res.Policy)
	c := callOf(r)
	if res.Plan != nil {
		c.note.pipeline = res.Plan.Identifier
		if req.YAML != "" {
			c.note.detail = "inline YAML"
		}
		if src := res.Plan.Remote(); src != nil {
			c.note.detail = "from Git " + src.Repo + "@" + src.Commit + ":" + src.FilePath
		}
		if err := access.Plan(c.dir, u, res.Plan, req.YAML != ""); err != nil {
			s.refuse(w, err)
			return
		}
	}
	if !res.OK() || res.Plan == nil {
		var details []string
		for _, d := range res.Diags.Errors() {
			details = append(details, d.String())
		}
		code, msg := "invalid-pipeline", "the pipeline is invalid; nothing was started"
		if res.Policy != nil && res.Policy.Denied() {
			code, msg = "policy-denied", "policies deny this run; nothing was started"
		}
		writeJSON(w, http.StatusUnprocessableEntity, Error{Code: code, Message: msg, Details: details})
		return
	}
	set := s.o.Settings
	if req.OverrideFreeze {
		if err := c.dir.Authorize(u, identity.OverrideFreeze, identity.Resource{Pipeline: res.Plan.Identifier}); err != nil {
			s.refuse(w, err)
			return
		}
		set.OverrideFreeze = u.Name
		c.note.detail = strings.TrimSpace(c.note.detail + " override-freeze")
	}
	exec, err := s.o.Starter.Start(r.Context(), res.Plan, workflows.Trigger{Type: "MANUAL", User: u.Name}, set)
	if err != nil {
		s.internal(w, "start", err)
		return
	}
	c.note.execution = exec.ID
	writeJSON(w, http.StatusCreated, map[string]any{"executionId": exec.ID, "sequenceId": exec.SequenceID})
}

// list lists the newest executions of the pipelines the caller may view.
func (s *Server) list(w http.ResponseWriter, r *http.Request, u *identity.User) {
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "bad-request", "limit must be 1-1000")
			return
		}
		limit = n
	}
	dir := callOf(r).dir
	pipeline := r.URL.Query().Get("pipeline")
	var keep func(starter.Summary) bool
	if dir.Enforcing() {
		if pipeline != "" {
			if err := dir.Authorize(u, identity.View, identity.Resource{Pipeline: pipeline}); err != nil {
				s.refuse(w, err)
				return
			}
		}
		keep = func(sm starter.Summary) bool {
			return dir.Authorize(u, identity.View, identity.Resource{Pipeline: sm.Pipeline}) == nil
		}
	}
	list, err := s.o.Starter.ListWhere(r.Context(), pipeline, limit, keep)
	if err != nil {
		s.internal(w, "list", err)
		return
	}
	if list == nil {
		list = []starter.Summary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": list})
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	t, err := s.o.Starter.Tree(r.Context(), r.PathValue("id"))
	if err != nil {
		s.callErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// stepLog serves a step's log as text: from the log bucket when the workers ship to one, else
// from this process's log directory.
func (s *Server) stepLog(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	id, step := r.PathValue("id"), r.PathValue("step")
	ok, err := s.o.Logs.Exists(r.Context(), id, step)
	if err != nil {
		s.internal(w, "read step log", err)
		return
	}
	if !ok {
		fail(w, http.StatusNotFound, "not-found", "no log for step %s of execution %s (step paths are identifiers joined by dots, as the tree shows them; a step that printed nothing has no log)", step, id)
		return
	}
	var b strings.Builder
	if err := s.o.Logs.Copy(r.Context(), &b, id, step); err != nil {
		s.internal(w, "read step log", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

// notifications serves an execution's notification delivery records.
func (s *Server) notifications(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	records, done, err := s.o.Starter.Notifications(r.Context(), r.PathValue("id"))
	if err != nil {
		s.callErr(w, err)
		return
	}
	if records == nil {
		records = []workflows.DeliveryRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": records, "done": done})
}

// pending is a page of the decisions waiting executions wait for: ?limit executions (100, at
// most 1000) from ?pageToken.
func (s *Server) pending(w http.ResponseWriter, r *http.Request, u *identity.User) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "bad-request", "limit %q is not a number from 1 to 1000", v)
			return
		}
		limit = n
	}
	page, err := s.o.Starter.PendingPage(r.Context(), limit, r.URL.Query().Get("pageToken"))
	if errors.Is(err, starter.ErrPageToken) {
		fail(w, http.StatusBadRequest, "bad-request", "%v", err)
		return
	}
	if err != nil {
		s.internal(w, "pending", err)
		return
	}
	page.Pending = Visible(callOf(r).dir, u, page.Pending)
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) abort(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req struct {
		Reason string `json:"reason,omitempty"`
	}
	if !decode(w, r, &req) {
		return
	}
	callOf(r).note.detail = req.Reason
	if err := s.o.Starter.Abort(r.Context(), r.PathValue("id"), u.Name, req.Reason); err != nil {
		s.callErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"message": "abort requested by " + u.Name})
}

// pause pauses or resumes an execution as the caller.
func (s *Server) pause(pause bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u *identity.User) {
		msg, err := s.o.Starter.Pause(r.Context(), r.PathValue("id"), u.Name, pause)
		if err != nil {
			s.callErr(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"message": msg})
	}
}

func (s *Server) intervene(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	}
	if !decode(w, r, &req) {
		return
	}
	callOf(r).note.path, callOf(r).note.detail = req.Path, req.Action
	msg, err := s.o.Starter.Intervene(r.Context(), r.PathValue("id"), workflows.InterventionRequest{Path: req.Path, Action: req.Action, User: u.Name})
	if err != nil {
		s.callErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": msg})
}

// VoteRequest approves or rejects an approval step.
type VoteRequest struct {
	Path     string            `json:"path"`
	Comments string            `json:"comments,omitempty"`
	Inputs   map[string]string `json:"inputs,omitempty"`
}

func (s *Server) vote(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u *identity.User) {
		var req VoteRequest
		if !decode(w, r, &req) {
			return
		}
		if req.Path == "" {
			fail(w, http.StatusBadRequest, "bad-request", "path names the approval step, e.g. sign_off.prod_signoff")
			return
		}
		callOf(r).note.path = req.Path
		msg, err := s.o.Starter.Approve(r.Context(), r.PathValue("id"), workflows.ApprovalRequest{
			Path: req.Path, Action: action, User: u.Name, Email: u.Email, Groups: u.Groups, Comments: req.Comments, Inputs: req.Inputs})
		if err != nil {
			s.callErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"message": msg})
	}
}

func (s *Server) input(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req struct {
		Path   string            `json:"path"`
		Values map[string]string `json:"values"`
	}
	if !decode(w, r, &req) {
		return
	}
	callOf(r).note.path = req.Path
	msg, err := s.o.Starter.SupplyInputs(r.Context(), r.PathValue("id"), workflows.InputRequest{Path: req.Path, User: u.Name, Values: req.Values})
	if err != nil {
		s.callErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": msg})
}

// Visible keeps the waiting decisions u may see: those of pipelines u may view, and the
// approvals u may decide (an approval names its own approver groups).
func Visible(dir *identity.Directory, u *identity.User, pending []starter.Pending) []starter.Pending {
	if !dir.Enforcing() {
		return pending
	}
	out := []starter.Pending{}
	for _, p := range pending {
		if (p.Approval != nil && u.InAnyGroup(p.Approval.UserGroups)) || dir.Authorize(u, identity.View, identity.Resource{Pipeline: p.Pipeline}) == nil {
			out = append(out, p)
		}
	}
	return out
}

// restart reruns an execution, or retries it from a stage ({"fromStage"}), as the caller:
// the new execution runs the same plan, so its Deployment stages are authorized again.
func (s *Server) restart(retry bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u *identity.User) {
		var req struct {
			FromStage string `json:"fromStage,omitempty"`
		}
		if r.ContentLength != 0 && !decode(w, r, &req) {
			return
		}
		c, id := callOf(r), r.PathValue("id")
		in, err := s.o.Starter.Input(r.Context(), id)
		if err != nil {
			s.callErr(w, err)
			return
		}
		c.note.pipeline, c.note.detail = in.Plan.Identifier, "of "+id
		if err := access.Plan(c.dir, u, in.Plan, false); err != nil {
			s.refuse(w, err)
			return
		}
		trig := workflows.Trigger{Type: "MANUAL", User: u.Name}
		var exec starter.Execution
		if retry {
			exec, err = s.o.Starter.Retry(r.Context(), id, req.FromStage, trig)
		} else {
			exec, err = s.o.Starter.Rerun(r.Context(), id, trig)
		}
		if errors.Is(err, starter.ErrNotFound) {
			fail(w, http.StatusNotFound, "not-found", "%v", err)
			return
		}
		if err != nil {
			fail(w, http.StatusUnprocessableEntity, "invalid", "%v", err)
			return
		}
		c.note.execution = exec.ID
		writeJSON(w, http.StatusCreated, map[string]any{"executionId": exec.ID, "sequenceId": exec.SequenceID})
	}
}

// audit serves the audit trail (admin only): ?since= (RFC 3339, default 24 hours ago),
// ?execution=, ?user=, ?executions= (how many executions' histories to read, newest first).
func (s *Server) audit(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	q := starter.AuditQuery{Since: time.Now().Add(-24 * time.Hour), Execution: r.URL.Query().Get("execution"), User: r.URL.Query().Get("user")}
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			fail(w, http.StatusBadRequest, "bad-request", "since %q is not an RFC 3339 time (2026-11-27T09:00:00Z)", v)
			return
		}
		q.Since = t
	}
	if v := r.URL.Query().Get("executions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			fail(w, http.StatusBadRequest, "bad-request", "executions %q is not a number from 1 to 10000", v)
			return
		}
		q.Executions = n
	}
	recs, err := s.o.Starter.Audit(r.Context(), q)
	if err != nil {
		s.callErr(w, err)
		return
	}
	if recs == nil {
		recs = []workflows.AuditRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": recs})
}

// callErr maps engine errors to HTTP: refusals by a workflow validator carry their kind.
func (s *Server) callErr(w http.ResponseWriter, err error) {
	var ref *starter.Refused
	if errors.As(err, &ref) {
		switch ref.Kind {
		case workflows.ErrForbidden:
			fail(w, http.StatusForbidden, "forbidden", "%s", ref.Message)
		case workflows.ErrConflict:
			fail(w, http.StatusConflict, "conflict", "%s", ref.Message)
		case workflows.ErrNotWaiting:
			fail(w, http.StatusConflict, "not-waiting", "%s", ref.Message)
		default:
			fail(w, http.StatusUnprocessableEntity, "invalid", "%s", ref.Message)
		}
		return
	}
	if errors.Is(err, starter.ErrNotFound) {
		fail(w, http.StatusNotFound, "not-found", "%v", err)
		return
	}
	s.internal(w, "call", err)
}

func (s *Server) internal(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, starter.ErrTooLarge) { // the caller's input, not the engine
		fail(w, http.StatusUnprocessableEntity, "too-large", "%s refused: %v", what, err)
		return
	}
	s.o.Log.Error("API call failed", zap.String("operation", what), zap.Error(err))
	fail(w, http.StatusBadGateway, "engine", "%s failed: %v", what, err)
}

// logDecision logs an on-run policy decision: sets, result, messages, durations.
func logDecision(log *zap.Logger, pipeline string, d *policies.Decision) {
	if d == nil {
		return
	}
	for _, set := range d.Sets {
		log.Info("on-run policy set evaluated", zap.String("pipeline", pipeline), zap.String("set", set.Set),
			zap.String("status", set.Status), zap.Duration("duration", set.Duration))
	}
	if d.Status != "pass" {
		log.Warn("on-run policy decision", zap.String("pipeline", pipeline), zap.String("status", d.Status), zap.Strings("messages", d.Messages()))
	}
}

// freeze answers the global deployment freeze's state.
func (s *Server) freeze(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	st, err := s.o.Starter.GlobalFreeze(r.Context())
	if err != nil {
		fail(w, http.StatusBadGateway, "temporal", "read the global freeze: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// FreezeRequest turns the global deployment freeze on or off (PUT /api/v1/freeze).
type FreezeRequest struct {
	On     bool   `json:"on"`
	Reason string `json:"reason,omitempty"`
}

// setFreeze turns the global deployment freeze on or off as the admin who asks; asking for
// the state it is in changes nothing.
func (s *Server) setFreeze(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req FreezeRequest
	if !decode(w, r, &req) {
		return
	}
	note := callOf(r).note
	st, err := s.o.Starter.GlobalFreeze(r.Context())
	switch {
	case err != nil:
	case st.On == req.On:
		note.detail = "unchanged: already " + map[bool]string{true: "on", false: "off"}[st.On]
	case req.On:
		note.detail = "on: " + req.Reason
		st, err = s.o.Starter.FreezeOn(r.Context(), u.Name, req.Reason)
	default:
		note.detail = "off"
		if _, err = s.o.Starter.FreezeOff(r.Context(), u.Name); err == nil {
			st = contract.GlobalFreeze{}
		}
	}
	if err != nil {
		fail(w, http.StatusBadGateway, "temporal", "set the global freeze: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
