package pipeline

import "gopkg.in/yaml.v3"

// JiraConnectorSpec is a Jira connector: the site's URL and how to sign in, as `auth`
// (UsernamePassword, PersonalAccessToken) or, in older connectors, a username and password
// beside the URL.
type JiraConnectorSpec struct {
	Node              *yaml.Node  `yaml:"-"`
	JiraURL           string      `yaml:"jiraUrl" gantry:"required"`
	Username          string      `yaml:"username"`
	UsernameRef       string      `yaml:"usernameRef"`
	PasswordRef       string      `yaml:"passwordRef"`
	Auth              *TicketAuth `yaml:"auth"`
	DelegateSelectors []string    `yaml:"delegateSelectors"`
}

// ServiceNowConnectorSpec is a ServiceNow connector: the instance's URL and how to sign in, as
// `auth` (UsernamePassword, RefreshTokenGrantType, AdfsClientCredentialsWithCertificate) or, in
// older connectors, a username and password beside the URL.
type ServiceNowConnectorSpec struct {
	Node              *yaml.Node  `yaml:"-"`
	ServiceNowURL     string      `yaml:"serviceNowUrl" gantry:"required"`
	Username          string      `yaml:"username"`
	UsernameRef       string      `yaml:"usernameRef"`
	PasswordRef       string      `yaml:"passwordRef"`
	Auth              *TicketAuth `yaml:"auth"`
	DelegateSelectors []string    `yaml:"delegateSelectors"`
}

// TicketAuth is a ticket system connector's sign-in: its type and the fields of that type.
type TicketAuth struct {
	Node *yaml.Node      `yaml:"-"`
	Type string          `yaml:"type" gantry:"required"`
	Spec *TicketAuthSpec `yaml:"spec"`
}

// TicketAuthSpec holds the fields of every sign-in type; validation says which belong to
// which.
type TicketAuthSpec struct {
	Node        *yaml.Node `yaml:"-"`
	Username    string     `yaml:"username"`
	UsernameRef string     `yaml:"usernameRef"`
	PasswordRef string     `yaml:"passwordRef"`
	// PersonalAccessToken (Jira Data Center).
	PatRef string `yaml:"patRef"`
	// RefreshTokenGrantType (ServiceNow OAuth).
	TokenURL        string `yaml:"tokenUrl"`
	RefreshTokenRef string `yaml:"refreshTokenRef"`
	ClientIDRef     string `yaml:"clientIdRef"`
	ClientSecretRef string `yaml:"clientSecretRef"`
	Scope           string `yaml:"scope"`
	// AdfsClientCredentialsWithCertificate (ServiceNow through ADFS).
	CertificateRef string `yaml:"certificateRef"`
	PrivateKeyRef  string `yaml:"privateKeyRef"`
	ResourceIDRef  string `yaml:"resourceIdRef"`
	AdfsURL        string `yaml:"adfsUrl"`
}

// typeOr is the connector's sign-in type: its auth's, or UsernamePassword for an older
// connector with the username beside the URL.
func (a *TicketAuth) typeOr(legacy bool) string {
	switch {
	case a != nil:
		return a.Type
	case legacy:
		return "UsernamePassword"
	}
	return ""
}

// AuthType is the Jira connector's sign-in type.
func (j *JiraConnectorSpec) AuthType() string {
	return j.Auth.typeOr(j.Username != "" || j.UsernameRef != "" || j.PasswordRef != "")
}

// AuthType is the ServiceNow connector's sign-in type.
func (s *ServiceNowConnectorSpec) AuthType() string {
	return s.Auth.typeOr(s.Username != "" || s.UsernameRef != "" || s.PasswordRef != "")
}
