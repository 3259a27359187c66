package validate

import (
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

var dnsLabelRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// The CD entity files (spec 15.1). References between files are resolved by pipeline/entities;
// these checks need only the file itself.

func (c *checker) service(s *pipeline.Service) {
	c.identifier(s.Node, "identifier", s.Identifier, "service")
	c.name(s.Node, s.Name, "service")
	c.boolean(s.Node, "gitOpsEnabled", s.GitOpsEnabled)
	d := s.ServiceDefinition
	if d == nil {
		return
	}
	if d.Spec == nil { // no spec, or one of a type Gantry does not run (reported when decoded)
		return
	}
	c.variables(d.Spec.Variables, "service")
	c.configFiles(d.Type, d.Spec.ConfigFiles)
	seen := map[string]bool{}
	for _, m := range d.Spec.Manifests {
		if m.Manifest == nil {
			continue
		}
		mf := m.Manifest
		c.identifier(mf.Node, "identifier", mf.Identifier, "manifest")
		if seen[mf.Identifier] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(mf.Node, "identifier")), "duplicate-identifier", "manifest identifier %q is declared twice", mf.Identifier)
		}
		seen[mf.Identifier] = true
		if mf.Spec == nil {
			continue
		}
		if st := mf.Spec.Store; st != nil {
			c.store(st)
			if (st.Type == "Http" || st.Type == "OciHelmChart") && mf.Type == "HelmChart" {
				c.required(mf.Spec.Node, mf.Spec.ChartName, "chartName", "spec")
			}
		}
		c.boolean(mf.Spec.Node, "skipResourceVersioning", mf.Spec.SkipResourceVersioning)
		c.boolean(mf.Spec.Node, "enableDeclarativeRollback", mf.Spec.EnableDeclarativeRollback)
	}
	if a := d.Spec.Artifacts; a != nil && a.Primary != nil {
		found := false
		for _, src := range a.Primary.Sources {
			c.identifier(src.Node, "identifier", src.Identifier, "artifact source")
			found = found || src.Identifier == a.Primary.PrimaryArtifactRef
			c.artifactSource(src)
		}
		if a.Primary.Type != "" && a.Primary.Spec != nil {
			c.artifactSource(*a.Primary.Selected()) // the legacy form's one artifact
		}
		if !found && !dynamic(a.Primary.PrimaryArtifactRef) && a.Primary.PrimaryArtifactRef != "" {
			c.diags.Errorf(c.pos(pipeline.ValueAt(a.Primary.Node, "primaryArtifactRef")), "unknown-reference",
				"primaryArtifactRef %q names no artifact source", a.Primary.PrimaryArtifactRef).SetHint("use the identifier of one of `sources`")
		}
	}
}

func (c *checker) environment(e *pipeline.Environment) {
	c.identifier(e.Node, "identifier", e.Identifier, "environment")
	c.name(e.Node, e.Name, "environment")
	c.enum(e.Node, "type", e.Type, []string{"Production", "PreProduction"}, "environment type")
	c.variables(e.Variables, "environment")
	seen := map[string]bool{}
	for _, o := range e.ServiceOverrides {
		c.reference(o.Node, "serviceRef", o.ServiceRef, "service")
		if seen[o.ServiceRef] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(o.Node, "serviceRef")), "duplicate-identifier", "service %q has two override blocks", o.ServiceRef).
				SetHint("merge them into one")
		}
		seen[o.ServiceRef] = true
		c.variables(o.Variables, "service override")
	}
}

func (c *checker) infrastructure(i *pipeline.Infrastructure) {
	c.identifier(i.Node, "identifier", i.Identifier, "infrastructure definition")
	c.name(i.Node, i.Name, "infrastructure definition")
	c.reference(i.Node, "environmentRef", i.EnvironmentRef, "environment")
	pipeline.InfraDeploymentKind.Check(&c.diags, c.pos(pipeline.ValueAt(i.Node, "deploymentType")), i.DeploymentType)
	c.boolean(i.Node, "allowSimultaneousDeployments", i.AllowSimultaneousDeployments)
	if s := i.Spec; s != nil {
		if n := s.DelegateSelectors; n != nil && !(n.Kind == yaml.SequenceNode && len(n.Content) == 0) {
			c.diags.Warnf(c.pos(n), "reference-field-ignored", "`delegateSelectors` of an infrastructure are a field of the reference that Gantry does not act on yet: any worker of the stage's task queue reaches the hosts").
				SetHint("run the workers that can reach the hosts on their own task queue")
		}
		if i.Type == "Pdc" {
			c.pdc(s)
			return
		}
		if i.Type == "SshWinRmAws" {
			c.awsHosts(s)
			return
		}
		if i.Type == "CustomDeployment" {
			if c.required(s.Node, map[bool]string{true: "ref"}[s.CustomDeploymentRef != nil], "customDeploymentRef", "spec") {
				c.variables(s.Variables, "infrastructure")
			}
			return
		}
		if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
			c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
		}
		switch i.Type {
		case "KubernetesDirect":
			c.required(s.Node, s.Namespace, "namespace", "spec")
		case "AwsLambda", "Asg":
			c.required(s.Node, s.Region, "region", "spec")
		case "ECS":
			c.required(s.Node, s.Region, "region", "spec")
			c.required(s.Node, s.Cluster, "cluster", "spec")
		}
		if s.Namespace != "" && !dynamic(s.Namespace) && !dnsLabelRe.MatchString(s.Namespace) {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "namespace")), "namespace", "namespace %q is not a valid Kubernetes namespace name", s.Namespace).
				SetHint("lower-case letters, digits and '-', at most 63 characters, starting and ending with a letter or digit")
		}
	}
}

// customArtifact checks a CustomArtifact source: a version, or a versionRegex and the script
// listing the versions (Bash, inline) with where its JSON holds them.
func (c *checker) customArtifact(s *pipeline.ArtifactSourceSpec) {
	c.variables(s.Inputs, "custom artifact input")
	f := (*pipeline.FetchAllArtifacts)(nil)
	if s.Scripts != nil {
		f = s.Scripts.FetchAllArtifacts
	}
	if f == nil {
		if s.Version == "" && s.VersionRegex != "" {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "versionRegex")), "missing-field", "versionRegex picks among the versions a script lists: the source needs scripts.fetchAllArtifacts").
				SetHint("or give `version:`")
			return
		}
		c.required(s.Node, s.Version, "version", "spec")
		return
	}
	if s.Version == "" && s.VersionRegex == "" {
		c.diags.Errorf(c.pos(s.Node), "missing-field", "a CustomArtifact source needs `version` or `versionRegex`").
			SetHint("version: <+input> picks one at run time; versionRegex: the highest matching version")
	}
	if s.VersionRegex != "" && !dynamic(s.VersionRegex) {
		if _, err := regexp.Compile(s.VersionRegex); err != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "versionRegex")), "invalid-pattern", "versionRegex %q is not a regular expression: %v", s.VersionRegex, err)
		}
	}
	c.required(f.Node, f.ArtifactsArrayPath, "artifactsArrayPath", "fetchAllArtifacts")
	c.required(f.Node, f.VersionPath, "versionPath", "fetchAllArtifacts")
	if sp := f.Spec; sp != nil {
		if sp.Shell == "PowerShell" {
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(sp.Node, "shell")), "unsupported-field", "a PowerShell artifact script: Gantry runs Bash scripts on its workers")
		} else {
			c.enum(sp.Node, "shell", sp.Shell, []string{"Bash", "PowerShell"}, "shell")
		}
		if src := sp.Source; src != nil {
			if src.Type != "Inline" {
				c.diags.Unsupportedf(c.pos(pipeline.ValueAt(src.Node, "type")), "unsupported-field", "a %s artifact script: Gantry runs inline scripts", src.Type)
			} else if src.Spec == nil || src.Spec.Script == "" {
				c.diags.Errorf(c.pos(src.Node), "missing-field", "the artifact script needs `spec.script`")
			}
		}
	}
}

// artifactSource checks the fields an artifact source's type needs: a file in a bucket for
// AmazonS3, an image path for the registries.
func (c *checker) artifactSource(src pipeline.ArtifactSource) {
	s := src.Spec
	if s == nil {
		return
	}
	if src.Type == "CustomArtifact" {
		c.customArtifact(s)
		return
	}
	if f := s.RepositoryFormat; f != "" && f != "docker" && !dynamic(f) {
		// A file (artifactPath in a generic, maven, npm... repository), valid in the reference.
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "repositoryFormat")), "unsupported-artifact-type",
			"a %s artifact of repositoryFormat %s (a file) is valid in the reference, but Gantry deploys images from %s registries yet", src.Type, f, src.Type).
			SetHint("repositoryFormat: docker, with imagePath and tag")
		return
	}
	if src.Type == "AmazonMachineImage" {
		if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
			c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
		}
		c.required(s.Node, s.Region, "region", "spec")
		if s.Version == "" && s.VersionRegex == "" {
			c.diags.Errorf(c.pos(s.Node), "missing-field", "an AmazonMachineImage artifact source needs `version` or `versionRegex`").
				SetHint("version: the image's name; or versionRegex: a pattern (* and ?), the newest image whose name matches is deployed")
		}
		return
	}
	if src.Type != "AmazonS3" {
		c.required(s.Node, s.ImagePath, "imagePath", "spec")
		return
	}
	if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
		c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
	}
	c.required(s.Node, s.BucketName, "bucketName", "spec")
	if s.FilePath == "" && s.FilePathRegex == "" {
		c.diags.Errorf(c.pos(s.Node), "missing-field", "an AmazonS3 artifact source needs `filePath` or `filePathRegex`").
			SetHint("filePath: the object's key, e.g. builds/app-1.2.3.zip; or filePathRegex: a pattern, the newest matching object is deployed")
	}
}

var awsCredentialKind = pipeline.Kind{What: "AWS credential type", Code: "unsupported-aws-credential",
	Runs: []string{"ManualConfig", "InheritFromDelegate", "Irsa"}, Reference: []string{"OidcAuthentication"},
	Hint: "Gantry signs with keys (ManualConfig) or the worker's own AWS credentials (InheritFromDelegate, Irsa)"}

// awsConnector checks an Aws connector's credential.
func (c *checker) awsConnector(a *pipeline.AwsConnectorSpec) {
	cr := a.Credential
	if cr == nil {
		return
	}
	c.boolean(a.Node, "executeOnDelegate", a.ExecuteOnDelegate)
	for _, k := range []string{"proxy", "awsSdkClientBackOffStrategyOverride"} {
		if n := pipeline.Field(a.Node, k); n != nil && !(k == "proxy" && n.Value == "false") {
			c.diags.Warnf(c.pos(n), "reference-field-ignored", "`%s` is a field of the reference that Gantry does not act on yet; the AWS SDK's defaults apply", k)
		}
	}
	if !awsCredentialKind.Check(&c.diags, c.pos(pipeline.ValueAt(cr.Node, "type")), cr.Type) {
		return
	}
	s := cr.Spec
	if cr.Type == "ManualConfig" {
		if s == nil {
			c.diags.Errorf(c.pos(cr.Node), "missing-field", "a ManualConfig credential needs spec.accessKey (or accessKeyRef) and spec.secretKeyRef").
				SetHint("spec: {accessKey: AKIA..., secretKeyRef: aws_secret_key}")
			return
		}
		if s.AccessKey == "" && s.AccessKeyRef == "" {
			c.diags.Errorf(c.pos(s.Node), "missing-field", "a ManualConfig credential needs `accessKey` or `accessKeyRef`").
				SetHint("accessKey: the key id, or accessKeyRef: a secret holding it")
		}
		c.required(s.Node, s.SecretKeyRef, "secretKeyRef", "spec")
	} else if s != nil && (s.AccessKey != "" || s.AccessKeyRef != "" || s.SecretKeyRef != "") {
		c.diags.Errorf(c.pos(s.Node), "credential", "%s credentials take no keys: the worker's own AWS credentials sign", cr.Type).
			SetHint("use type ManualConfig to give keys")
	}
	if x := cr.CrossAccountAccess; x != nil && x.CrossAccountRoleArn != "" && !dynamic(x.CrossAccountRoleArn) && !strings.HasPrefix(x.CrossAccountRoleArn, "arn:") {
		c.diags.Errorf(c.pos(pipeline.ValueAt(x.Node, "crossAccountRoleArn")), "arn", "crossAccountRoleArn %q is not a role ARN", x.CrossAccountRoleArn).
			SetHint("arn:aws:iam::ACCOUNT:role/NAME")
	}
}

func (c *checker) connector(k *pipeline.Connector) {
	c.identifier(k.Node, "identifier", k.Identifier, "connector")
	c.name(k.Node, k.Name, "connector")
	if k.Aws != nil {
		c.awsConnector(k.Aws)
		return
	}
	if k.Git != nil || k.SCM != nil {
		c.gitConnector(k)
		return
	}
	if k.Jira != nil {
		c.jiraConnector(k.Jira)
		return
	}
	if k.ServiceNow != nil {
		c.serviceNowConnector(k.ServiceNow)
		return
	}
	if k.Vault != nil {
		c.vaultConnector(k.Vault)
		return
	}
	if k.AwsSM != nil {
		c.awsSecretManager(k.AwsSM)
		return
	}
	if p := k.Prometheus; p != nil {
		c.urlValue(pipeline.ValueAt(p.Node, "url"), p.URL)
		if p.PasswordRef != "" && p.Username == "" {
			c.diags.Errorf(c.pos(pipeline.ValueAt(p.Node, "passwordRef")), "missing-field", "a password without a username").
				SetHint("Prometheus connectors authenticate with basic auth: set username too")
		}
		for _, h := range p.Headers {
			c.boolean(h.Node, "valueEncrypted", h.ValueEncrypted)
		}
		return
	}
	if d := k.Docker; d != nil {
		c.enum(d.Node, "providerType", d.ProviderType, []string{"DockerHub", "Harbor", "Quay", "Other"}, "providerType")
		c.registryAuth(d.Auth)
		return
	}
	if h := k.Helm; h != nil {
		c.registryAuth(h.Auth)
		return
	}
	if k.K8s == nil || k.K8s.Credential == nil {
		return
	}
	cr := k.K8s.Credential
	c.enum(cr.Node, "type", cr.Type, []string{"InheritFromDelegate", "Kubeconfig", "ManualConfig"}, "credential type")
	s := cr.Spec
	switch cr.Type {
	case "ManualConfig":
		if s == nil || s.MasterURL == "" || s.Auth == nil {
			c.diags.Errorf(c.pos(cr.Node), "missing-field", "a ManualConfig credential needs spec.masterUrl and spec.auth").
				SetHint("auth: {type: ServiceAccount, spec: {serviceAccountTokenRef: my_token_secret}}")
			return
		}
		c.enum(s.Auth.Node, "type", s.Auth.Type, []string{"ServiceAccount"}, "auth type")
		c.boolean(s.Node, "insecureSkipTlsVerify", s.InsecureSkipTLSVerify)
	case "Kubeconfig", "InheritFromDelegate":
		if s != nil && (s.MasterURL != "" || s.Auth != nil) {
			c.diags.Errorf(c.pos(s.Node), "credential", "%s credentials take no masterUrl or auth", cr.Type).
				SetHint("use type ManualConfig to give a master URL and token")
		}
	}
}

// registryAuth checks a registry's or chart repository's auth: Anonymous, or a username (or
// a secret holding it) and a password secret.
func (c *checker) registryAuth(a *pipeline.RegistryAuth) {
	if a == nil {
		return
	}
	c.enum(a.Node, "type", a.Type, []string{"Anonymous", "UsernamePassword"}, "auth type")
	if a.Type == "UsernamePassword" {
		if a.Spec == nil {
			c.required(a.Node, "", "spec", "auth")
		} else {
			c.gitCredentials(a.Spec, "Http", "passwordRef")
		}
	}
}

// secretKind is what `secret:` documents Gantry reads: SSH credentials, and text secrets kept in a
// secret manager connector (or in the default store).
var secretKind = pipeline.Kind{What: "secret type", Code: "unsupported-secret-type", Runs: []string{"SSHKey", "SecretText"},
	Reference: []string{"SecretFile", "WinRmCredentials"},
	Hint:      "Gantry reads secret values from its secret stores (GANTRY_SECRET_<ID>, the secrets file, AWS Secrets Manager, Vault connectors); a `secret:` document describes an SSH credential or a text secret"}

// secret checks a `secret:` document: an SSH credential with a key (a secret holding it, or a
// file on the worker) or a password.
func (c *checker) secret(s *pipeline.Secret) {
	c.identifier(s.Node, "identifier", s.Identifier, "secret")
	c.name(s.Node, s.Name, "secret")
	if !secretKind.Check(&c.diags, c.pos(pipeline.ValueAt(s.Node, "type")), s.Type) {
		return
	}
	if t := s.TextSpec(c.dec); t != nil {
		c.secretText(t)
		return
	}
	cred := s.SSHKeySpec(c.dec)
	if cred == nil || cred.Auth == nil {
		return
	}
	c.integer(cred.Node, "port", cred.Port, 1, false, "port")
	a := cred.Auth
	if a.Type == "Kerberos" {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(a.Node, "type")), "unsupported-secret-type", "Kerberos SSH logins are not supported: Gantry logs in with a key or a password").
			SetHint("auth: {type: SSH, spec: {credentialType: KeyReference, spec: {userName: ..., key: SECRET}}}")
		return
	}
	c.enum(a.Node, "type", a.Type, []string{"SSH", "Kerberos"}, "SSH auth type")
	if a.Spec == nil {
		c.diags.Errorf(c.pos(a.Node), "missing-field", "SSH auth needs `spec`")
		return
	}
	c.enum(a.Spec.Node, "credentialType", a.Spec.CredentialType, []string{"KeyReference", "KeyPath", "Password"}, "SSH credentialType")
	if l := a.Spec.Spec; l != nil {
		switch a.Spec.CredentialType {
		case "KeyReference":
			c.required(l.Node, l.Key, "key", "spec")
		case "KeyPath":
			c.required(l.Node, l.KeyPath, "keyPath", "spec")
		case "Password":
			c.required(l.Node, l.Password, "password", "spec")
		}
	}
}

// pdc checks a Pdc (physical data center) infrastructure: a list of hosts and the SSH credential that logs
// in to them. Hosts a connector lists (hostArrayPath, connectorRef), host groups and host
// filters other than All are not run yet.
func (c *checker) pdc(s *pipeline.InfrastructureSpec) {
	if c.required(s.Node, s.CredentialsRef, "credentialsRef", "spec") && !dynamic(s.CredentialsRef) {
		c.reference(s.Node, "credentialsRef", s.CredentialsRef, "secret")
	}
	for _, k := range []string{"connectorRef", "hostArrayPath", "hostGroups", "hostAttributes"} {
		if n := pipeline.Field(s.Node, k); n != nil {
			c.diags.Unsupportedf(c.pos(pipeline.Key(s.Node, k)), "unsupported-field",
				"%s: Gantry deploys to the hosts an infrastructure lists in `hosts`; hosts from a connector, host groups and attributes are not supported yet", k).
				SetHint("hosts: [web-1.example.com, web-2.example.com]")
		}
	}
	if f := s.HostFilter; f != nil {
		t := pipeline.Field(f, "type")
		switch {
		case t == nil || t.Value == "All":
		case t.Value == "HostNames":
			if v := pipeline.Field(pipeline.Field(f, "spec"), "value"); v == nil || v.Kind != yaml.SequenceNode {
				c.diags.Unsupportedf(c.pos(f), "unsupported-field", "hostFilter HostNames: Gantry needs `spec.value` as a list of the hosts to keep before the run").
					SetHint("hostFilter: {type: HostNames, spec: {value: [web-1.example.com]}}")
			}
		default:
			c.diags.Unsupportedf(c.pos(t), "unsupported-field", "hostFilter %s: Gantry deploys to all the hosts listed, or those named (HostNames)", t.Value).
				SetHint("hostFilter: {type: All}")
		}
	}
	if s.Hosts == nil && pipeline.Field(s.Node, "connectorRef") == nil && pipeline.Field(s.Node, "hostGroups") == nil {
		c.diags.Errorf(c.pos(s.Node), "missing-field", "a Pdc infrastructure needs `hosts`").
			SetHint("hosts: [web-1.example.com, web-2.example.com:2222]")
	}
	if h := s.Hosts; h != nil && h.Kind == yaml.SequenceNode && len(h.Content) == 0 {
		c.diags.Errorf(c.pos(h), "empty", "the infrastructure lists no hosts")
	}
}

// awsHosts checks an SshWinRmAws infrastructure: the AWS connector and region that list the
// instances, the filter selecting them, the address to reach them at and the SSH credential.
func (c *checker) awsHosts(s *pipeline.InfrastructureSpec) {
	if c.required(s.Node, s.ConnectorRef, "connectorRef", "spec") {
		c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
	}
	if c.required(s.Node, s.CredentialsRef, "credentialsRef", "spec") && !dynamic(s.CredentialsRef) {
		c.reference(s.Node, "credentialsRef", s.CredentialsRef, "secret")
	}
	c.required(s.Node, s.Region, "region", "spec")
	if c.required(s.Node, s.HostConnectionType, "hostConnectionType", "spec") {
		c.enum(s.Node, "hostConnectionType", s.HostConnectionType, []string{"PublicIP", "PrivateIP"}, "host connection type")
	}
	if s.AsgName != "" {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(s.Node, "asgName")), "unsupported-field",
			"asgName: Gantry lists the instances an awsInstanceFilter selects, not those of an Auto Scaling group").
			SetHint("awsInstanceFilter: {tags: {aws:autoscaling:groupName: %s}}", s.AsgName)
	}
	if n := s.TargetedHosts; n != nil {
		c.diags.Unsupportedf(c.pos(n), "unsupported-field", "targetedHosts: Gantry deploys to every instance the filter selects")
	}
	if f := s.AwsInstanceFilter; f != nil {
		if t := f.Tags; t != nil && t.Kind != yaml.MappingNode {
			c.diags.Unsupportedf(c.pos(t), "unsupported-expression", "awsInstanceFilter.tags as one value: Gantry needs the tags as a map before the run").
				SetHint("tags: {app: shop}")
		}
		if v := f.Vpcs; v != nil && v.Kind != yaml.SequenceNode {
			c.diags.Unsupportedf(c.pos(v), "unsupported-expression", "awsInstanceFilter.vpcs as one value: Gantry needs the VPCs as a list before the run").
				SetHint("vpcs: [vpc-0abc]")
		}
	}
}

// configStores are the stores config files are read from.
var configStores = map[string]bool{"Local": true, "Git": true, "Github": true, "GitLab": true, "Gitlab": true, "Bitbucket": true}

// configFiles checks an Ssh service's config files: identifiers, and stores Gantry reads
// (files beside the service).
func (c *checker) configFiles(typ string, files []pipeline.ConfigFileElement) {
	seen := map[string]bool{}
	for _, e := range files {
		f := e.ConfigFile
		if f == nil {
			continue
		}
		if seen[f.Identifier] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(f.Node, "identifier")), "duplicate-identifier", "config file %q is declared twice", f.Identifier)
		}
		seen[f.Identifier] = true
		if f.Spec != nil && f.Spec.Store != nil && !configStores[f.Spec.Store.Type] {
			c.diags.Unsupportedf(c.pos(pipeline.ValueAt(f.Spec.Store.Node, "type")), "unsupported-manifest-store",
				"config file %s: a %s store is not read yet; Gantry copies config files kept beside the service or in Git", f.Identifier, f.Spec.Store.Type).
				SetHint("store: {type: Local, spec: {paths: [config/app.properties]}}")
		}
	}
}
