package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/vaulttest"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// vaultPipeline reads one secret kept in Vault in two steps: one on the fast path (a local
// activity) and one regular activity (a timeout above the fast path's), as an environment
// variable and inline.
const vaultPipeline = `pipeline:
  name: vault
  identifier: ID
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: fast
                  identifier: fast
                  timeout: 30s
                  spec: &use
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          echo "password is $PASS"
                          echo "inline <+secrets.getValue("web_db")>"
                          LEN=${#PASS}
                          SUM=$(printf %s "$PASS" | sha256sum | cut -c1-12)
                    environmentVariables:
                      - {name: PASS, type: Secret, value: web_db}
                    outputVariables:
                      - {name: len, type: String, value: LEN}
                      - {name: sum, type: String, value: SUM}
              - step:
                  type: ShellScript
                  name: regular
                  identifier: regular
                  timeout: 5m
                  spec: *use
`

// A pipeline reads a secret its secret: file keeps in a real Vault (KV v2, token sign-in), on
// both kinds of activity, masked in the log and absent from every history event; once the token
// is revoked, the step fails with Vault's reason, and the worker's default store, which holds a
// secret of the same name, is not used instead.
func TestVaultSecretsInAPipeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v, err := vaulttest.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop()
	const password = "vault-kept-Pa55word"
	if err := v.Put("secret", 2, "apps/web/db", map[string]any{"password": password}); err != nil {
		t.Fatal(err)
	}
	if err := v.Policy("web", "secret/data/apps/web/*"); err != nil {
		t.Fatal(err)
	}
	token, err := v.Token("web", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for id, value := range map[string]string{"vault_token_e2e": token, "web_db": "the-default-store-must-not-answer"} {
		if err := os.Setenv(secrets.EnvName(id), value); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Unsetenv(secrets.EnvName(id)) })
	}
	writeFile(t, filepath.Join(dir, "vault.yaml"), fmt.Sprintf(`connector:
  name: Vault
  identifier: vault
  type: Vault
  spec:
    vaultUrl: %s
    accessType: TOKEN
    authToken: vault_token_e2e
    secretEngineName: secret
    secretEngineVersion: 2
    renewalIntervalMinutes: 10
`, v.URL))
	writeFile(t, filepath.Join(dir, "db.yaml"), `secret:
  type: SecretText
  name: DB password
  identifier: web_db
  spec:
    secretManagerIdentifier: vault
    valueType: Reference
    value: /apps/web/db#password
`)
	file := filepath.Join(dir, "pipeline.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(id string) (string, *workflows.PipelineResult) {
		writeFile(t, file, strings.Replace(vaultPipeline, "identifier: ID", "identifier: "+id, 1))
		exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := env.starter.Result(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return exec.ID, res
	}

	id, res := run("vault_read")
	if res.Status != status.Succeeded {
		t.Fatalf("%s: %s %+v", id, res.Status, res.Tree.Find("s.fast").Failure)
	}
	for _, step := range []string{"s.fast", "s.regular"} {
		outs := res.Tree.Find(step).Outputs["outputVariables"].(map[string]any)
		if outs["len"] != fmt.Sprint(len(password)) || outs["sum"] != fmt.Sprintf("%x", sha256.Sum256([]byte(password)))[:12] {
			t.Errorf("%s read another value: %v", step, outs)
		}
		var b strings.Builder
		if err := env.logs.Copy(ctx, &b, id, step); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), password) || !strings.Contains(b.String(), "password is "+secrets.Mask) || !strings.Contains(b.String(), "inline "+secrets.Mask) {
			t.Errorf("%s: log not masked:\n%s", step, b.String())
		}
	}
	for _, wid := range []string{id, id + "/s"} {
		iter := env.client.GetWorkflowHistory(ctx, wid, "", false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			if s := ev.String(); strings.Contains(s, password) || strings.Contains(s, token) {
				t.Fatalf("%s: a secret in history event %d (%s)", wid, ev.GetEventId(), ev.GetEventType())
			}
		}
	}

	if err := v.Revoke(token); err != nil {
		t.Fatal(err)
	}
	id, res = run("vault_revoked")
	f := res.Tree.Find("s.fast").Failure
	if res.Status != status.Failed || f == nil || !strings.Contains(f.Message, "Vault answered 403: permission denied") || strings.Contains(f.Message, token) {
		t.Fatalf("%s with a revoked token: %s %+v", id, res.Status, f)
	}
}
