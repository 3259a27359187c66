package entities

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/plan"
)

// pdcInfra resolves a Pdc infrastructure: its hosts and the SSH credential (a `secret:` of type
// SSHKey among the entity files) its credentialsRef names.
func (r *resolver) pdcInfra(file string, in *pipeline.Infrastructure) *plan.SshInfra {
	s := in.Spec
	out := &plan.SshInfra{}
	switch v := pipeline.Value(s.Hosts).(type) {
	case []any:
		for _, h := range v {
			out.Hosts = append(out.Hosts, fmt.Sprint(h))
		}
	case string:
		for _, h := range strings.Split(v, ",") { // one string: comma-separated, or an expression
			if h = strings.TrimSpace(h); h != "" {
				out.Hosts = append(out.Hosts, h)
			}
		}
	}
	pos := r.at(file, pipeline.ValueAt(s.Node, "credentialsRef"))
	f, ok := r.c.Secrets[pipeline.LocalRef(s.CredentialsRef)]
	if !ok {
		r.missing(pos, "secret", s.CredentialsRef, "secret")
		return nil
	}
	cred := f.Secret.SSHKeySpec(&pipeline.Decoder{File: f.Name, Diags: &diag.List{}}) // checked with the file
	if cred == nil || cred.Auth == nil || cred.Auth.Spec == nil || cred.Auth.Spec.Spec == nil {
		r.diags.Errorf(pos, "connector", "infrastructure %s: secret %s is a %s secret; credentialsRef names an SSH credential (type SSHKey)", in.Identifier, f.Secret.Identifier, f.Secret.Type)
		return nil
	}
	l := cred.Auth.Spec.Spec
	out.Credential = plan.SSHCredential{ID: f.Secret.Identifier, User: l.UserName, PassphraseRef: l.EncryptedPassphrase}
	switch cred.Auth.Spec.CredentialType {
	case "KeyReference":
		out.Credential.KeyRef = l.Key
	case "KeyPath":
		out.Credential.KeyPath = l.KeyPath
	case "Password":
		out.Credential.PasswordRef = l.Password
	}
	out.Credential.Port, _ = strconv.Atoi(cred.Port)
	return out
}

// configFiles reads an Ssh service's config files kept beside it (other stores are reported
// unsupported by validation).
func (r *resolver) configFiles(file, service string, list []pipeline.ConfigFileElement) []plan.File {
	var out []plan.File
	base := filepath.Dir(file)
	for _, e := range list {
		cf := e.ConfigFile
		if cf == nil || cf.Spec == nil || cf.Spec.Store == nil || cf.Spec.Store.Type != "Local" || cf.Spec.Store.Spec == nil {
			continue
		}
		for _, p := range cf.Spec.Store.Spec.Paths {
			files, err := readTreeOf(base, p, true)
			if err != nil {
				r.diags.Errorf(r.at(file, cf.Spec.Store.Spec.Node), "manifest", "service %s, config file %s: %v", service, cf.Identifier, err).
					SetHint("paths are relative to %s", base)
				continue
			}
			out = append(out, files...)
		}
	}
	return out
}
