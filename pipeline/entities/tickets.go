package entities

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// ticketConnector resolves the Jira or ServiceNow connector a ticket step's connectorRef
// names.
func (r *resolver) ticketConnector(spec *yaml.Node, kind string, refs *plan.StepRefs) {
	at := pipeline.ValueAt(spec, "connectorRef")
	if at == nil || at.Value == "" {
		return // required by validation
	}
	ref := at.Value
	if strings.Contains(ref, "<+") {
		r.diags.Unsupportedf(r.at(r.file, at), "unsupported-expression",
			"the %s connector is an expression; Gantry resolves connectors before the run", kind).SetHint("name the connector")
		return
	}
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(r.at(r.file, at), "connector", ref, "connector")
		return
	}
	k := cf.Connector
	out := plan.TicketConnector{ID: k.Identifier, Type: k.Type}
	var auth *pipeline.TicketAuth
	switch {
	case kind == "Jira" && k.Jira != nil:
		j := k.Jira
		out.URL, out.Auth, out.Selectors = j.JiraURL, j.AuthType(), j.DelegateSelectors
		out.Username, out.UsernameRef, out.PasswordRef = j.Username, j.UsernameRef, j.PasswordRef
		auth = j.Auth
	case kind == "ServiceNow" && k.ServiceNow != nil:
		s := k.ServiceNow
		out.URL, out.Auth, out.Selectors = s.ServiceNowURL, s.AuthType(), s.DelegateSelectors
		out.Username, out.UsernameRef, out.PasswordRef = s.Username, s.UsernameRef, s.PasswordRef
		auth = s.Auth
	default:
		r.diags.Errorf(r.at(r.file, at), "connector", "connector %s is a %s connector; this step needs a %s connector", k.Identifier, k.Type, kind)
		return
	}
	if auth != nil && auth.Spec != nil {
		a := auth.Spec
		out.Username, out.UsernameRef, out.PasswordRef, out.PatRef = a.Username, a.UsernameRef, a.PasswordRef, a.PatRef
		out.TokenURL, out.RefreshTokenRef, out.ClientIDRef, out.ClientSecretRef, out.Scope = a.TokenURL, a.RefreshTokenRef, a.ClientIDRef, a.ClientSecretRef, a.Scope
	}
	refs.Ticket = &out
}
