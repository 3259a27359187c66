package entities

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// clusterConnector resolves a K8sCluster connector reference found at obj's connectorRef.
func (r *resolver) clusterConnector(file string, obj *yaml.Node, ref, where, needs string) (plan.Connector, bool) {
	pos := r.at(file, pipeline.ValueAt(obj, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return plan.Connector{}, false
	}
	k := cf.Connector
	if k.K8s == nil || k.K8s.Credential == nil {
		r.diags.Errorf(pos, "connector", "%sconnector %s is a %s connector; %s needs a K8sCluster connector", where, k.Identifier, k.Type, needs)
		return plan.Connector{}, false
	}
	cr := k.K8s.Credential
	out := plan.Connector{ID: k.Identifier, Name: k.Name, Type: cr.Type}
	if s := cr.Spec; s != nil {
		out.MasterURL = s.MasterURL
		out.InsecureSkipTLSVerify = s.InsecureSkipTLSVerify == "true"
		out.Kubeconfig, out.Context = s.Path, s.Context
		if s.Auth != nil && s.Auth.Spec != nil {
			out.TokenRef, out.CACertRef = s.Auth.Spec.ServiceAccountTokenRef, s.Auth.Spec.CACertRef
		}
	}
	return out, true
}

// registryConnector resolves a DockerRegistry artifact source's connector; the worker resolves
// the tag to a digest through it when the stage starts.
func (r *resolver) registryConnector(file string, s *pipeline.ArtifactSourceSpec) *plan.RegistryConnector {
	pos := r.at(file, pipeline.ValueAt(s.Node, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(s.ConnectorRef)]
	if !ok {
		// Without the connector the image is deployed by its tag, as before registries were read.
		r.diags.Warnf(pos, "unresolved-artifact", "connector %q is not defined: the image is deployed by its tag as written, not resolved to a digest", s.ConnectorRef).
			SetHint("%s", r.hint("connector"))
		return nil
	}
	k := cf.Connector
	if k.Docker == nil {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; a DockerRegistry artifact source needs a DockerRegistry connector", k.Identifier, k.Type)
		return nil
	}
	return dockerRegistry(k)
}

// gitStore resolves a manifest's Git store and its connector; the worker fetches the files
// when the stage starts.
func (r *resolver) gitStore(file string, ms *pipeline.ManifestSpec) *plan.GitStore {
	st := ms.Store
	s := st.Spec
	gc, ok := r.gitConnector(file, s.Node, s.ConnectorRef, fmt.Sprintf("a %s store", st.Type))
	if !ok {
		return nil
	}
	out := &plan.GitStore{Type: st.Type, Connector: gc, RepoName: s.RepoName, Paths: s.Paths, ValuesPaths: ms.ValuesPaths}
	if len(out.Paths) == 0 && s.FolderPath != "" {
		out.Paths = []string{s.FolderPath}
	}
	if s.GitFetchType == "Commit" {
		out.Commit = s.CommitID
	} else {
		out.Branch = s.Branch
	}
	if gc.ConnectionType == "Account" && s.RepoName == "" {
		r.diags.Errorf(r.at(file, s.Node), "missing-field", "connector %s connects an account: the store needs `repoName`", gc.ID).
			SetHint("repoName: the repository's name under %s", gc.URL)
	}
	return out
}

// s3Store resolves a manifest's S3 store and its Aws connector; the worker reads the objects
// when the stage starts.
func (r *resolver) s3Store(file string, ms *pipeline.ManifestSpec) *plan.S3Store {
	s := ms.Store.Spec
	k, ok := r.awsConnector(file, s.Node, s.ConnectorRef, "an S3 store")
	if !ok {
		return nil
	}
	out := &plan.S3Store{Connector: k, Bucket: s.BucketName, Region: s.Region, Paths: s.Paths, ValuesPaths: ms.ValuesPaths}
	if len(out.Paths) == 0 && s.FolderPath != "" {
		out.Paths = []string{s.FolderPath}
	}
	return out
}

// awsConnector resolves an Aws connector named at obj's connectorRef.
func (r *resolver) awsConnector(file string, obj *yaml.Node, ref, needs string) (plan.AwsConnector, bool) {
	pos := r.at(file, pipeline.ValueAt(obj, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return plan.AwsConnector{}, false
	}
	k := cf.Connector
	if k.Aws == nil || k.Aws.Credential == nil {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; %s needs an Aws connector", k.Identifier, k.Type, needs)
		return plan.AwsConnector{}, false
	}
	return AwsConnector(k), true
}

// AwsConnector is an Aws connector as a worker uses it.
func AwsConnector(k *pipeline.Connector) plan.AwsConnector {
	cr := k.Aws.Credential
	out := plan.AwsConnector{ID: k.Identifier, Credential: cr.Type, Region: cr.Region, Selectors: k.Aws.DelegateSelectors}
	if s := cr.Spec; s != nil {
		out.AccessKey, out.AccessKeyRef, out.SecretKeyRef = s.AccessKey, s.AccessKeyRef, s.SecretKeyRef
	}
	if x := cr.CrossAccountAccess; x != nil {
		out.RoleARN, out.ExternalID = x.CrossAccountRoleArn, x.ExternalID
	}
	return out
}

// chartRepo resolves a HelmChart's chart repository (Http store) or OCI registry (OciHelmChart
// store) and its connector; the worker pulls the chart when the stage starts.
func (r *resolver) chartRepo(file string, m *pipeline.Manifest) *plan.ChartRepo {
	spec, st := m.Spec, m.Spec.Store
	ref, at, want := st.Spec.ConnectorRef, st.Spec.Node, "HttpHelmRepo"
	if st.Type == "OciHelmChart" {
		c := st.Spec.Config
		if c == nil || c.Spec == nil { // reported by the validator, or ECR/GAR (unsupported)
			return nil
		}
		ref, at, want = c.Spec.ConnectorRef, c.Spec.Node, "OciHelmRepo"
	}
	pos := r.at(file, pipeline.ValueAt(at, "connectorRef"))
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(pos, "connector", ref, "connector")
		return nil
	}
	k := cf.Connector
	if k.Helm == nil || k.Type != want {
		r.diags.Errorf(pos, "connector", "connector %s is a %s connector; a %s store needs an %s connector", k.Identifier, k.Type, st.Type, want)
		return nil
	}
	out := &plan.ChartRepo{Type: st.Type, Connector: plan.RegistryConnector{ID: k.Identifier, URL: k.Helm.HelmRepoURL},
		BasePath: st.Spec.BasePath, Name: spec.ChartName, Version: spec.ChartVersion, ValuesPaths: spec.ValuesPaths}
	if a := k.Helm.Auth; a != nil && a.Type == "UsernamePassword" && a.Spec != nil {
		out.Connector.Username, out.Connector.UsernameRef, out.Connector.PasswordRef = a.Spec.Username, a.Spec.UsernameRef, a.Spec.PasswordRef
	}
	return out
}

// gitConnector resolves a Git, Github, Gitlab or Bitbucket connector named at obj's connectorRef.
func (r *resolver) gitConnector(file string, obj *yaml.Node, ref, needs string) (plan.GitConnector, bool) {
	cf, ok := r.c.Connectors[pipeline.LocalRef(ref)]
	if !ok {
		r.missing(r.at(file, pipeline.ValueAt(obj, "connectorRef")), "connector", ref, "connector")
		return plan.GitConnector{}, false
	}
	gc, ok := GitConnector(cf.Connector)
	if !ok {
		k := cf.Connector
		r.diags.Errorf(r.at(file, pipeline.ValueAt(obj, "connectorRef")), "connector",
			"connector %s is a %s connector; %s needs a Git, Github, Gitlab or Bitbucket connector", k.Identifier, k.Type, needs)
	}
	return gc, ok
}

// GitConnectorOf resolves ref among connector files (those of where, for the message) to the
// Git connector it names.
func GitConnectorOf(connectors map[string]*pipeline.File, ref, where string) (plan.GitConnector, error) {
	cf, ok := connectors[pipeline.LocalRef(ref)]
	if !ok {
		return plan.GitConnector{}, fmt.Errorf("connector %s is not among the connector files of %s", ref, where)
	}
	gc, ok := GitConnector(cf.Connector)
	if !ok {
		return plan.GitConnector{}, fmt.Errorf("connector %s is a %s connector; reading from Git needs a Git, Github, Gitlab or Bitbucket connector", ref, cf.Connector.Type)
	}
	return gc, nil
}

// GitConnector is a Git, Github, Gitlab or Bitbucket connector as a Git client uses it; ok is
// false for a connector of another kind.
func GitConnector(k *pipeline.Connector) (gc plan.GitConnector, ok bool) {
	gc = plan.GitConnector{ID: k.Identifier, Type: k.Type}
	var cred *pipeline.GitCredentials
	switch {
	case k.Git != nil:
		gc.URL, gc.ConnectionType, cred = k.Git.URL, k.Git.ConnectionType, k.Git.Spec
		if k.Git.Type != "Ssh" {
			cred = httpCredentials(cred)
		}
	case k.SCM != nil && k.SCM.Authentication != nil:
		gc.URL, gc.ConnectionType, cred = k.SCM.URL, k.SCM.Type, k.SCM.Authentication.Spec
		if k.SCM.Authentication.Type == "Http" && cred != nil {
			cred = httpCredentials(cred.Spec)
		}
		if a := k.SCM.APIAccess; a != nil && a.Spec != nil && a.Spec.TokenRef != "" && a.Type != "GithubApp" {
			gc.API = &plan.GitAPI{Type: a.Type, Username: a.Spec.Username, UsernameRef: a.Spec.UsernameRef, TokenRef: a.Spec.TokenRef}
		}
	default:
		return plan.GitConnector{}, false
	}
	if cred != nil {
		gc.Username, gc.UsernameRef, gc.PasswordRef, gc.SSHKeyRef = cred.Username, cred.UsernameRef, cred.PasswordRef, cred.SSHKeyRef
	}
	return gc, true
}

// httpCredentials keeps a token as the password: Git over HTTP sends either the same way.
func httpCredentials(c *pipeline.GitCredentials) *pipeline.GitCredentials {
	if c == nil {
		return nil
	}
	out := *c
	out.SSHKeyRef = ""
	if out.PasswordRef == "" {
		out.PasswordRef = out.TokenRef
	}
	return &out
}
