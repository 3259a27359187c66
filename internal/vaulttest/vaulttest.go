// Package vaulttest starts a real HashiCorp Vault server for tests: the vault binary that
// hack/vault builds, in dev mode (in memory, unsealed, KV v2 at secret/) on a free loopback
// port, with helpers that set it up as an operator would.
package vaulttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	vault "github.com/hashicorp/vault/api"

	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/testproc"
)

// RootToken is the dev server's root token.
const RootToken = "gantry-test-root"

// Server is a running Vault dev server.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	Root *vault.Client
	*testproc.Daemon
}

// Start builds Vault if its cache is cold (once, about 15 minutes on 2 cores) and starts a dev
// server whose log is written in dir.
func Start(dir string) (*Server, error) {
	bin, err := testproc.Built("vault")
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(bin, "server", "-dev", "-dev-root-token-id="+RootToken, "-dev-listen-address="+addr, "-dev-no-store-token")
	cmd.Env = append(os.Environ(), "HOME="+dir, "VAULT_ADDR=", "VAULT_TOKEN=")
	d, err := testproc.StartDaemon("vault", filepath.Join(dir, "vault.log"), cmd)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, Daemon: d}
	cfg := vault.DefaultConfig()
	cfg.Address = s.URL
	if s.Root, err = vault.NewClient(cfg); err != nil {
		d.Stop()
		return nil, err
	}
	s.Root.SetToken(RootToken)
	unsealed := func() error {
		h, err := s.Root.Sys().Health()
		if err == nil && (!h.Initialized || h.Sealed) {
			err = fmt.Errorf("initialized %t, sealed %t", h.Initialized, h.Sealed)
		}
		return err
	}
	if err := d.Ready(60*time.Second, 100*time.Millisecond, unsealed); err != nil {
		return nil, err
	}
	return s, nil
}

// MountKV mounts a KV engine of version 1 or 2 at path.
func (s *Server) MountKV(path string, version int) error {
	return s.Root.Sys().Mount(path, &vault.MountInput{Type: "kv", Options: map[string]string{"version": strconv.Itoa(version)}})
}

// Put writes a secret's fields at path in the KV engine mounted at mount.
func (s *Server) Put(mount string, version int, path string, data map[string]any) error {
	ctx := context.Background()
	if version == 1 {
		return s.Root.KVv1(mount).Put(ctx, path, data)
	}
	_, err := s.Root.KVv2(mount).Put(ctx, path, data)
	return err
}

// Policy writes a policy that may read everything under the KV paths given (a v2 engine's
// data/ paths included).
func (s *Server) Policy(name string, paths ...string) error {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "path %q { capabilities = [\"read\"] }\n", p)
	}
	return s.Root.Sys().PutPolicy(name, b.String())
}

// Token creates a token with policy, renewable, that lives ttl unless renewed.
func (s *Server) Token(policy string, ttl time.Duration) (string, error) {
	sec, err := s.Root.Auth().Token().Create(&vault.TokenCreateRequest{Policies: []string{policy}, TTL: ttl.String(), ExplicitMaxTTL: "1h", Renewable: boolPtr(true)})
	if err != nil {
		return "", err
	}
	return sec.Auth.ClientToken, nil
}

// Revoke revokes a token.
func (s *Server) Revoke(token string) error {
	return s.Root.Auth().Token().RevokeTree(token)
}

// AppRole enables AppRole sign-in (once) and makes role with policy, its tokens living ttl;
// it returns the role ID and a secret ID.
func (s *Server) AppRole(role, policy string, ttl time.Duration) (string, string, error) {
	if err := s.EnableAuth("approle"); err != nil {
		return "", "", err
	}
	if _, err := s.Root.Logical().Write("auth/approle/role/"+role, map[string]any{"token_policies": policy, "token_ttl": ttl.String(), "token_max_ttl": ttl.String()}); err != nil {
		return "", "", err
	}
	r, err := s.Root.Logical().Read("auth/approle/role/" + role + "/role-id")
	if err != nil {
		return "", "", err
	}
	sid, err := s.Root.Logical().Write("auth/approle/role/"+role+"/secret-id", nil)
	if err != nil {
		return "", "", err
	}
	return r.Data["role_id"].(string), sid.Data["secret_id"].(string), nil
}

// EnableAuth enables an auth method at its default path, once.
func (s *Server) EnableAuth(kind string) error {
	auths, err := s.Root.Sys().ListAuth()
	if err != nil {
		return err
	}
	if _, ok := auths[kind+"/"]; ok {
		return nil
	}
	return s.Root.Sys().EnableAuthWithOptions(kind, &vault.EnableAuthOptions{Type: kind})
}

// Seal seals the server: every read fails until it is unsealed (a dev server cannot be).
func (s *Server) Seal() error { return s.Root.Sys().Seal() }

func boolPtr(b bool) *bool { return &b }
