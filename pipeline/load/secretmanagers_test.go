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

const awsSMConnector = `connector:
  name: AWS SM
  identifier: aws_sm
  type: AwsSecretManager
  spec:
    region: eu-central-1
    secretNamePrefix: harness
    credential:
      type: AssumeSTSRole
      spec:
        roleArn: arn:aws:iam::210987654321:role/reader
        externalId: ext-7
        assumeStsRoleDuration: 900
    usePutSecret: false
    default: false
`

// A secret kept in an AWS Secrets Manager connector carries its route: the region and sign-in
// (a role to assume; keys named, never held), the secret's name (under the prefix when written
// inline) and the JSON key; bad connectors are reported at their lines.
func TestAwsSecretManagerRoutes(t *testing.T) {
	step := `              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  spec: {shell: Bash, source: {type: Inline, spec: {script: 'echo <+secrets.getValue("db_password")> <+secrets.getValue("api_key")>'}}}
`
	ref := strings.Replace(vaultSecret, "secretManagerIdentifier: vault", "secretManagerIdentifier: aws_sm", 1)
	inline := strings.NewReplacer("identifier: db_password", "identifier: api_key", "valueType: Reference", "valueType: Inline", "    value: /apps/web/db#password\n", "").Replace(ref)
	r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", step), "sm.yaml": awsSMConnector, "db.yaml": ref, "api.yaml": inline}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() {
		t.Fatal(r.Diags.Render(r.Sources))
	}
	db, api := r.Plan.Secrets["db_password"], r.Plan.Secrets["api_key"]
	if a := db.Manager.Aws; db.Manager.Type != "AwsSecretManager" || a == nil || a.Region != "eu-central-1" || a.RoleARN != "arn:aws:iam::210987654321:role/reader" ||
		a.ExternalID != "ext-7" || a.Credential != "InheritFromDelegate" || db.Path != "/apps/web/db" || db.Key != "password" {
		t.Errorf("db_password: %+v %+v", db, a)
	}
	if api.Path != "harness/api_key" || api.Key != "" {
		t.Errorf("api_key: %+v", api)
	}
	manual := strings.Replace(awsSMConnector, `      type: AssumeSTSRole
      spec:
        roleArn: arn:aws:iam::210987654321:role/reader
        externalId: ext-7
        assumeStsRoleDuration: 900`, `      type: ManualConfig
      spec:
        accessKeyPlainText: AKIDSM
        secretKey: sm_secret_key`, 1)
	r = loadIn(t, map[string]string{"pipeline.yaml": customStage("", step), "sm.yaml": manual, "db.yaml": ref, "api.yaml": inline}, "pipeline.yaml", load.Options{ForRun: true})
	if a := r.Plan.Secrets["db_password"].Manager.Aws; !r.OK() || a.Credential != "ManualConfig" || a.AccessKey != "AKIDSM" || a.SecretKeyRef != "sm_secret_key" {
		t.Fatalf("ManualConfig: %+v\n%s", a, r.Diags.Render(r.Sources))
	}
	for _, c := range []struct{ name, connector, line, want string }{
		{"oidc", strings.Replace(awsSMConnector, "type: AssumeSTSRole", "type: OidcAuthentication", 1), "sm.yaml:9:", "unsupported"},
		{"no role", strings.Replace(awsSMConnector, "        roleArn: arn:aws:iam::210987654321:role/reader\n", "", 1), "sm.yaml:", `missing required field "roleArn"`},
		{"no secret key", strings.Replace(manual, "        secretKey: sm_secret_key\n", "", 1), "sm.yaml:", `missing required field "secretKey"`},
		{"no region", strings.Replace(awsSMConnector, "    region: eu-central-1\n", "", 1), "sm.yaml:", `"region"`},
		{"gcp", "connector:\n  name: g\n  identifier: g\n  type: GcpSecretManager\n  spec: {credentialsRef: g}\n", "sm.yaml:4:", "connector type GcpSecretManager"},
	} {
		r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", step), "sm.yaml": c.connector}, "sm.yaml", load.Options{ForRun: true})
		text := r.Diags.Render(r.Sources)
		if r.OK() || !strings.Contains(text, c.want) || !strings.Contains(text, c.line) {
			t.Errorf("%s: want %q at %s:\n%s", c.name, c.want, c.line, text)
		}
	}
}
