package secrets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/kubetest"
	"github.com/gantry-cd/gantry/internal/vaulttest"
	"github.com/gantry-cd/gantry/plan"
)

// A K8s_AUTH Vault connector signs in with a service account token, which Vault checks with a
// real Kubernetes API server's TokenReview: the token of a service account bound to the role
// reads the secret; another account's is refused with Vault's reason.
func TestVaultKubernetesSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Vault and a Kubernetes control plane")
	}
	dir := t.TempDir()
	cluster, err := kubetest.Start(filepath.Join(dir, "k8s"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	v, err := vaulttest.Start(dir)
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
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := cluster.Kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(out)
	}
	for _, sa := range []string{"deployer", "intruder", "reviewer"} {
		kubectl("create", "serviceaccount", sa, "-n", "default")
	}
	// Vault asks the API server whether a token is valid as an account allowed to review tokens.
	kubectl("create", "clusterrolebinding", "vault-reviewer", "--clusterrole=system:auth-delegator", "--serviceaccount=default:reviewer")
	token := func(sa string) string {
		t.Helper()
		path := filepath.Join(dir, sa+".jwt")
		must(os.WriteFile(path, []byte(kubectl("create", "token", sa, "-n", "default", "--duration=1h")+"\n"), 0o600))
		return path
	}
	ca, err := os.ReadFile(filepath.Join(dir, "k8s", "pki", "apiserver.crt"))
	must(err)
	must(v.EnableAuth("kubernetes"))
	reviewer, err := os.ReadFile(token("reviewer"))
	must(err)
	_, err = v.Root.Logical().Write("auth/kubernetes/config", map[string]any{"kubernetes_host": cluster.Server,
		"kubernetes_ca_cert": string(ca), "token_reviewer_jwt": strings.TrimSpace(string(reviewer)), "disable_local_ca_jwt": true})
	must(err)
	must(v.Policy("reader", "secret/data/*"))
	_, err = v.Root.Logical().Write("auth/kubernetes/role/deployer", map[string]any{"bound_service_account_names": "deployer",
		"bound_service_account_namespaces": "default", "token_policies": "reader", "token_ttl": "1h"})
	must(err)
	must(v.Put("secret", 2, "apps/web/db", map[string]any{"password": "k8s-read-password"}))

	r := secrets.Routed(secrets.Map{}, nil)
	manager := func(tokenPath string) plan.SecretManager {
		return plan.SecretManager{ID: "vault_k8s", Type: "Vault", URL: v.URL, Engine: "secret", EngineVersion: 2, Auth: "K8s_AUTH",
			K8sRole: "deployer", K8sTokenPath: tokenPath}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = contract.ContextWithSecretRoutes(ctx, map[string]plan.SecretRoute{
		"db":     {Manager: manager(token("deployer")), Path: "apps/web/db", Key: "password"},
		"stolen": {Manager: manager(token("intruder")), Path: "apps/web/db", Key: "password"},
	})
	if got, err := r.Resolve(ctx, "db"); err != nil || got != "k8s-read-password" {
		t.Fatalf("as deployer: %q, %v", got, err)
	}
	_, err = r.Resolve(ctx, "stolen")
	if err == nil || !strings.Contains(err.Error(), "sign in at auth/kubernetes/login") || !strings.Contains(err.Error(), "Vault answered 403") {
		t.Fatalf("as another account: %v", err)
	}
}
