// Package access applies the identity file's roles where Gantry is asked to act: the API, the
// Web UI's log and decision pages, and triggers. Every decision is identity.Authorize's; this
// package finds what it decides on (an execution's pipeline, a plan's Deployment stages) and
// writes the audit trail's lines and refusals.
package access

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// Gate authorizes with an identity file, read on every call so a changed role applies to the
// next request.
type Gate struct {
	IdentityFile string
	Starter      *starter.Starter
	Log          *zap.Logger
	// SSO, when set, also accepts ID tokens of the company's identity provider.
	SSO *sso.Provider

	once      sync.Once
	file      *identity.File
	mu        sync.Mutex
	pipelines map[string]string // execution ID → pipeline identifier, which never changes
}

// Directory reads the identity file (parsed again only when its content changed).
func (g *Gate) Directory() (*identity.Directory, error) {
	g.once.Do(func() { g.file = &identity.File{Path: g.IdentityFile} })
	return g.file.Load()
}

// User authenticates a bearer token: one of the identity file's, or with SSO an ID token
// the provider signed, whose groups the identity file maps. It returns the directory it read.
func (g *Gate) User(ctx context.Context, token string) (*identity.User, *identity.Directory, error) {
	dir, err := g.Directory()
	if err != nil {
		return nil, nil, err
	}
	if g.SSO != nil && sso.LooksLikeIDToken(token) {
		u, err := g.SSO.User(ctx, dir, token)
		return u, dir, err
	}
	u, err := dir.Authenticate(token)
	return u, dir, err
}

// maxKnownPipelines bounds the executions whose pipeline the gate remembers.
const maxKnownPipelines = 10000

// pipelineOf is the pipeline an execution runs: remembered, or looked up once.
func (g *Gate) pipelineOf(ctx context.Context, executionID string) (string, error) {
	g.mu.Lock()
	p, ok := g.pipelines[executionID]
	g.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := g.Starter.PipelineOf(ctx, executionID)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	if g.pipelines == nil || len(g.pipelines) >= maxKnownPipelines {
		g.pipelines = map[string]string{}
	}
	g.pipelines[executionID] = p
	g.mu.Unlock()
	return p, nil
}

// Execution authorizes action a on an existing execution: on the pipeline it runs, which it
// returns ("" without roles, when it is not looked up).
func (g *Gate) Execution(ctx context.Context, dir *identity.Directory, u *identity.User, a identity.Action, executionID string) (string, error) {
	if !dir.Enforcing() {
		return "", nil
	}
	p, err := g.pipelineOf(ctx, executionID)
	if err != nil {
		return "", err
	}
	return p, dir.Authorize(u, a, identity.Resource{Pipeline: p})
}

// Plan authorizes running p as u: execute on the pipeline and into the environment of every
// Deployment stage, and create when the YAML is not one of the server's pipeline files.
func Plan(dir *identity.Directory, u *identity.User, p *plan.Plan, created bool) error {
	if created {
		if err := dir.Authorize(u, identity.Create, identity.Resource{Pipeline: p.Identifier}); err != nil {
			return err
		}
	}
	if err := dir.Authorize(u, identity.Execute, identity.Resource{Pipeline: p.Identifier}); err != nil {
		return err
	}
	for _, d := range Deployments(p) {
		if err := dir.Authorize(u, identity.Execute, identity.Resource{Pipeline: p.Identifier, Stage: d.Stage, Environment: &d.Environment}); err != nil {
			return err
		}
	}
	// A chained pipeline runs as the same user: the user must be allowed to run it too.
	for _, c := range plan.Chains(p) {
		if err := Plan(dir, u, c.Plan, false); err != nil {
			return err
		}
	}
	return nil
}

// Deployment is the environment one Deployment stage (or one of its environments) deploys to.
type Deployment struct {
	Stage       string
	Environment identity.Environment
}

// Deployments lists the environments a plan's Deployment stages deploy to, in stage order.
func Deployments(p *plan.Plan) []Deployment {
	var out []Deployment
	plan.Walk(p.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind != plan.KindStage {
			return
		}
		deploys := []*plan.Deployment{n.Deploy}
		for _, k := range slices.Sorted(maps.Keys(n.Deploys)) {
			deploys = append(deploys, n.Deploys[k])
		}
		for _, d := range deploys {
			if d != nil && d.Environment != nil {
				out = append(out, Deployment{Stage: n.ID, Environment: identity.Environment{ID: d.Environment.ID, Type: d.Environment.Type}})
			}
		}
	})
	return out
}

// Forbidden reports whether err is an authorization refusal (of roles or of a workflow's
// approver rules).
func Forbidden(err error) bool {
	var f *identity.Forbidden
	var ref *starter.Refused
	return errors.As(err, &f) || (errors.As(err, &ref) && ref.Kind == workflows.ErrForbidden)
}

// keptActions are the accepted actions no execution's history records (changes to the remote
// entities' registry): like refusals, the audit trail keeps them itself.
var keptActions = map[string]bool{"register": true, "unregister": true}

// Audit writes one audit line and, for a refusal or a kept action, keeps it in the audit trail
// (Temporal holds it; see starter.Audit).

func (g *Gate) Audit(ctx context.Context, r workflows.AuditRecord) {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	log := g.Log
	if log == nil {
		log = zap.NewNop()
	}
	log.Info("audit", zap.String("user", r.User), zap.String("action", r.Action), zap.String("execution", r.Execution),
		zap.String("pipeline", r.Pipeline), zap.String("path", r.Path), zap.String("outcome", r.Outcome), zap.String("detail", r.Detail))
	if (r.Outcome != "refused" && !keptActions[r.Action]) || g.Starter == nil {
		return
	}
	// The record is kept even when the request's own context has ended.
	ctx = context.WithoutCancel(ctx)
	if err := g.Starter.RecordRefusal(ctx, r); err != nil {
		log.Error("refusal not kept in the audit trail; it is only in this log", zap.String("user", r.User), zap.String("action", r.Action), zap.Error(err))
	}
}

// Allow authorizes action a on an execution for u, reading the identity file now (the web
// UI's pages ask through this).
func (g *Gate) Allow(ctx context.Context, u *identity.User, a identity.Action, executionID string) error {
	dir, err := g.Directory()
	if err != nil {
		return err
	}
	_, err = g.Execution(ctx, dir, u, a, executionID)
	return err
}

// AllowPipeline authorizes action a on the executions of a pipeline for u, reading the
// identity file now (the web UI's executions page asks through this).
func (g *Gate) AllowPipeline(u *identity.User, a identity.Action, pipeline string) error {
	dir, err := g.Directory()
	if err != nil || !dir.Enforcing() {
		return err
	}
	return dir.Authorize(u, a, identity.Resource{Pipeline: pipeline})
}

// AllowPlan authorizes running p again (a re-run or a retry) for u: as starting it, each
// Deployment stage's environment included.
func (g *Gate) AllowPlan(u *identity.User, p *plan.Plan) error {
	dir, err := g.Directory()
	if err != nil || !dir.Enforcing() {
		return err
	}
	return Plan(dir, u, p, false)
}
