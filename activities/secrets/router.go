package secrets

import (
	"context"
	"fmt"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Manager reads secrets routed to one type of secret manager connector.
type Manager interface {
	Read(ctx context.Context, route plan.SecretRoute) (string, error)
}

// Router resolves a secret through the secret manager connector its `secret:` entity file
// names (the routes the execution's workflows pass to each activity's context), and every
// other secret through Default. A secret with a route never falls back to Default: a manager
// that is sealed, unreachable or refuses fails the step with its reason.
type Router struct {
	Default Resolver
	// Managers read by connector type (Vault, AwsSecretManager).
	Managers map[string]Manager
}

// Routed routes through Vault, and through the other managers given by connector type, whose
// connectors' own credentials resolve through def (nil: the default Store). A Router is
// returned as it is.
func Routed(def Resolver, managers map[string]func(creds Resolver) Manager) Resolver {
	if def == nil {
		def = &Store{}
	}
	if r, ok := def.(*Router); ok {
		return r
	}
	r := &Router{Default: def, Managers: map[string]Manager{"Vault": &Vault{Creds: def}}}
	for t, m := range managers {
		r.Managers[t] = m(def)
	}
	return r
}

// Resolve implements Resolver.
func (r *Router) Resolve(ctx context.Context, id string) (string, error) {
	routes := contract.SecretRoutes(ctx)
	route, ok := routes[id]
	if !ok {
		route, ok = routes[plan.LocalRef(id)] // account.db and org.db name the file's db
	}
	if !ok {
		return r.Default.Resolve(ctx, id)
	}
	m, ok := r.Managers[route.Manager.Type]
	if !ok {
		return "", fmt.Errorf("secret %s is kept in connector %s, a %s secret manager this worker cannot read", id, route.Manager.ID, route.Manager.Type)
	}
	return m.Read(ctx, route)
}
