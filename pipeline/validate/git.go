package validate

import (
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Git connectors and manifest stores (Git, Github, Gitlab, Bitbucket).

// required reports a field a shape needs only in some forms (the parser reports the fields
// every form needs), in the parser's words.
func (c *checker) required(obj *yaml.Node, value any, key, what string) bool {
	switch v := value.(type) {
	case string:
		if v != "" {
			return true
		}
	case []string:
		if len(v) > 0 {
			return true
		}
	}
	c.diags.Errorf(c.pos(obj), "missing-field", "%s is missing required field %q", what, key).
		SetHint("add `%s:` to this %s", key, what)
	return false
}

// store checks a manifest store's spec for its type.
func (c *checker) store(st *pipeline.ManifestStore) {
	s := st.Spec
	if s == nil {
		return
	}
	switch st.Type {
	case "Local":
		if s.FolderPath == "" { // a Kustomize folder may be given as folderPath
			c.required(s.Node, s.Paths, "paths", "spec")
		}
		return
	case "Http":
		if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
			c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
		}
		return
	case "OciHelmChart":
		if c.required(s.Node, map[bool]string{true: "config"}[s.Config != nil], "config", "spec") && s.Config.Spec != nil {
			c.reference(s.Config.Spec.Node, "connectorRef", s.Config.Spec.ConnectorRef, "connector")
		}
		return
	case "S3":
		if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
			c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
		}
		c.required(s.Node, s.BucketName, "bucketName", "spec")
		if s.FolderPath == "" {
			c.required(s.Node, s.Paths, "paths", "spec")
		}
		return
	}
	c.required(s.Node, s.ConnectorRef, "connectorRef", "spec")
	if s.ConnectorRef != "" {
		c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
	}
	if c.required(s.Node, s.GitFetchType, "gitFetchType", "spec") {
		c.enum(s.Node, "gitFetchType", s.GitFetchType, []string{"Branch", "Commit"}, "gitFetchType")
	}
	switch s.GitFetchType {
	case "Branch":
		c.required(s.Node, s.Branch, "branch", "spec")
	case "Commit":
		c.required(s.Node, s.CommitID, "commitId", "spec")
	}
	if len(s.Paths) == 0 && s.FolderPath == "" {
		c.diags.Errorf(c.pos(s.Node), "missing-field", "a %s store needs `paths` (or `folderPath`)", st.Type).
			SetHint("paths: [path/in/the/repository.yaml]")
	}
}

// gitConnector checks a Git connector's URL type and credentials.
func (c *checker) gitConnector(k *pipeline.Connector) {
	if g := k.Git; g != nil {
		c.enum(g.Node, "connectionType", g.ConnectionType, []string{"Account", "Repo"}, "connectionType")
		c.enum(g.Node, "type", g.Type, []string{"Http", "Ssh"}, "connection type")
		if g.Spec != nil {
			c.gitCredentials(g.Spec, g.Type, "passwordRef")
		}
		return
	}
	s := k.SCM
	c.enum(s.Node, "type", s.Type, []string{"Account", "Repo"}, "URL type")
	if s.APIAccess != nil {
		c.apiAccess(k.Type, s.APIAccess)
	}
	a := s.Authentication
	if a == nil || a.Spec == nil {
		return
	}
	c.enum(a.Node, "type", a.Type, []string{"Http", "Ssh"}, "authentication type")
	if a.Type != "Http" {
		c.gitCredentials(a.Spec, a.Type, "")
		return
	}
	cred := a.Spec
	secret := map[string]string{"UsernameToken": "tokenRef", "UsernamePassword": "passwordRef"}[cred.Type]
	if secret == "" { // no type, or one the decoder reported
		c.required(cred.Node, cred.Type, "type", "spec")
		return
	}
	if cred.Spec == nil {
		c.required(cred.Node, "", "spec", "spec")
		return
	}
	c.gitCredentials(cred.Spec, "Http", secret)
}

// apiAccessTypes are the API credentials the reference takes per connector type.
var apiAccessTypes = map[string][]string{
	"Github":    {"GithubApp", "Token", "OAuth"},
	"Gitlab":    {"Token", "OAuth"},
	"Bitbucket": {"UsernameToken", "OAuth"},
}

// apiAccess checks a connector's API credential, through which CI stages report their commit
// status.
func (c *checker) apiAccess(connectorType string, a *pipeline.Typed[pipeline.APIAccessSpec]) {
	allowed := apiAccessTypes[connectorType]
	c.enum(a.Node, "type", a.Type, allowed, connectorType+" apiAccess type")
	if a.Spec == nil || !slices.Contains(allowed, a.Type) {
		return
	}
	switch a.Type {
	case "GithubApp":
		c.diags.Warnf(c.pos(a.Node), "not-implemented",
			"apiAccess through a GitHub App is not used: CI stages report no commit status through this connector").
			SetHint("give apiAccess a token: {type: Token, spec: {tokenRef: github_pat}}")
	case "UsernameToken":
		if a.Spec.Username == "" && a.Spec.UsernameRef == "" {
			c.diags.Errorf(c.pos(a.Spec.Node), "missing-field", "apiAccess UsernameToken needs `username` or `usernameRef`").
				SetHint("username: ci-bot")
		}
		c.required(a.Spec.Node, a.Spec.TokenRef, "tokenRef", "spec")
	default:
		c.required(a.Spec.Node, a.Spec.TokenRef, "tokenRef", "spec")
	}
}

// gitCredentials checks that HTTP credentials name a user and a secret, SSH ones a key.
func (c *checker) gitCredentials(cr *pipeline.GitCredentials, kind, secret string) {
	if kind == "Ssh" {
		c.required(cr.Node, cr.SSHKeyRef, "sshKeyRef", "spec")
		return
	}
	if cr.Username == "" && cr.UsernameRef == "" {
		c.diags.Errorf(c.pos(cr.Node), "missing-field", "HTTP credentials need `username` or `usernameRef`").
			SetHint("username: deployer")
	}
	if secret == "tokenRef" {
		c.required(cr.Node, cr.TokenRef, "tokenRef", "spec")
	} else {
		c.required(cr.Node, cr.PasswordRef, "passwordRef", "spec")
	}
}
