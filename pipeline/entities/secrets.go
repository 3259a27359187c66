package entities

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/plan"
)

// SecretRoutes resolves the text secrets (`secret:` files of type SecretText) kept in a secret
// manager connector: where a worker reads each one. Secrets of the built-in manager resolve
// through the worker's default store and need no route. A secret that names a connector that
// does not exist, or one that is not a secret manager, is reported at its file.
func (c *Catalog) SecretRoutes() (map[string]plan.SecretRoute, diag.List) {
	r := &resolver{c: c}
	out := map[string]plan.SecretRoute{}
	ids := make([]string, 0, len(c.Secrets))
	for id := range c.Secrets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f := c.Secrets[id]
		spec := f.Secret.TextSpec(&pipeline.Decoder{File: f.Name, Diags: &diag.List{}}) // checked with the file
		if spec == nil || pipeline.DefaultSecretManager(spec.SecretManagerIdentifier) {
			continue
		}
		pos := pipeline.NodePos(f.Name, pipeline.ValueAt(spec.Node, "secretManagerIdentifier"))
		ref := spec.SecretManagerIdentifier
		k, ok := c.Connectors[pipeline.LocalRef(ref)]
		if !ok {
			r.missing(pos, "connector", ref, "connector")
			continue
		}
		var route plan.SecretRoute
		switch {
		case k.Connector.Vault != nil:
			v := k.Connector.Vault
			route.Manager = vaultManager(k.Connector.Identifier, v)
			if spec.ValueType == "Reference" {
				p, key, _ := strings.Cut(spec.Value, "#")
				route.Path, route.Key = strings.Trim(p, "/"), key
			} else {
				// Written through the reference's UI: kept under the base path, in field "value".
				route.Path, route.Key = strings.Trim(path.Join(v.BasePath, id), "/"), "value"
			}
		case k.Connector.AwsSM != nil:
			a := k.Connector.AwsSM
			route.Manager = plan.SecretManager{ID: k.Connector.Identifier, Type: "AwsSecretManager", Aws: awsSMConnector(k.Connector.Identifier, a),
				Selectors: a.DelegateSelectors}
			if spec.ValueType == "Reference" {
				route.Path, route.Key, _ = strings.Cut(spec.Value, "#")
			} else {
				// Written through the reference's UI: a secret named prefix/id.
				route.Path = strings.TrimPrefix(path.Join(a.SecretNamePrefix, id), "/")
			}
		default:
			r.diags.Errorf(pos, "connector", "secret %s names connector %s, a %s connector, as its secret manager", id, ref, k.Connector.Type).
				SetHint("secretManagerIdentifier names a Vault or AwsSecretManager connector, or harnessSecretManager for the worker's default store")
			continue
		}
		out[id] = route
	}
	return out, r.diags
}

// awsSMConnector is how a worker signs in to an AWS Secrets Manager connector's region:
// AssumeIAMRole is the worker's own credentials, AssumeSTSRole a role they assume.
func awsSMConnector(id string, a *pipeline.AwsSecretManagerSpec) *plan.AwsConnector {
	c := &plan.AwsConnector{ID: id, Region: a.Region, Credential: "InheritFromDelegate", Selectors: a.DelegateSelectors}
	spec := a.Credential.Spec
	if spec == nil {
		spec = &pipeline.AwsSMCredentialSpec{}
	}
	switch a.Credential.Type {
	case "ManualConfig":
		c.Credential, c.AccessKey, c.AccessKeyRef, c.SecretKeyRef = "ManualConfig", spec.AccessKeyPlainText, spec.AccessKey, spec.SecretKey
	case "AssumeSTSRole":
		c.RoleARN, c.ExternalID = spec.RoleArn, spec.ExternalID
	}
	return c
}

// vaultManager is what a worker needs of a Vault connector to sign in and read.
func vaultManager(id string, v *pipeline.VaultConnectorSpec) plan.SecretManager {
	version, _ := strconv.Atoi(v.SecretEngineVersion)
	if version == 0 {
		version = 2
	}
	minutes, _ := strconv.Atoi(v.RenewalIntervalMinutes)
	m := plan.SecretManager{ID: id, Type: "Vault", URL: strings.TrimRight(v.VaultURL, "/"), Engine: strings.Trim(v.SecretEngineName, "/"),
		EngineVersion: version, BasePath: strings.Trim(v.BasePath, "/"), Namespace: v.Namespace, Auth: v.Access(), RenewalMinutes: minutes,
		Selectors: v.DelegateSelectors}
	switch m.Auth {
	case "TOKEN":
		m.TokenRef = v.AuthToken
	case "APP_ROLE":
		m.AppRoleID, m.SecretIDRef = v.AppRoleID, v.SecretID
	case "K8s_AUTH":
		m.K8sRole, m.K8sAuthPath, m.K8sTokenPath = v.VaultK8sAuthRole, v.K8sAuthEndpoint, v.ServiceAccountTokenPath
	}
	return m
}
