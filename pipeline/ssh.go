package pipeline

import "gopkg.in/yaml.v3"

// Secret is a `secret:` document. Gantry reads the SSH credentials (type SSHKey) that SSH
// infrastructures name with credentialsRef; the values of other secrets come from its secret
// stores (environment, secrets file, AWS Secrets Manager), never from a document.
type Secret struct {
	Node   *yaml.Node `yaml:"-"`
	Entity `yaml:",inline"`
	Type   string     `yaml:"type" gantry:"required"`
	Spec   *yaml.Node `yaml:"spec" gantry:"required"`
}

// SSHCredential is an SSHKey secret's spec: how to log in, and the port.
type SSHCredential struct {
	Node *yaml.Node `yaml:"-"`
	Auth *SSHAuth   `yaml:"auth" gantry:"required"`
	Port string     `yaml:"port"`
}

// SSHAuth is `SSH` (keys or a password) or `Kerberos`.
type SSHAuth struct {
	Node *yaml.Node   `yaml:"-"`
	Type string       `yaml:"type" gantry:"required"`
	Spec *SSHAuthSpec `yaml:"spec"`
}

// SSHAuthSpec says which credential: KeyReference (a secret holding the private key),
// KeyPath (a key file on the worker) or Password.
type SSHAuthSpec struct {
	Node           *yaml.Node `yaml:"-"`
	CredentialType string     `yaml:"credentialType" gantry:"required"`
	Spec           *SSHLogin  `yaml:"spec" gantry:"required"`
}

// SSHLogin is the user and the secrets (named, never held) of an SSH login.
type SSHLogin struct {
	Node                *yaml.Node `yaml:"-"`
	UserName            string     `yaml:"userName" gantry:"required"`
	Key                 string     `yaml:"key"`
	KeyPath             string     `yaml:"keyPath"`
	EncryptedPassphrase string     `yaml:"encryptedPassphrase"`
	Password            string     `yaml:"password"`
}

// SSHKeySpec decodes an SSHKey secret's spec (nil for other types).
func (s *Secret) SSHKeySpec(d *Decoder) *SSHCredential {
	if s.Type != "SSHKey" || s.Spec == nil {
		return nil
	}
	var c SSHCredential
	d.Decode(s.Spec, &c, "SSHKey secret spec")
	return &c
}

// ConfigFileElement is one entry of a service's `configFiles`.
type ConfigFileElement struct {
	Node       *yaml.Node  `yaml:"-"`
	ConfigFile *ConfigFile `yaml:"configFile" gantry:"required"`
}

// ConfigFile is a file a Copy command unit puts on the hosts.
type ConfigFile struct {
	Node       *yaml.Node      `yaml:"-"`
	Identifier string          `yaml:"identifier" gantry:"required"`
	Spec       *ConfigFileSpec `yaml:"spec" gantry:"required"`
}

// ConfigFileSpec is where a config file is.
type ConfigFileSpec struct {
	Node  *yaml.Node     `yaml:"-"`
	Store *ManifestStore `yaml:"store" gantry:"required"`
}
