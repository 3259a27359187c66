package secrets

import (
	"context"
	"fmt"

	"github.com/gantry-cd/gantry/contract"
)

// Map resolves secrets from a fixed map (tests, embedding).
type Map map[string]string

// Resolve implements Resolver.
func (m Map) Resolve(_ context.Context, id string) (string, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no secret %q", id)
}

// Login resolves a connector's username (given, or the secret userRef names) and the secret
// passRef names (a password, a token or a key). Failures are Authentication step failures naming the connector and
// the reference, never a value.
func Login(ctx context.Context, r Resolver, connector, user, userRef, passRef string) (string, string, error) {
	resolve := func(ref string) (string, error) {
		if r == nil {
			return "", contract.Fail(contract.Authentication, "connector %s: secret %q: no secret resolver on this worker", connector, ref)
		}
		v, err := r.Resolve(ctx, ref)
		if err != nil {
			return "", contract.Fail(contract.Authentication, "connector %s: %v", connector, err)
		}
		return v, nil
	}
	if userRef != "" {
		v, err := resolve(userRef)
		if err != nil {
			return "", "", err
		}
		user = v
	}
	pass, err := resolve(passRef)
	return user, pass, err
}
