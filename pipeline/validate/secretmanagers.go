package validate

import (
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
	if len(v.DelegateSelectors) > 0 {
		c.diags.Warnf(c.pos(pipeline.ValueAt(v.Node, "delegateSelectors")), "ignored-field",
			"delegateSelectors of a Vault connector are not used: the worker that runs a step reads the secrets it needs").
			SetHint("give the workers that run such steps network access to Vault")
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
