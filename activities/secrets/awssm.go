package secrets

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"go.temporal.io/sdk/activity"
)

// SecretsManager resolves secrets from AWS Secrets Manager: secret id "name" reads the secret
// Prefix+name, and "name#key" reads one key of a secret holding a JSON object (the form the AWS
// console writes key/value secrets in). A value read for a step is kept for that step only
// (and at most TTL, default a minute), so a script naming a secret three times asks once and
// the next step reads it anew; outside a step it is kept for TTL. A negative TTL keeps nothing.
type SecretsManager struct {
	Client *secretsmanager.Client
	Prefix string
	TTL    time.Duration
	// Where says, in the error for a secret that does not exist, what decides the name
	// (default the worker's --aws-secrets-prefix).
	Where string

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	value string
	at    time.Time
}

// Resolve implements Resolver.
func (s *SecretsManager) Resolve(ctx context.Context, id string) (string, error) {
	name, key, hasKey := strings.Cut(id, "#")
	name = s.Prefix + name
	value, err := s.get(ctx, name)
	if err != nil {
		return "", err
	}
	if !hasKey {
		return value, nil
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(value), &fields); err != nil {
		return "", fmt.Errorf("secret %q: AWS Secrets Manager secret %s is not a JSON object, so it has no key %q", id, name, key)
	}
	v, ok := fields[key]
	if !ok {
		return "", fmt.Errorf("secret %q: AWS Secrets Manager secret %s has no key %q", id, name, key)
	}
	if str, ok := v.(string); ok {
		return str, nil
	}
	b, _ := json.Marshal(v)
	return string(b), nil
}

func (s *SecretsManager) get(ctx context.Context, name string) (string, error) {
	ttl := s.TTL
	if ttl == 0 {
		ttl = time.Minute
	}
	key := stepOf(ctx) + "\x00" + name
	s.mu.Lock()
	if c, ok := s.cache[key]; ok && time.Since(c.at) < ttl {
		s.mu.Unlock()
		return c.value, nil
	}
	s.mu.Unlock()
	out, err := s.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return "", fmt.Errorf("secret %s does not exist in AWS Secrets Manager (region %s): create it, or check %s", name, s.Client.Options().Region, cmp.Or(s.Where, "the worker's --aws-secrets-prefix"))
		}
		return "", fmt.Errorf("read secret %s from AWS Secrets Manager (region %s): %w", name, s.Client.Options().Region, err)
	}
	var value string
	switch {
	case out.SecretString != nil:
		value = *out.SecretString
	default:
		value = string(out.SecretBinary)
	}
	if ttl < 0 {
		return value, nil
	}
	s.mu.Lock()
	if s.cache == nil || len(s.cache) >= maxCached {
		s.cache = map[string]cached{}
	}
	s.cache[key] = cached{value: value, at: time.Now()}
	s.mu.Unlock()
	return value, nil
}

// maxCached bounds the values kept; past it the cache starts again.
const maxCached = 10000

// stepOf names the step (activity attempt) ctx runs, "" outside one.
func stepOf(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	info := activity.GetInfo(ctx)
	return fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)
}
