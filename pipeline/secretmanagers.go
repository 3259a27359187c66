package pipeline

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// VaultConnectorSpec is a HashiCorp Vault (or OpenBao) secret manager connector: where Vault is,
// the KV engine its secrets live in, and how a worker signs in.
type VaultConnectorSpec struct {
	Node     *yaml.Node `yaml:"-"`
	VaultURL string     `yaml:"vaultUrl" gantry:"required"`
	BasePath string     `yaml:"basePath"`
	// AccessType is TOKEN, APP_ROLE, K8s_AUTH, VAULT_AGENT, AWS_IAM or JWT; older connectors
	// say it with the use* flags or an appRoleId instead.
	AccessType                     string   `yaml:"accessType"`
	AuthToken                      string   `yaml:"authToken"`
	AppRoleID                      string   `yaml:"appRoleId"`
	SecretID                       string   `yaml:"secretId"`
	RenewAppRoleToken              string   `yaml:"renewAppRoleToken"`
	UseK8sAuth                     string   `yaml:"useK8sAuth"`
	VaultK8sAuthRole               string   `yaml:"vaultK8sAuthRole"`
	ServiceAccountTokenPath        string   `yaml:"serviceAccountTokenPath"`
	K8sAuthEndpoint                string   `yaml:"k8sAuthEndpoint"`
	UseVaultAgent                  string   `yaml:"useVaultAgent"`
	SinkPath                       string   `yaml:"sinkPath"`
	UseAwsIam                      string   `yaml:"useAwsIam"`
	AwsRegion                      string   `yaml:"awsRegion"`
	VaultAwsIamRole                string   `yaml:"vaultAwsIamRole"`
	XVaultAwsIamServerID           string   `yaml:"xvaultAwsIamServerId"`
	UseJwtAuth                     string   `yaml:"useJwtAuth"`
	VaultJwtAuthRole               string   `yaml:"vaultJwtAuthRole"`
	VaultJwtAuthPath               string   `yaml:"vaultJwtAuthPath"`
	Namespace                      string   `yaml:"namespace"`
	RenewalIntervalMinutes         string   `yaml:"renewalIntervalMinutes"`
	SecretEngineManuallyConfigured string   `yaml:"secretEngineManuallyConfigured"`
	SecretEngineName               string   `yaml:"secretEngineName"`
	SecretEngineVersion            string   `yaml:"secretEngineVersion"`
	ReadOnly                       string   `yaml:"readOnly"`
	Default                        string   `yaml:"default"`
	DelegateSelectors              []string `yaml:"delegateSelectors"`
}

// Access is the connector's access type, from accessType or, in older connectors, the flags.
func (v *VaultConnectorSpec) Access() string {
	switch {
	case v.AccessType != "":
		return v.AccessType
	case isTrue(v.UseK8sAuth):
		return "K8s_AUTH"
	case isTrue(v.UseVaultAgent):
		return "VAULT_AGENT"
	case isTrue(v.UseAwsIam):
		return "AWS_IAM"
	case isTrue(v.UseJwtAuth):
		return "JWT"
	case v.AppRoleID != "":
		return "APP_ROLE"
	}
	return "TOKEN"
}

func isTrue(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// SecretTextSpec is a SecretText secret's spec: the secret manager that keeps it, and whether
// the value was written through Harness (Inline: kept under the manager's base path) or names
// an existing secret (Reference: a path in the manager, `#field` for one field of a KV
// secret).
type SecretTextSpec struct {
	Node                    *yaml.Node `yaml:"-"`
	SecretManagerIdentifier string     `yaml:"secretManagerIdentifier" gantry:"required"`
	ValueType               string     `yaml:"valueType" gantry:"required"`
	Value                   string     `yaml:"value"`
}

// TextSpec decodes a SecretText secret's spec (nil for other types).
func (s *Secret) TextSpec(d *Decoder) *SecretTextSpec {
	if s.Type != "SecretText" || s.Spec == nil {
		return nil
	}
	var t SecretTextSpec
	d.Decode(s.Spec, &t, "SecretText secret spec")
	return &t
}

// DefaultSecretManager reports whether a secretManagerIdentifier names the built-in store
// (Gantry's default store: the environment, the secrets file, AWS Secrets Manager when set).
func DefaultSecretManager(id string) bool {
	_, id, _ = strings.Cut("."+id, ".")
	if i := strings.LastIndex(id, "."); i >= 0 {
		id = id[i+1:]
	}
	return id == "harnessSecretManager" || id == "harnessSecretManagerV2"
}

// AwsSecretManagerSpec is an AWS Secrets Manager connector: the region its secrets live in,
// the prefix of the secrets written through it, and how a worker signs in.
type AwsSecretManagerSpec struct {
	Node                                   *yaml.Node                  `yaml:"-"`
	Region                                 string                      `yaml:"region" gantry:"required"`
	Credential                             *AwsSecretManagerCredential `yaml:"credential" gantry:"required"`
	SecretNamePrefix                       string                      `yaml:"secretNamePrefix"`
	Default                                string                      `yaml:"default"`
	UsePutSecret                           string                      `yaml:"usePutSecret"`
	ForceDeleteWithoutRecovery             string                      `yaml:"forceDeleteWithoutRecovery"`
	RecoveryWindowInDays                   string                      `yaml:"recoveryWindowInDays"`
	ExecuteOnDelegate                      string                      `yaml:"executeOnDelegate"`
	IgnoreTestConnection                   string                      `yaml:"ignoreTestConnection"`
	DelegateSelectors                      []string                    `yaml:"delegateSelectors"`
	AwsOidcTokenExchangeDetailsForDelegate *yaml.Node                  `yaml:"awsOidcTokenExchangeDetailsForDelegate"`
}

// AwsSecretManagerCredential is how a worker signs in to Secrets Manager: ManualConfig (an
// access key, or a secret holding it, and a secret holding the secret key), AssumeIAMRole (the
// worker's own credentials), AssumeSTSRole (a role those credentials assume), or
// OidcAuthentication.
type AwsSecretManagerCredential struct {
	Node *yaml.Node           `yaml:"-"`
	Type string               `yaml:"type" gantry:"required"`
	Spec *AwsSMCredentialSpec `yaml:"spec"`
}

// AwsSMCredentialSpec holds ManualConfig's keys or AssumeSTSRole's role.
type AwsSMCredentialSpec struct {
	Node                  *yaml.Node `yaml:"-"`
	AccessKey             string     `yaml:"accessKey"`
	AccessKeyPlainText    string     `yaml:"accessKeyPlainText"`
	SecretKey             string     `yaml:"secretKey"`
	RoleArn               string     `yaml:"roleArn"`
	ExternalID            string     `yaml:"externalId"`
	AssumeStsRoleDuration string     `yaml:"assumeStsRoleDuration"`
	IamRoleArn            string     `yaml:"iamRoleArn"`
}
