package server

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// Service is one service of the services list: each target it was deployed to, with what
// runs there as far as Gantry deployed it and the last deployment.
type Service struct {
	Service string                   `json:"service"`
	Name    string                   `json:"name,omitempty"`
	Targets []contract.LedgerSummary `json:"targets"`
}

// GroupServices groups targets (sorted by service) by service.
func GroupServices(targets []contract.LedgerSummary) []Service {
	out := []Service{}
	for _, t := range targets {
		if n := len(out); n == 0 || out[n-1].Service != t.Key.Service {
			out = append(out, Service{Service: t.Key.Service})
		}
		sv := &out[len(out)-1]
		sv.Name = cmp.Or(sv.Name, t.ServiceName)
		sv.Targets = append(sv.Targets, t)
	}
	return out
}

// ledgerFilter reads ?env=, ?infra=, ?envType= (and the service from the path or ?service=).
func ledgerFilter(r *http.Request) ledger.Filter {
	q := r.URL.Query()
	return ledger.Filter{Service: cmp.Or(r.PathValue("service"), q.Get("service")), Environment: q.Get("env"), Infra: q.Get("infra"),
		EnvironmentType: q.Get("envType")}
}

// viewable keeps the targets whose deployments' pipelines the caller may view; no roles: all.
func viewable(r *http.Request, u *identity.User, targets []contract.LedgerSummary) []contract.LedgerSummary {
	dir := callOf(r).dir
	if !dir.Enforcing() {
		return targets
	}
	return slices.DeleteFunc(targets, func(t contract.LedgerSummary) bool {
		for _, d := range []*contract.DeploymentRecord{t.Last, t.Current} {
			if d != nil && dir.Authorize(u, identity.View, identity.Resource{Pipeline: d.Pipeline}) == nil {
				return false
			}
		}
		return true
	})
}

// services lists the services deployed, each with its targets.
func (s *Server) services(w http.ResponseWriter, r *http.Request, u *identity.User) {
	targets, err := s.o.Starter.Ledger().Targets(r.Context(), ledgerFilter(r))
	if err != nil {
		s.internal(w, "list the services", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"services": GroupServices(viewable(r, u, targets))})
}

// service answers one service: its targets and its newest deployments (?limit=, default 50).
func (s *Server) service(w http.ResponseWriter, r *http.Request, u *identity.User) {
	limit, ok := intParam(w, r, "limit", 50, 1, 1000)
	if !ok {
		return
	}
	f := ledgerFilter(r)
	lv := s.o.Starter.Ledger()
	targets, err := lv.Targets(r.Context(), f)
	if err != nil {
		s.internal(w, "read service "+f.Service, err)
		return
	}
	if targets = viewable(r, u, targets); len(targets) == 0 {
		fail(w, http.StatusNotFound, "not-found", "service %s has no deployment recorded%s; the services list names those that have", f.Service, filterNote(f))
		return
	}
	deps, err := lv.Deployments(r.Context(), f, 0)
	if err != nil {
		s.internal(w, "read service "+f.Service, err)
		return
	}
	if dir := callOf(r).dir; dir.Enforcing() {
		deps = slices.DeleteFunc(deps, func(d contract.DeploymentRecord) bool {
			return dir.Authorize(u, identity.View, identity.Resource{Pipeline: d.Pipeline}) != nil
		})
	}
	deps = deps[:min(len(deps), limit)]
	if deps == nil {
		deps = []contract.DeploymentRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"service": GroupServices(targets)[0], "deployments": deps})
}

// instances answers the last instance reading of each of a service's targets that is read,
// every instance listed.
func (s *Server) instances(w http.ResponseWriter, r *http.Request, u *identity.User) {
	f := ledgerFilter(r)
	lv := s.o.Starter.Ledger()
	targets, err := lv.Targets(r.Context(), f)
	if err != nil {
		s.internal(w, "read the instances of service "+f.Service, err)
		return
	}
	if targets = viewable(r, u, targets); len(targets) == 0 {
		fail(w, http.StatusNotFound, "not-found", "service %s has no deployment recorded%s; the services list names those that have", f.Service, filterNote(f))
		return
	}
	read, err := lv.Instances(r.Context(), f)
	if err != nil {
		s.internal(w, "read the instances of service "+f.Service, err)
		return
	}
	seen := map[contract.DeploymentKey]bool{}
	for _, t := range targets {
		seen[t.Key] = true
	}
	out := []contract.InstanceSnapshot{}
	for _, i := range read {
		if seen[i.Key] {
			out = append(out, i)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": out})
}

// RollbackRequest names the target of a post-deployment rollback: the environment and, when
// the service runs on several of its infrastructures, the infrastructure.
type RollbackRequest struct {
	Env   string `json:"env"`
	Infra string `json:"infra,omitempty"`
}

// RollbackStarted answers a post-deployment rollback: the execution that runs it, the
// deployment it undoes and the one whose artifact runs again.
type RollbackStarted struct {
	ExecutionID string                    `json:"executionId"`
	SequenceID  int64                     `json:"sequenceId"`
	Undo        contract.DeploymentRecord `json:"undo"`
	Restore     contract.DeploymentRecord `json:"restore"`
}

// rollback rolls a service's target back to its previous successful deployment, as the
// caller, who needs execute on the deploying pipeline and the environment.
func (s *Server) rollback(w http.ResponseWriter, r *http.Request, u *identity.User) {
	var req RollbackRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Env == "" {
		fail(w, http.StatusBadRequest, "bad-request", "name the environment to roll back: {\"env\": \"prod\"}")
		return
	}
	c := callOf(r)
	f := ledger.Filter{Service: r.PathValue("service"), Environment: req.Env, Infra: req.Infra}
	c.note.detail = "of service " + f.Service + " in environment " + f.Environment + filterNote(ledger.Filter{Infra: f.Infra})
	rb, err := s.o.Starter.PlanRollback(r.Context(), f)
	switch {
	case errors.Is(err, starter.ErrNotFound):
		fail(w, http.StatusNotFound, "not-found", "%v", err)
		return
	case errors.Is(err, starter.ErrCannotRollBack):
		fail(w, http.StatusUnprocessableEntity, "invalid", "%v", err)
		return
	case err != nil:
		s.internal(w, "plan the rollback of service "+f.Service, err)
		return
	}
	c.note.pipeline = rb.Plan.Identifier
	if err := access.Plan(c.dir, u, rb.Plan, false); err != nil {
		s.refuse(w, err)
		return
	}
	exec, err := s.o.Starter.StartRollback(r.Context(), rb, workflows.Trigger{Type: "MANUAL", User: u.Name})
	if err != nil {
		fail(w, http.StatusUnprocessableEntity, "invalid", "%v", err)
		return
	}
	c.note.execution = exec.ID
	writeJSON(w, http.StatusCreated, RollbackStarted{ExecutionID: exec.ID, SequenceID: exec.SequenceID, Undo: rb.Undo, Restore: rb.Restore})
}

func filterNote(f ledger.Filter) string {
	out := ""
	for _, p := range [][2]string{{"environment", f.Environment}, {"infrastructure", f.Infra}, {"environment type", f.EnvironmentType}} {
		if p[1] != "" {
			out += " in " + p[0] + " " + p[1]
		}
	}
	return out
}

// dora answers the DORA figures of the targets the filter keeps (production environments
// unless ?env= or ?envType= says otherwise) over ?days= (default 30) up to today, or
// ?from= and ?to= (dates, to excluded).
func (s *Server) dora(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	f := ledgerFilter(r)
	if f.Environment == "" && f.EnvironmentType == "" {
		f.EnvironmentType = "Production"
	}
	from, to, ok := window(w, r)
	if !ok {
		return
	}
	d, err := s.o.Starter.Ledger().DORA(r.Context(), f, from, to)
	if err != nil {
		s.internal(w, "compute the DORA figures", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"filter": f, "dora": d})
}

// window reads ?from=&to= (dates, to excluded; default tomorrow) or ?days= (default 30).
func window(w http.ResponseWriter, r *http.Request) (time.Time, time.Time, bool) {
	q := r.URL.Query()
	to := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	if v := q.Get("to"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			fail(w, http.StatusBadRequest, "bad-request", "to %q is not a date (2026-11-30)", v)
			return time.Time{}, time.Time{}, false
		}
		to = t
	}
	if v := q.Get("from"); v != "" {
		from, err := time.Parse(time.DateOnly, v)
		if err != nil || !from.Before(to) {
			fail(w, http.StatusBadRequest, "bad-request", "from %q is not a date (2026-11-01) before to (%s)", v, to.Format(time.DateOnly))
			return time.Time{}, time.Time{}, false
		}
		return from, to, true
	}
	days, ok := intParam(w, r, "days", 30, 1, 3660)
	return to.AddDate(0, 0, -days), to, ok
}

// intParam reads an integer query parameter within [lo, hi], def when absent.
func intParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		fail(w, http.StatusBadRequest, "bad-request", "%s must be a number from %d to %d", name, lo, hi)
		return 0, false
	}
	return n, true
}
