package secrets_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/vaulttest"
	"github.com/gantry-cd/gantry/plan"
)

// The Vault connector against a real Vault dev server: KV v1 and v2, token and AppRole sign-in,
// renewal, a revoked token, a missing field, an unreachable and a sealed Vault. Secrets with no
// route resolve through the default store; those with one never fall back to it.
func TestVaultConnector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Vault")
	}
	v, err := vaulttest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(v.MountKV("kv1", 1))
	must(v.Put("secret", 2, "app/db", map[string]any{"password": "v2-db-password", "user": "app"}))
	must(v.Put("kv1", 1, "app/api", map[string]any{"value": "v1-api-key"}))
	must(v.Policy("reader", "secret/data/*", "kv1/*"))
	token, err := v.Token("reader", time.Hour)
	must(err)
	roleID, secretID, err := v.AppRole("deployer", "reader", 2*time.Second)
	must(err)

	def := secrets.Map{"vault_token": token, "approle_secret": secretID, "plain": "from-the-default-store", "db": "not-this-one"}
	r := secrets.Routed(def, nil).(*secrets.Router)
	r.Managers["Vault"].(*secrets.Vault).Minute = time.Second
	byToken := plan.SecretManager{ID: "vault", Type: "Vault", URL: v.URL, Engine: "secret", EngineVersion: 2, Auth: "TOKEN", TokenRef: "vault_token"}
	kv1 := byToken
	kv1.ID, kv1.Engine, kv1.EngineVersion = "vault_kv1", "kv1", 1
	byRole := plan.SecretManager{ID: "vault_role", Type: "Vault", URL: v.URL, Engine: "secret", EngineVersion: 2, Auth: "APP_ROLE", AppRoleID: roleID, SecretIDRef: "approle_secret"}
	ctx := contract.ContextWithSecretRoutes(context.Background(), map[string]plan.SecretRoute{
		"db":          {Manager: byToken, Path: "app/db", Key: "password"},
		"db_user":     {Manager: byToken, Path: "/app/db", Key: "user"},
		"api":         {Manager: kv1, Path: "app/api"},
		"role_db":     {Manager: byRole, Path: "app/db", Key: "password"},
		"no_field":    {Manager: byToken, Path: "app/db", Key: "pasword"},
		"no_secret":   {Manager: byToken, Path: "app/nothing", Key: "x"},
		"unreachable": {Manager: plan.SecretManager{ID: "gone", Type: "Vault", URL: "http://127.0.0.1:1", Engine: "secret", EngineVersion: 2, Auth: "TOKEN", TokenRef: "vault_token"}, Path: "app/db", Key: "password"},
	})
	read := func(id string) (string, error) { return r.Resolve(ctx, id) }
	expect := func(id, want string) {
		t.Helper()
		if got, err := read(id); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", id, got, err, want)
		}
	}
	refused := func(id string, says ...string) {
		t.Helper()
		_, err := read(id)
		if err == nil {
			t.Fatalf("%s: read, want an error", id)
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: %v; want it to say %q", id, err, s)
			}
		}
		for _, secret := range []string{token, secretID, "v2-db-password"} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("%s: the error shows a secret: %v", id, err)
			}
		}
	}

	expect("db", "v2-db-password")
	expect("account.db", "v2-db-password") // scoped references name the same file
	expect("db_user", "app")
	expect("api", "v1-api-key")
	expect("plain", "from-the-default-store")
	refused("no_field", `no field "pasword"`, "password, user")
	refused("no_secret", "secret/app/nothing does not exist")
	refused("unreachable", "Vault connector gone", "Vault did not answer")

	// AppRole: its tokens live 2s; a read after that signs in again.
	expect("role_db", "v2-db-password")
	time.Sleep(3 * time.Second)
	expect("role_db", "v2-db-password")

	// Renewal: a 3s token read every second for 6s lives on when renewed every "minute" (1s
	// here), and dies without.
	short, err := v.Token("reader", 3*time.Second)
	must(err)
	unrenewed, err := v.Token("reader", 3*time.Second)
	must(err)
	def["short"], def["unrenewed"] = short, unrenewed
	renewing := byToken
	renewing.ID, renewing.TokenRef, renewing.RenewalMinutes = "vault_renewing", "short", 1
	lapsing := byToken
	lapsing.ID, lapsing.TokenRef = "vault_lapsing", "unrenewed"
	ctx = contract.ContextWithSecretRoutes(ctx, map[string]plan.SecretRoute{
		"renewed": {Manager: renewing, Path: "app/db", Key: "password"},
		"lapsed":  {Manager: lapsing, Path: "app/db", Key: "password"},
		"db":      {Manager: byToken, Path: "app/db", Key: "password"},
	})
	for range 6 {
		expect("renewed", "v2-db-password")
		time.Sleep(time.Second)
	}
	refused("lapsed", "Vault answered 403", "permission denied")

	// A revoked token fails the read with Vault's reason; the default store's "db" is never used.
	must(v.Revoke(token))
	refused("db", "Vault connector vault", "Vault answered 403", "permission denied")

	must(v.Seal())
	refused("renewed", "Vault answered 503", "sealed")
}
