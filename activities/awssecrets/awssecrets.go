// Package awssecrets reads the secrets kept in AWS Secrets Manager connectors (type
// AwsSecretManager): signed as the connector says, in its region, the secret its `secret:` file
// names and, for a JSON secret, one key. A value is read for the step that needs it and kept
// nowhere.
package awssecrets

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/plan"
)

// Manager reads routed secrets; the connectors' own keys resolve through Creds.
type Manager struct {
	Creds secrets.Resolver
}

// New is the Manager of secrets.Routed's managers.
func New(creds secrets.Resolver) secrets.Manager { return &Manager{Creds: creds} }

// Read implements secrets.Manager.
func (m *Manager) Read(ctx context.Context, route plan.SecretRoute) (string, error) {
	c := route.Manager.Aws
	if c == nil {
		return "", fmt.Errorf("connector %s: an AwsSecretManager route without its sign-in", route.Manager.ID)
	}
	cfg, err := awsauth.Config(ctx, *c, "", m.Creds, nil)
	if err != nil {
		return "", err
	}
	id := route.Path
	if route.Key != "" {
		id += "#" + route.Key
	}
	sm := &secrets.SecretsManager{Client: secretsmanager.NewFromConfig(cfg), TTL: -1,
		Where: "the value or secretNamePrefix of connector " + c.ID}
	v, err := sm.Resolve(ctx, id)
	if err != nil {
		return "", awsauth.Fail(err, "connector %s", c.ID)
	}
	return v, nil
}
