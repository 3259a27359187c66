package contract

import (
	"context"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/plan"
)

// secretRoutesHeader carries an execution's secret routes from its workflows to their
// activities and child workflows. Routes name where secrets live, never their values.
const secretRoutesHeader = "gantry-secret-routes"

type secretRoutesKey struct{}

// WithSecretRoutes makes the routes of an execution's secret manager secrets known to the
// workflow code below ctx, and through SecretRoutesPropagator to every activity and child
// workflow it starts. No routes (nil) hide those of a parent: a chained pipeline's secrets are
// its own entity files'.
func WithSecretRoutes(ctx workflow.Context, routes map[string]plan.SecretRoute) workflow.Context {
	if len(routes) == 0 && ctx.Value(secretRoutesKey{}) == nil {
		return ctx
	}
	return workflow.WithValue(ctx, secretRoutesKey{}, routes)
}

// SecretRoutes are the routes an activity's context carries (none: every secret resolves
// through the worker's default store).
func SecretRoutes(ctx context.Context) map[string]plan.SecretRoute {
	r, _ := ctx.Value(secretRoutesKey{}).(map[string]plan.SecretRoute)
	return r
}

// ContextWithSecretRoutes is SecretRoutes' counterpart outside workflows (tests, the CLI).
func ContextWithSecretRoutes(ctx context.Context, routes map[string]plan.SecretRoute) context.Context {
	return context.WithValue(ctx, secretRoutesKey{}, routes)
}

// SecretRoutesPropagator is the Temporal context propagator for secret routes; the client and
// the worker must both have it.
type SecretRoutesPropagator struct{}

var _ workflow.ContextPropagator = SecretRoutesPropagator{}

func write(w workflow.HeaderWriter, v any) error {
	routes, _ := v.(map[string]plan.SecretRoute)
	if len(routes) == 0 {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(routes)
	if err != nil {
		return err
	}
	w.Set(secretRoutesHeader, p)
	return nil
}

func read(r workflow.HeaderReader) (map[string]plan.SecretRoute, error) {
	p, ok := r.Get(secretRoutesHeader)
	if !ok {
		return nil, nil
	}
	var routes map[string]plan.SecretRoute
	err := converter.GetDefaultDataConverter().FromPayload((*commonpb.Payload)(p), &routes)
	return routes, err
}

// Inject implements workflow.ContextPropagator.
func (SecretRoutesPropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return write(w, ctx.Value(secretRoutesKey{}))
}

// InjectFromWorkflow implements workflow.ContextPropagator.
func (SecretRoutesPropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	return write(w, ctx.Value(secretRoutesKey{}))
}

// Extract implements workflow.ContextPropagator.
func (SecretRoutesPropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	routes, err := read(r)
	if err != nil || routes == nil {
		return ctx, err
	}
	return context.WithValue(ctx, secretRoutesKey{}, routes), nil
}

// ExtractToWorkflow implements workflow.ContextPropagator.
func (SecretRoutesPropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	routes, err := read(r)
	if err != nil || routes == nil {
		return ctx, err
	}
	return workflow.WithValue(ctx, secretRoutesKey{}, routes), nil
}
