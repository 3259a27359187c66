package entities

import (
	"fmt"

	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

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
	if f := s.HostFilter; f != nil && pipeline.Value(pipeline.Field(f, "type")) == "HostNames" {
		if names, ok := pipeline.Value(pipeline.Field(pipeline.Field(f, "spec"), "value")).([]any); ok {
			for _, n := range names {
				out.Only = append(out.Only, fmt.Sprint(n))
			}
		}
	}
	cr, ok := r.sshCredential(file, s.Node, s.CredentialsRef, "infrastructure "+in.Identifier)
	if !ok {
		return nil
	}
	out.Credential = cr
	return out
}

// awsHostsInfra resolves an SshWinRmAws infrastructure: the AWS connector listing its
// instances, the filter, and the SSH credential that logs in to them.
func (r *resolver) awsHostsInfra(file string, in *pipeline.Infrastructure) *plan.SshInfra {
	s := in.Spec
	k, ok := r.awsConnector(file, s.Node, s.ConnectorRef, "an SshWinRmAws infrastructure")
	if !ok {
		return nil
	}
	hosts := &plan.AwsHosts{Connector: k, Region: s.Region, PublicIP: s.HostConnectionType == "PublicIP"}
	if f := s.AwsInstanceFilter; f != nil {
		if tags, ok := pipeline.Value(f.Tags).(map[string]any); ok {
			hosts.Tags = map[string]string{}
			for k, v := range tags {
				hosts.Tags[k] = fmt.Sprint(v)
			}
		}
		if vpcs, ok := pipeline.Value(f.Vpcs).([]any); ok {
			for _, v := range vpcs {
				hosts.Vpcs = append(hosts.Vpcs, fmt.Sprint(v))
			}
		}
	}
	cr, ok := r.sshCredential(file, s.Node, s.CredentialsRef, "infrastructure "+in.Identifier)
	if !ok {
		return nil
	}
	return &plan.SshInfra{Credential: cr, Aws: hosts}
}

// sshCredential resolves the SSH credential (a `secret:` of type SSHKey among the entity
// files) a reference at obj's key names (credentialsRef, or an executionTarget's connectorRef).
func (r *resolver) sshCredential(file string, obj *yaml.Node, ref, needs string) (plan.SSHCredential, bool) {
	key := "credentialsRef"
	if pipeline.Field(obj, key) == nil {
		key = "connectorRef"
	}
	pos := r.at(file, pipeline.ValueAt(obj, key))
	f, ok := r.c.Secrets[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "secret", ref, "secret")
		return plan.SSHCredential{}, false
	}
	cred := f.Secret.SSHKeySpec(&pipeline.Decoder{File: f.Name, Diags: &diag.List{}}) // checked with the file
	if cred == nil || cred.Auth == nil || cred.Auth.Spec == nil || cred.Auth.Spec.Spec == nil {
		r.diags.Errorf(pos, "connector", "%s: secret %s is a %s secret; it must be an SSH credential (type SSHKey)", needs, f.Secret.Identifier, f.Secret.Type)
		return plan.SSHCredential{}, false
	}
	l := cred.Auth.Spec.Spec
	out := plan.SSHCredential{ID: f.Secret.Identifier, User: l.UserName, PassphraseRef: l.EncryptedPassphrase}
	switch cred.Auth.Spec.CredentialType {
	case "KeyReference":
		out.KeyRef = l.Key
	case "KeyPath":
		out.KeyPath = l.KeyPath
	case "Password":
		out.PasswordRef = l.Password
	}
	out.Port, _ = strconv.Atoi(cred.Port)
	return out, true
}

// configFiles reads an Ssh service's config files kept beside it, and resolves the Git stores
// of those fetched when the stage starts (other stores are reported unsupported by
// validation).
func (r *resolver) configFiles(file, service string, list []pipeline.ConfigFileElement) ([]plan.File, []plan.Manifest) {
	var out []plan.File
	var stores []plan.Manifest
	base := filepath.Dir(file)
	for _, e := range list {
		cf := e.ConfigFile
		if cf == nil || cf.Spec == nil || cf.Spec.Store == nil || cf.Spec.Store.Spec == nil {
			continue
		}
		if gitStoreTypes[cf.Spec.Store.Type] {
			if st := r.gitStore(file, &pipeline.ManifestSpec{Store: cf.Spec.Store}); st != nil {
				st.AllFiles = true // config files are any files, not only manifests
				stores = append(stores, plan.Manifest{ID: cf.Identifier, Type: "ConfigFile", Store: st})
			}
			continue
		}
		if cf.Spec.Store.Type != "Local" {
			continue
		}
		for _, p := range cf.Spec.Store.Spec.Paths {
			files, err := readTreeOf(base, p, true)
			if err != nil {
				r.diags.Errorf(r.at(file, cf.Spec.Store.Spec.Node), "manifest", "service %s, config file %s: %v", service, cf.Identifier, err).
					SetHint("paths are relative to %s", base)
				continue
			}
			for i := range files {
				files[i].ConfigFile = cf.Identifier
			}
			out = append(out, files...)
		}
	}
	return out, stores
}
