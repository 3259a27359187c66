// Package server is Gantry's JSON API: start executions, read trees, list executions and
// pending decisions, approve or reject, abort and intervene. Every call needs a bearer token
// from the identity file; the user it names is the one recorded in history.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/policies"
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
}

// Server serves the API.
type Server struct {
	o     Options
	mux   *http.ServeMux
	regMu sync.Mutex
	reg   *directory.Registry
	regFP string
}

// New returns the API handler.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	for _, r := range Routes {
		s.mux.HandleFunc(r.Method+" "+r.Pattern, s.auth(r.handler(s)))
	}
	// Webhooks authenticate per trigger (signatures, X-Api-Key), not with bearer tokens.
	for _, r := range Webhooks {
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
	{"POST", "/api/v1/executions", func(s *Server) handlerFunc { return s.start }},
	{"GET", "/api/v1/executions", func(s *Server) handlerFunc { return s.list }},
	{"GET", "/api/v1/executions/{id}", func(s *Server) handlerFunc { return s.tree }},
	{"GET", "/api/v1/executions/{id}/logs/{step}", func(s *Server) handlerFunc { return s.stepLog }},
	{"GET", "/api/v1/executions/{id}/notifications", func(s *Server) handlerFunc { return s.notifications }},
	{"POST", "/api/v1/executions/{id}/abort", func(s *Server) handlerFunc { return s.abort }},
	{"POST", "/api/v1/executions/{id}/pause", func(s *Server) handlerFunc { return s.pause(true) }},
	{"POST", "/api/v1/executions/{id}/resume", func(s *Server) handlerFunc { return s.pause(false) }},
	{"POST", "/api/v1/executions/{id}/intervene", func(s *Server) handlerFunc { return s.intervene }},
	{"POST", "/api/v1/executions/{id}/approve", func(s *Server) handlerFunc { return s.vote("APPROVE") }},
	{"POST", "/api/v1/executions/{id}/reject", func(s *Server) handlerFunc { return s.vote("REJECT") }},
	{"POST", "/api/v1/executions/{id}/input", func(s *Server) handlerFunc { return s.input }},
	{"GET", "/api/v1/pending", func(s *Server) handlerFunc { return s.pending }},
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

// auth authenticates the bearer token before any handler runs.
func (s *Server) auth(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		dir, err := identity.Load(s.o.IdentityFile)
		if err != nil {
			s.o.Log.Error("identity file unreadable", zap.String("file", s.o.IdentityFile), zap.Error(err))
			fail(w, http.StatusInternalServerError, "identity", "the server's identity file cannot be read")
			return
		}
		u, err := dir.Authenticate(strings.TrimSpace(tok))
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gantry"`)
			fail(w, http.StatusUnauthorized, "unauthenticated", "send a valid API token as Authorization: Bearer <token>")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		h(w, r.WithContext(ctx), u)
	}
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

// StartRequest starts a pipeline: inline YAML or a file of the pipelines directory, with
// runtime inputs as FQN=value assignments.
type StartRequest struct {
	File string   `json:"file,omitempty"`
	YAML string   `json:"yaml,omitempty"`
	Sets []string `json:"sets,omitempty"`
}

func (s *Server) start(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	name, src := "request.yaml", []byte(req.YAML)
	switch {
	case (req.File == "") == (req.YAML == ""):
		fail(w, http.StatusBadRequest, "bad-request", "give exactly one of file and yaml")
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
	var entityDirs []string
	templateDirs, beside := s.o.TemplateDirs, ""
	if s.o.PipelinesDir != "" {
		entityDirs = []string{s.o.PipelinesDir} // services, environments, infrastructure, connectors
		templateDirs = append(load.DefaultTemplateDirs(filepath.Join(s.o.PipelinesDir, "pipeline.yaml")), templateDirs...)
		beside = s.o.PipelinesDir
	}
	res := load.Bytes(name, src, load.Options{Sets: req.Sets, ForRun: true, Strict: s.o.Strict, BuildInfra: s.o.BuildInfra, Policies: s.o.Policies, EntityDirs: entityDirs,
		TemplateDirs: templateDirs, TemplatesBeside: beside,
		PolicyMeta: map[string]any{"user": map[string]any{"name": u.Name, "email": u.Email}, "userGroups": u.Groups,
			"trigger": "MANUAL", "timestamp": time.Now().UTC().Format(time.RFC3339)}})
	logDecision(s.o.Log, name, res.Policy)
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
	exec, err := s.o.Starter.Start(r.Context(), res.Plan, workflows.Trigger{Type: "MANUAL", User: u.Name}, s.o.Settings)
	if err != nil {
		s.internal(w, "start", err)
		return
	}
	s.o.Log.Info("execution started", zap.String("execution", exec.ID), zap.String("user", u.Name))
	writeJSON(w, http.StatusCreated, map[string]any{"executionId": exec.ID, "sequenceId": exec.SequenceID})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	limit := 20
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "bad-request", "limit must be 1-1000")
			return
		}
		limit = n
	}
	list, err := s.o.Starter.List(r.Context(), r.URL.Query().Get("pipeline"), limit)
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
func (s *Server) pending(w http.ResponseWriter, r *http.Request, _ *identity.User) {
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
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) abort(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req struct {
		Reason string `json:"reason,omitempty"`
	}
	if !decode(w, r, &req) {
		return
	}
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
		msg, err := s.o.Starter.Approve(r.Context(), r.PathValue("id"), workflows.ApprovalRequest{
			Path: req.Path, Action: action, User: u.Name, Email: u.Email, Groups: u.Groups, Comments: req.Comments, Inputs: req.Inputs})
		if err != nil {
			s.callErr(w, err)
			return
		}
		s.o.Log.Info("vote recorded", zap.String("execution", r.PathValue("id")), zap.String("path", req.Path), zap.String("user", u.Name), zap.String("action", action))
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
	msg, err := s.o.Starter.SupplyInputs(r.Context(), r.PathValue("id"), workflows.InputRequest{Path: req.Path, User: u.Name, Values: req.Values})
	if err != nil {
		s.callErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": msg})
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
