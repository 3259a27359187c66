package validate

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Ticket system connectors (Jira, ServiceNow).

// jiraConnector checks a Jira connector's URL and sign-in.
func (c *checker) jiraConnector(j *pipeline.JiraConnectorSpec) {
	c.urlValue(pipeline.ValueAt(j.Node, "jiraUrl"), j.JiraURL)
	c.ticketAuth(j.Node, j.Auth, j.AuthType(), []string{"UsernamePassword", "PersonalAccessToken"})
}

// serviceNowConnector checks a ServiceNow connector's URL and sign-in.
func (c *checker) serviceNowConnector(s *pipeline.ServiceNowConnectorSpec) {
	c.urlValue(pipeline.ValueAt(s.Node, "serviceNowUrl"), s.ServiceNowURL)
	c.ticketAuth(s.Node, s.Auth, s.AuthType(), []string{"UsernamePassword", "RefreshTokenGrantType", "AdfsClientCredentialsWithCertificate"})
}

// ticketAuth checks that a connector's sign-in type has the fields it needs.
func (c *checker) ticketAuth(spec *yaml.Node, a *pipeline.TicketAuth, typ string, allowed []string) {
	if typ == "" {
		c.diags.Errorf(c.pos(spec), "missing-field", "the connector says nothing of how to sign in").
			SetHint("auth: {type: UsernamePassword, spec: {username: deploy-bot, passwordRef: jira_token}}")
		return
	}
	if a == nil {
		return // an older connector: username and passwordRef beside the URL
	}
	c.enum(a.Node, "type", a.Type, allowed, "auth type")
	s := a.Spec
	if s == nil {
		c.required(a.Node, "", "spec", "auth")
		return
	}
	switch a.Type {
	case "UsernamePassword":
		if s.Username == "" && s.UsernameRef == "" {
			c.required(s.Node, "", "username", "auth spec")
		}
		c.required(s.Node, s.PasswordRef, "passwordRef", "auth spec")
	case "PersonalAccessToken":
		c.required(s.Node, s.PatRef, "patRef", "auth spec")
	case "RefreshTokenGrantType":
		if c.required(s.Node, s.TokenURL, "tokenUrl", "auth spec") {
			c.urlValue(pipeline.ValueAt(s.Node, "tokenUrl"), s.TokenURL)
		}
		c.required(s.Node, s.RefreshTokenRef, "refreshTokenRef", "auth spec")
		c.required(s.Node, s.ClientIDRef, "clientIdRef", "auth spec")
	case "AdfsClientCredentialsWithCertificate":
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(a.Node, "type")), "unsupported-auth",
			"ServiceNow sign-in through ADFS with a certificate is not supported yet").
			SetHint("use UsernamePassword or RefreshTokenGrantType (an OAuth client and refresh token)")
	}
}
