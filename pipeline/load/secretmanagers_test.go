package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

const vaultConnector = `connector:
  name: Vault
  identifier: vault
  type: Vault
  spec:
    vaultUrl: https://vault.example.com:8200
    basePath: harness
    accessType: APP_ROLE
    appRoleId: 4a3b-role
    secretId: account.vault_secret_id
    secretEngineName: kv
    secretEngineVersion: 2
    renewalIntervalMinutes: 10
    namespace: team-a
    readOnly: true
`

const vaultSecret = `secret:
  type: SecretText
  name: DB password
  identifier: db_password
  spec:
    secretManagerIdentifier: vault
    valueType: Reference
    value: /apps/web/db#password
`

// A pipeline that reads a secret kept in Vault carries its route: the connector's address,
// engine and sign-in (the AppRole secret ID named, never held), the path and the field.
func TestVaultSecretRoutes(t *testing.T) {
	step := `              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  spec: {shell: Bash, source: {type: Inline, spec: {script: 'echo <+secrets.getValue("db_password")>'}}}
`
	inline := strings.NewReplacer("identifier: db_password", "identifier: api_key", "valueType: Reference", "valueType: Inline", "    value: /apps/web/db#password\n", "").Replace(vaultSecret)
	builtin := strings.NewReplacer("identifier: db_password", "identifier: other", "secretManagerIdentifier: vault", "secretManagerIdentifier: account.harnessSecretManager").Replace(vaultSecret)
	r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", step), "vault.yaml": vaultConnector, "db.yaml": vaultSecret, "api.yaml": inline, "other.yaml": builtin},
		"pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() {
		t.Fatal(r.Diags.Render(r.Sources))
	}
	m := plan.SecretManager{ID: "vault", Type: "Vault", URL: "https://vault.example.com:8200", Engine: "kv", EngineVersion: 2, BasePath: "harness",
		Namespace: "team-a", Auth: "APP_ROLE", AppRoleID: "4a3b-role", SecretIDRef: "account.vault_secret_id", RenewalMinutes: 10}
	want := map[string]plan.SecretRoute{
		"db_password": {Manager: m, Path: "apps/web/db", Key: "password"},
		"api_key":     {Manager: m, Path: "harness/api_key", Key: "value"},
	}
	got := r.Plan.Secrets
	if len(got) != len(want) {
		t.Fatalf("routes %+v, want %+v", got, want)
	}
	for id, w := range want {
		g := got[id]
		if g.Path != w.Path || g.Key != w.Key || g.Manager.URL != w.Manager.URL || g.Manager.SecretIDRef != w.Manager.SecretIDRef ||
			g.Manager.Engine != w.Manager.Engine || g.Manager.EngineVersion != 2 || g.Manager.Auth != "APP_ROLE" || g.Manager.Namespace != "team-a" ||
			g.Manager.RenewalMinutes != 10 || g.Manager.BasePath != "harness" || g.Manager.AppRoleID != "4a3b-role" {
			t.Errorf("%s: %+v, want %+v", id, g, w)
		}
	}
}

// Vault connectors and text secrets, each problem at its line: a secret whose manager does not
// exist (missing-entity) or is no secret manager; an access type Gantry cannot sign in with, and
// other secret managers, unsupported by name; a connector without the fields its access type
// needs, or with a KV version that does not exist.
func TestVaultConnectorsBadInput(t *testing.T) {
	step := `              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  spec: {shell: Bash, source: {type: Inline, spec: {script: 'echo <+secrets.getValue("db_password")>'}}}
`
	for _, c := range []struct {
		name      string
		files     map[string]string
		file      string
		line      string
		want      string
		unsupport bool
	}{
		{"missing manager", map[string]string{"db.yaml": vaultSecret}, "pipeline.yaml", "db.yaml:6:", `connector "vault" is not defined`, false},
		{"not a manager", map[string]string{"db.yaml": vaultSecret, "vault.yaml": jiraConnector}, "pipeline.yaml", "", "", false},
		{"vault agent", map[string]string{"vault.yaml": strings.Replace(vaultConnector, "accessType: APP_ROLE", "accessType: VAULT_AGENT", 1)}, "vault.yaml", "vault.yaml:8:", "Vault access type VAULT_AGENT", true},
		{"azure key vault", map[string]string{"kv.yaml": "connector:\n  name: kv\n  identifier: kv\n  type: AzureKeyVault\n  spec: {vaultName: x}\n"}, "kv.yaml", "kv.yaml:4:", "connector type AzureKeyVault", true},
		{"no secret id", map[string]string{"vault.yaml": strings.Replace(vaultConnector, "    secretId: account.vault_secret_id\n", "", 1)}, "vault.yaml", "vault.yaml:6:", `missing required field "secretId"`, false},
		{"kv version", map[string]string{"vault.yaml": strings.Replace(vaultConnector, "secretEngineVersion: 2", "secretEngineVersion: 3", 1)}, "vault.yaml", "vault.yaml:12:", `secretEngineVersion "3" is not one of 1, 2`, false},
		{"no value", map[string]string{"db.yaml": strings.Replace(vaultSecret, "    value: /apps/web/db#password\n", "", 1)}, "db.yaml", "db.yaml:6:", `missing required field "value"`, false},
	} {
		files := map[string]string{"pipeline.yaml": customStage("", step)}
		for k, v := range c.files {
			files[k] = v
		}
		r := loadIn(t, files, c.file, load.Options{ForRun: true})
		text := r.Diags.Render(r.Sources)
		if c.name == "not a manager" {
			c.line, c.want = "db.yaml:6:", "names connector vault, a Jira connector, as its secret manager"
			files["vault.yaml"] = strings.Replace(jiraConnector, "identifier: jira", "identifier: vault", 1)
			r = loadIn(t, files, c.file, load.Options{ForRun: true})
			text = r.Diags.Render(r.Sources)
		}
		if r.OK() || !strings.Contains(text, c.want) || !strings.Contains(text, c.line) || (c.unsupport && !strings.Contains(text, "unsupported")) {
			t.Errorf("%s: want %q at %s:\n%s", c.name, c.want, c.line, text)
		}
	}
}
