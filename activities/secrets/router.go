package secrets

import (
	"context"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/plan"
)

// Router resolves a secret through the secret manager connector its `secret:` entity file
// names (the routes the execution's workflows pass to each activity's context), and every
// other secret through Default. A secret with a route never falls back to Default: a Vault
// that is sealed, unreachable or refuses fails the step with Vault's reason.
type Router struct {
	Default Resolver
	Vault   *Vault
}

// Routed routes through Vault, whose connectors' own credentials resolve through def (nil:
// the default Store). A Router is returned as it is.
func Routed(def Resolver) Resolver {
	if def == nil {
		def = &Store{}
	}
	if r, ok := def.(*Router); ok {
		return r
	}
	return &Router{Default: def, Vault: &Vault{Creds: def}}
}

// Resolve implements Resolver.
func (r *Router) Resolve(ctx context.Context, id string) (string, error) {
	routes := activities.SecretRoutes(ctx)
	route, ok := routes[id]
	if !ok {
		route, ok = routes[plan.LocalRef(id)] // account.db and org.db name the file's db
	}
	if ok {
		return r.Vault.Read(ctx, route)
	}
	return r.Default.Resolve(ctx, id)
}
