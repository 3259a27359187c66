package secrets

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	vault "github.com/hashicorp/vault/api"

	"github.com/gantry-cd/gantry/plan"
)

// Vault reads KV secrets (engine versions 1 and 2) from HashiCorp Vault or OpenBao for secret
// manager connectors of type Vault. It keeps one signed-in client per connector, renews its
// token every renewalIntervalMinutes and signs in again (AppRole, Kubernetes) when Vault
// refuses an expired token. Values are never kept: each Resolve reads Vault.
type Vault struct {
	// Creds resolves the connectors' own credentials (the token, the AppRole secret ID): the
	// worker's default store.
	Creds Resolver
	// Minute is the unit of renewalIntervalMinutes (tests shorten it); 0 is a minute.
	Minute time.Duration

	mu       sync.Mutex
	sessions map[string]*vaultSession
}

type vaultSession struct {
	mu      sync.Mutex
	client  *vault.Client
	renewed time.Time
}

// Read reads the field route.Key of the secret at route.Path.
func (v *Vault) Read(ctx context.Context, route plan.SecretRoute) (string, error) {
	m := route.Manager
	s := v.session(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		if err := v.signIn(ctx, s, m); err != nil {
			return "", err
		}
	} else if every := v.renewal(m); every > 0 && time.Since(s.renewed) >= every {
		// A renewal that fails leaves the read to say why (a revoked token: 403).
		if _, err := s.client.Auth().Token().RenewSelfWithContext(ctx, 0); err == nil {
			s.renewed = time.Now()
		}
	}
	value, err := v.read(ctx, s.client, route)
	if err != nil && m.Auth != "TOKEN" && status(err) == http.StatusForbidden {
		// The token from the last sign-in expired or was revoked: sign in once more.
		if err := v.signIn(ctx, s, m); err != nil {
			return "", err
		}
		value, err = v.read(ctx, s.client, route)
	}
	return value, err
}

func (v *Vault) session(m plan.SecretManager) *vaultSession {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sessions == nil {
		v.sessions = map[string]*vaultSession{}
	}
	// A connector edited between runs (another URL, another role) gets a session of its own.
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s|%s", m.ID, m.URL, m.Namespace, m.Auth, m.TokenRef, m.AppRoleID, m.SecretIDRef,
		m.K8sRole, m.K8sAuthPath, m.K8sTokenPath)
	s := v.sessions[key]
	if s == nil {
		s = &vaultSession{}
		v.sessions[key] = s
	}
	return s
}

func (v *Vault) renewal(m plan.SecretManager) time.Duration {
	unit := v.Minute
	if unit == 0 {
		unit = time.Minute
	}
	return time.Duration(m.RenewalMinutes) * unit
}

// signIn makes s's client and signs it in as the connector says.
func (v *Vault) signIn(ctx context.Context, s *vaultSession, m plan.SecretManager) error {
	cfg := vault.DefaultConfig()
	cfg.Address = m.URL
	cfg.MaxRetries = 2
	cfg.Timeout = 30 * time.Second
	c, err := vault.NewClient(cfg)
	if err != nil {
		return fmt.Errorf("Vault connector %s: %v", m.ID, err)
	}
	c.ClearToken() // never VAULT_TOKEN from the worker's environment: the connector decides
	if m.Namespace != "" {
		c.SetNamespace(m.Namespace)
	}
	switch m.Auth {
	case "TOKEN":
		token, err := v.Creds.Resolve(ctx, m.TokenRef)
		if err != nil {
			return fmt.Errorf("Vault connector %s: its token: %v", m.ID, err)
		}
		c.SetToken(token)
	case "APP_ROLE":
		secretID, err := v.Creds.Resolve(ctx, m.SecretIDRef)
		if err != nil {
			return fmt.Errorf("Vault connector %s: its AppRole secret ID: %v", m.ID, err)
		}
		if err := login(ctx, c, m, "auth/approle/login", map[string]any{"role_id": m.AppRoleID, "secret_id": secretID}); err != nil {
			return err
		}
	case "K8s_AUTH":
		path := m.K8sTokenPath
		if path == "" {
			path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}
		jwt, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("Vault connector %s: read the worker's service account token: %v", m.ID, err)
		}
		mount := strings.Trim(m.K8sAuthPath, "/")
		if mount == "" {
			mount = "kubernetes"
		}
		if !strings.HasPrefix(mount, "auth/") {
			mount = "auth/" + mount
		}
		if err := login(ctx, c, m, mount+"/login", map[string]any{"role": m.K8sRole, "jwt": strings.TrimSpace(string(jwt))}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("Vault connector %s: access type %q cannot sign in here", m.ID, m.Auth)
	}
	s.client, s.renewed = c, time.Now()
	return nil
}

func login(ctx context.Context, c *vault.Client, m plan.SecretManager, path string, body map[string]any) error {
	sec, err := c.Logical().WriteWithContext(ctx, path, body)
	if err != nil {
		return fmt.Errorf("Vault connector %s: sign in at %s: %s", m.ID, path, reason(err))
	}
	if sec == nil || sec.Auth == nil || sec.Auth.ClientToken == "" {
		return fmt.Errorf("Vault connector %s: sign in at %s gave no token", m.ID, path)
	}
	c.SetToken(sec.Auth.ClientToken)
	return nil
}

// read reads one field of a KV secret.
func (v *Vault) read(ctx context.Context, c *vault.Client, r plan.SecretRoute) (string, error) {
	m := r.Manager
	engine := strings.Trim(m.Engine, "/")
	path := strings.Trim(r.Path, "/")
	var sec *vault.KVSecret
	var err error
	if m.EngineVersion == 1 {
		sec, err = c.KVv1(engine).Get(ctx, path)
	} else {
		sec, err = c.KVv2(engine).Get(ctx, path)
	}
	where := fmt.Sprintf("Vault connector %s: secret %s/%s", m.ID, engine, path)
	if errors.Is(err, vault.ErrSecretNotFound) || (err == nil && sec == nil) {
		return "", fmt.Errorf("%s does not exist (KV version %d engine %q)", where, max(m.EngineVersion, 1), engine)
	}
	if err != nil {
		return "", &vaultError{msg: where + ": " + reason(err), status: status(err)}
	}
	key := r.Key
	if key == "" {
		key = "value"
	}
	val, ok := sec.Data[key]
	if !ok {
		keys := make([]string, 0, len(sec.Data))
		for k := range sec.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return "", fmt.Errorf("%s has no field %q (it has: %s); name the field after # in the reference", where, key, strings.Join(keys, ", "))
	}
	if s, ok := val.(string); ok {
		return s, nil
	}
	return fmt.Sprint(val), nil
}

// vaultError is a read Vault refused, with its HTTP status (0: no answer).
type vaultError struct {
	msg    string
	status int
}

func (e *vaultError) Error() string { return e.msg }

// status is the HTTP status of a Vault error (0: no answer).
func status(err error) int {
	var ve *vaultError
	if errors.As(err, &ve) {
		return ve.status
	}
	var re *vault.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// reason is what Vault said, on one line: its status and errors, or why it did not answer.
func reason(err error) string {
	var re *vault.ResponseError
	if errors.As(err, &re) {
		// Vault lists its errors, several at times in one multi-line string.
		var said []string
		for _, e := range re.Errors {
			for _, line := range strings.Split(e, "\n") {
				line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
				if line != "" && !strings.HasSuffix(line, "errors occurred:") && !strings.HasSuffix(line, "error occurred:") {
					said = append(said, line)
				}
			}
		}
		msg := strings.Join(said, "; ")
		if msg == "" {
			msg = http.StatusText(re.StatusCode)
		}
		return fmt.Sprintf("Vault answered %d: %s", re.StatusCode, msg)
	}
	return "Vault did not answer: " + strings.ReplaceAll(err.Error(), "\n", " ")
}
