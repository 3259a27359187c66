package validate

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// vaultAccessKind is how a worker signs in to Vault.
var vaultAccessKind = pipeline.Kind{What: "Vault access type", Code: "unsupported-vault-access",
	Runs: []string{"TOKEN", "APP_ROLE", "K8s_AUTH"}, Reference: []string{"VAULT_AGENT", "AWS_IAM", "JWT"},
	Hint: "Gantry signs in to Vault with a token (authToken), an AppRole (appRoleId, secretId) or the worker's Kubernetes service account (useK8sAuth)"}

// vaultConnector checks a Vault connector: its URL, a KV engine, and the fields its access
// type needs.
func (c *checker) vaultConnector(v *pipeline.VaultConnectorSpec) {
	c.urlValue(pipeline.ValueAt(v.Node, "vaultUrl"), v.VaultURL)
	for k, value := range map[string]string{"useK8sAuth": v.UseK8sAuth, "useVaultAgent": v.UseVaultAgent, "useAwsIam": v.UseAwsIam,
		"useJwtAuth": v.UseJwtAuth, "readOnly": v.ReadOnly, "default": v.Default, "renewAppRoleToken": v.RenewAppRoleToken,
		"secretEngineManuallyConfigured": v.SecretEngineManuallyConfigured} {
		c.boolean(v.Node, k, value)
	}
	c.integer(v.Node, "renewalIntervalMinutes", v.RenewalIntervalMinutes, 0, true, "renewalIntervalMinutes")
	c.enum(v.Node, "secretEngineVersion", v.SecretEngineVersion, []string{"1", "2"}, "secretEngineVersion")
	if v.SecretEngineName == "" {
		c.diags.Errorf(c.pos(v.Node), "missing-field", "the Vault connector names no KV engine").
			SetHint("secretEngineName: secret, secretEngineVersion: 2 (the engine's mount and KV version)")
	}
	access := v.Access()
	at := c.pos(pipeline.ValueAt(v.Node, "accessType"))
	if v.AccessType == "" {
		at = c.pos(v.Node)
	}
	if !vaultAccessKind.Check(&c.diags, at, access) {
		return
	}
	switch access {
	case "TOKEN":
		c.required(v.Node, v.AuthToken, "authToken", "TOKEN Vault connector")
	case "APP_ROLE":
		c.required(v.Node, v.AppRoleID, "appRoleId", "APP_ROLE Vault connector")
		c.required(v.Node, v.SecretID, "secretId", "APP_ROLE Vault connector")
	case "K8s_AUTH":
		c.required(v.Node, v.VaultK8sAuthRole, "vaultK8sAuthRole", "K8s_AUTH Vault connector")
	}
	c.managerSelectors(v.Node, v.DelegateSelectors, "Vault")
}

// managerSelectors warns that a secret manager's delegate selectors are not acted on.
func (c *checker) managerSelectors(obj *yaml.Node, selectors []string, manager string) {
	if len(selectors) > 0 {
		c.diags.Warnf(c.pos(pipeline.ValueAt(obj, "delegateSelectors")), "ignored-field",
			"delegateSelectors of a %s connector are not used: the worker that runs a step reads the secrets it needs", manager).
			SetHint("give the workers that run such steps network access to %s", manager)
	}
}

// awsSMCredentialKind is how a worker signs in to AWS Secrets Manager.
var awsSMCredentialKind = pipeline.Kind{What: "AWS Secrets Manager credential type", Code: "unsupported-aws-credential",
	Runs: []string{"ManualConfig", "AssumeIAMRole", "AssumeSTSRole"}, Reference: []string{"OidcAuthentication"},
	Hint: "Gantry signs in to AWS Secrets Manager with keys (ManualConfig), the worker's own credentials (AssumeIAMRole), or a role they assume (AssumeSTSRole)"}

// awsSecretManager checks an AWS Secrets Manager connector: its flags, and the fields its
// credential type needs.
func (c *checker) awsSecretManager(a *pipeline.AwsSecretManagerSpec) {
	for k, value := range map[string]string{"default": a.Default, "usePutSecret": a.UsePutSecret, "forceDeleteWithoutRecovery": a.ForceDeleteWithoutRecovery,
		"executeOnDelegate": a.ExecuteOnDelegate, "ignoreTestConnection": a.IgnoreTestConnection} {
		c.boolean(a.Node, k, value)
	}
	c.integer(a.Node, "recoveryWindowInDays", a.RecoveryWindowInDays, 0, true, "recoveryWindowInDays")
	c.managerSelectors(a.Node, a.DelegateSelectors, "AWS Secrets Manager")
	cred := a.Credential
	if cred == nil || !awsSMCredentialKind.Check(&c.diags, c.pos(pipeline.ValueAt(cred.Node, "type")), cred.Type) {
		return
	}
	spec := cred.Spec
	if spec == nil {
		spec = &pipeline.AwsSMCredentialSpec{Node: cred.Node}
	}
	switch cred.Type {
	case "ManualConfig":
		c.required(spec.Node, spec.SecretKey, "secretKey", "ManualConfig credential")
		if spec.AccessKey == "" && spec.AccessKeyPlainText == "" {
			c.diags.Errorf(c.pos(spec.Node), "missing-field", "the ManualConfig credential names no access key").
				SetHint("accessKey: a secret holding the access key ID, or accessKeyPlainText: the ID itself")
		}
	case "AssumeSTSRole":
		c.required(spec.Node, spec.RoleArn, "roleArn", "AssumeSTSRole credential")
		c.integer(spec.Node, "assumeStsRoleDuration", spec.AssumeStsRoleDuration, 900, true, "assumeStsRoleDuration")
	}
}

// secretValueKind is how a SecretText secret holds its value.
var secretValueKind = pipeline.Kind{What: "secret value type", Code: "unsupported-secret-type",
	Runs: []string{"Inline", "Reference"}, Reference: []string{"CustomSecretManagerValues"}}

// secretText checks a SecretText secret's spec.
func (c *checker) secretText(s *pipeline.SecretTextSpec) {
	if !secretValueKind.Check(&c.diags, c.pos(pipeline.ValueAt(s.Node, "valueType")), s.ValueType) {
		return
	}
	if s.ValueType == "Reference" {
		c.required(s.Node, s.Value, "value", "Reference secret")
	}
}
