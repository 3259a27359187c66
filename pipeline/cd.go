package pipeline

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/stepspec"
)

// The CD entities a Deployment stage refers to (spec 15.1): services, environments,
// infrastructure definitions and the connectors they use. Each is a file of its own with one
// root key, in the shapes Harness uses.

// Service is a `service:` document.
type Service struct {
	Node          *yaml.Node `yaml:"-"`
	Entity        `yaml:",inline"`
	GitOpsEnabled string `yaml:"gitOpsEnabled"`
	// ServiceDefinition is what the service deploys; a service may be declared without one
	// (the reference creates such services), but a stage cannot deploy it.
	ServiceDefinition *ServiceDefinition `yaml:"serviceDefinition"`
}

// ServiceDefinition is a service's deployment type and what it deploys.
type ServiceDefinition = Typed[ServiceSpec]

// ServiceSpec holds manifests, artifacts and service variables.
type ServiceSpec struct {
	Node      *yaml.Node        `yaml:"-"`
	Manifests []ManifestElement `yaml:"manifests"`
	Artifacts *ServiceArtifacts `yaml:"artifacts"`
	Variables []Variable        `yaml:"variables"`
	// ConfigFiles are the files an Ssh service's Copy command units put on the hosts.
	ConfigFiles []ConfigFileElement `yaml:"configFiles"`
	// CustomDeploymentRef is a CustomDeployment service's deployment template.
	CustomDeploymentRef *DeploymentTemplateRef `yaml:"customDeploymentRef"`
	// UserData is an Asg service's user data script, for its launch template.
	UserData *ManifestSpec `yaml:"userData"`
}

// DeploymentTemplateRef names a CustomDeployment template and, optionally, its version.
type DeploymentTemplateRef struct {
	Node         *yaml.Node `yaml:"-"`
	TemplateRef  string     `yaml:"templateRef" gantry:"required"`
	VersionLabel string     `yaml:"versionLabel"`
}

// ManifestElement is one entry of `manifests`.
type ManifestElement struct {
	Node     *yaml.Node `yaml:"-"`
	Manifest *Manifest  `yaml:"manifest" gantry:"required"`
}

// Manifest is a set of Kubernetes manifest files with values files.
type Manifest struct {
	Typed[ManifestSpec] `yaml:",inline"`
	Identifier          string `yaml:"identifier" gantry:"required"`
}

// ManifestSpec is where a manifest's files are and how they are rendered; OverlayConfiguration
// a Kustomize overlay (stepspec's: K8sApply steps carry a manifest of their own).
type (
	ManifestSpec         = stepspec.ManifestSpec
	OverlayConfiguration = stepspec.OverlayConfiguration
)

// ManifestStore locates manifest files (stepspec's: services and steps hold stores alike).
type (
	ManifestStore      = stepspec.ManifestStore
	ManifestStoreSpec  = stepspec.ManifestStoreSpec
	OciChartConfig     = stepspec.OciChartConfig
	OciChartConfigSpec = stepspec.OciChartConfigSpec
)

// ServiceArtifacts is the primary artifact and its sources.
type ServiceArtifacts struct {
	Node    *yaml.Node       `yaml:"-"`
	Primary *PrimaryArtifact `yaml:"primary"`
}

// PrimaryArtifact picks one of its sources, or is one artifact itself (`type` and `spec`, the
// legacy v1 form that serviceConfig stages carry).
type PrimaryArtifact struct {
	Node               *yaml.Node          `yaml:"-"`
	PrimaryArtifactRef string              `yaml:"primaryArtifactRef"`
	Sources            []ArtifactSource    `yaml:"sources"`
	Type               string              `yaml:"type"`
	Spec               *ArtifactSourceSpec `yaml:"spec"`
}

// LegacySource is the identifier the legacy form's one artifact is known by.
const LegacySource = "primary"

// Selected is the artifact source deployed: the legacy form's artifact, or the source that
// primaryArtifactRef names; nil when none is chosen yet.
func (p *PrimaryArtifact) Selected() *ArtifactSource {
	if p.Type != "" && p.Spec != nil {
		return &ArtifactSource{Typed: Typed[ArtifactSourceSpec]{Node: p.Node, Type: p.Type, Spec: p.Spec}, Identifier: LegacySource}
	}
	for i := range p.Sources {
		if p.Sources[i].Identifier == p.PrimaryArtifactRef {
			return &p.Sources[i]
		}
	}
	return nil
}

// ArtifactSource is an image in a registry.
type ArtifactSource struct {
	Typed[ArtifactSourceSpec] `yaml:",inline"`
	Identifier                string `yaml:"identifier" gantry:"required"`
}

// ArtifactSourceSpec is the image path and its tag, or a regular expression the tag matches;
// with a DockerRegistry connector the tag is resolved to a digest when the stage starts. An
// AmazonS3 source is a file in a bucket: filePath, or the newest key matching filePathRegex.
type ArtifactSourceSpec struct {
	Node         *yaml.Node `yaml:"-"`
	ConnectorRef string     `yaml:"connectorRef"`
	ImagePath    string     `yaml:"imagePath"`
	Tag          string     `yaml:"tag"`
	TagRegex     string     `yaml:"tagRegex"`
	Digest       string     `yaml:"digest"`
	Registry     string     `yaml:"registryHostname"`
	// Artifactory and Nexus: docker (an image) or a file format (generic, maven, ...).
	RepositoryFormat string `yaml:"repositoryFormat"`
	// AmazonS3.
	BucketName    string `yaml:"bucketName"`
	FilePath      string `yaml:"filePath"`
	FilePathRegex string `yaml:"filePathRegex"`
	Region        string `yaml:"region"`
	// CustomArtifact: the version deployed, or the highest matching versionRegex among those
	// the fetchAllArtifacts script lists (run on a worker with inputs as its environment).
	Version      string `yaml:"version"`
	VersionRegex string `yaml:"versionRegex"`
	// AmazonMachineImage: the image's tags and EC2 filters (name and value each).
	Tags              []NameValue            `yaml:"tags"`
	Filters           []NameValue            `yaml:"filters"`
	Scripts           *CustomArtifactScripts `yaml:"scripts"`
	Inputs            []Variable             `yaml:"inputs"`
	Timeout           string                 `yaml:"timeout"`
	DelegateSelectors *yaml.Node             `yaml:"delegateSelectors"`
	Metadata          string                 `yaml:"metadata"`
}

// CustomArtifactScripts are a CustomArtifact source's scripts.
type CustomArtifactScripts struct {
	Node              *yaml.Node         `yaml:"-"`
	FetchAllArtifacts *FetchAllArtifacts `yaml:"fetchAllArtifacts" gantry:"required"`
}

// FetchAllArtifacts lists a CustomArtifact source's artifacts: the script writes JSON to
// $HARNESS_ARTIFACT_RESULT_PATH; the list is at artifactsArrayPath, each artifact's version
// at versionPath and its attributes (name: path) become <+artifact.metadata.NAME>.
type FetchAllArtifacts struct {
	Node               *yaml.Node                `yaml:"-"`
	ArtifactsArrayPath string                    `yaml:"artifactsArrayPath"`
	VersionPath        string                    `yaml:"versionPath"`
	Attributes         []Variable                `yaml:"attributes"`
	Spec               *CustomArtifactScriptInfo `yaml:"spec" gantry:"required"`
}

// CustomArtifactScriptInfo is the listing script: its shell and inline source.
type CustomArtifactScriptInfo struct {
	Node   *yaml.Node                   `yaml:"-"`
	Shell  string                       `yaml:"shell" gantry:"required"`
	Source *Typed[CustomArtifactInline] `yaml:"source" gantry:"required"`
}

// CustomArtifactInline is an inline script.
type CustomArtifactInline struct {
	Node   *yaml.Node `yaml:"-"`
	Script string     `yaml:"script"`
}

// Environment is an `environment:` document.
type Environment struct {
	Node      *yaml.Node `yaml:"-"`
	Entity    `yaml:",inline"`
	Type      string     `yaml:"type" gantry:"required"`
	Variables []Variable `yaml:"variables"`
	// ServiceOverrides are service-specific variable overrides (spec 10.3 level 3).
	ServiceOverrides []ServiceOverride `yaml:"serviceOverrides"`
}

// ServiceOverride overrides one service's variables in an environment.
type ServiceOverride struct {
	Node       *yaml.Node `yaml:"-"`
	ServiceRef string     `yaml:"serviceRef" gantry:"required"`
	Variables  []Variable `yaml:"variables" gantry:"required"`
}

// EnvironmentGroup is an `environmentGroup:` document: environments deployed to together
// (spec 21.1).
type EnvironmentGroup struct {
	Node           *yaml.Node `yaml:"-"`
	Entity         `yaml:",inline"`
	Color          string   `yaml:"color"`
	EnvIdentifiers []string `yaml:"envIdentifiers" gantry:"required"`
}

// Infrastructure is an `infrastructureDefinition:` document.
type Infrastructure struct {
	Entity                       `yaml:",inline"`
	Typed[InfrastructureSpec]    `yaml:",inline"`
	EnvironmentRef               string `yaml:"environmentRef" gantry:"required"`
	DeploymentType               string `yaml:"deploymentType" gantry:"required"`
	AllowSimultaneousDeployments string `yaml:"allowSimultaneousDeployments"`
}

// InfrastructureSpec is where an infrastructure deploys: a KubernetesDirect cluster's
// namespace, or an AwsLambda account's region.
type InfrastructureSpec struct {
	Node         *yaml.Node `yaml:"-"`
	ConnectorRef string     `yaml:"connectorRef"` // all but CustomDeployment
	Namespace    string     `yaml:"namespace"`
	ReleaseName  string     `yaml:"releaseName"`
	Region       string     `yaml:"region"`
	Cluster      string     `yaml:"cluster"` // ECS
	// BaseAsgName is the Auto Scaling group an Asg infrastructure's steps deploy by default.
	BaseAsgName string `yaml:"baseAsgName"`
	// Provisioner names the environment provisioner whose outputs the fields use.
	Provisioner string `yaml:"provisioner"`
	// Pdc: the hosts and the SSH credential (a `secret:` of type SSHKey) that logs in to them.
	CredentialsRef string     `yaml:"credentialsRef"`
	Hosts          *yaml.Node `yaml:"hosts"`
	HostFilter     *yaml.Node `yaml:"hostFilter"`
	HostAttributes *yaml.Node `yaml:"hostAttributes"`
	HostArrayPath  string     `yaml:"hostArrayPath"`
	HostGroups     *yaml.Node `yaml:"hostGroups"`
	// SshWinRmAws: the running EC2 instances of `region` the filter selects, reached at their
	// HostConnectionType address with the SSH credential.
	HostConnectionType string             `yaml:"hostConnectionType"`
	AwsInstanceFilter  *AwsInstanceFilter `yaml:"awsInstanceFilter"`
	AsgName            string             `yaml:"asgName"`
	TargetedHosts      *yaml.Node         `yaml:"targetedHosts"`
	// DelegateSelectors (Pdc, SshWinRmAws) pick the delegate that reaches the hosts.
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
	// CustomDeployment: the deployment template and the values of its infrastructure variables.
	CustomDeploymentRef *DeploymentTemplateRef `yaml:"customDeploymentRef"`
	Variables           []Variable             `yaml:"variables"`
}

// AwsInstanceFilter selects EC2 instances: all the tags (a map), in one of the VPCs.
type AwsInstanceFilter struct {
	Node *yaml.Node `yaml:"-"`
	Tags *yaml.Node `yaml:"tags"`
	Vpcs *yaml.Node `yaml:"vpcs"`
}

// Connector is a `connector:` document. Gantry knows K8sCluster connectors and the Git
// connectors (Git, Github, Gitlab, Bitbucket); the spec is decoded by type.
type Connector struct {
	Node   *yaml.Node `yaml:"-"`
	Entity `yaml:",inline"`
	Type   string     `yaml:"type" gantry:"required"`
	Spec   *yaml.Node `yaml:"spec" gantry:"required"`

	// Decoded from Spec by type: one of them is set.
	K8s        *K8sClusterSpec          `yaml:"-"`
	Docker     *DockerRegistrySpec      `yaml:"-"` // type DockerRegistry
	Git        *GitConnectorSpec        `yaml:"-"` // type Git
	SCM        *SCMConnectorSpec        `yaml:"-"` // type Github, Gitlab or Bitbucket
	Helm       *HelmRepoSpec            `yaml:"-"` // type HttpHelmRepo or OciHelmRepo
	Aws        *AwsConnectorSpec        `yaml:"-"` // type Aws
	Prometheus *PrometheusConnectorSpec `yaml:"-"` // type Prometheus
	Jira       *JiraConnectorSpec       `yaml:"-"` // type Jira
	ServiceNow *ServiceNowConnectorSpec `yaml:"-"` // type ServiceNow
	Vault      *VaultConnectorSpec      `yaml:"-"` // type Vault
	AwsSM      *AwsSecretManagerSpec    `yaml:"-"` // type AwsSecretManager
}

// AwsConnectorSpec is an Aws connector: how a worker signs requests to AWS.
type AwsConnectorSpec struct {
	Node                                *yaml.Node     `yaml:"-"`
	Credential                          *AwsCredential `yaml:"credential" gantry:"required"`
	ExecuteOnDelegate                   string         `yaml:"executeOnDelegate"`
	DelegateSelectors                   []string       `yaml:"delegateSelectors"`
	Proxy                               string         `yaml:"proxy"`
	AwsSdkClientBackOffStrategyOverride *yaml.Node     `yaml:"awsSdkClientBackOffStrategyOverride"`
}

// AwsCredential is where the keys come from: ManualConfig (an access key, or a secret holding
// it, and a secret key), InheritFromDelegate and Irsa (the worker's own AWS credentials), or
// OidcAuthentication; optionally a role in another account to assume, and a default region.
type AwsCredential struct {
	Node               *yaml.Node         `yaml:"-"`
	Type               string             `yaml:"type" gantry:"required"`
	Spec               *AwsCredentialSpec `yaml:"spec"`
	CrossAccountAccess *AwsCrossAccount   `yaml:"crossAccountAccess"`
	Region             string             `yaml:"region"`
}

// AwsCredentialSpec holds ManualConfig's keys (or OidcAuthentication's role).
type AwsCredentialSpec struct {
	Node         *yaml.Node `yaml:"-"`
	AccessKey    string     `yaml:"accessKey"`
	AccessKeyRef string     `yaml:"accessKeyRef"`
	SecretKeyRef string     `yaml:"secretKeyRef"`
	IamRoleArn   string     `yaml:"iamRoleArn"`
}

// AwsCrossAccount is a role the connector's credentials assume, with the external ID the
// role's trust policy demands.
type AwsCrossAccount struct {
	Node                *yaml.Node `yaml:"-"`
	CrossAccountRoleArn string     `yaml:"crossAccountRoleArn" gantry:"required"`
	ExternalID          string     `yaml:"externalId"`
}

// HelmRepoSpec is an HttpHelmRepo connector (a chart repository serving index.yaml) or an
// OciHelmRepo connector (an OCI registry holding charts): its URL and credentials.
type HelmRepoSpec struct {
	Node              *yaml.Node    `yaml:"-"`
	HelmRepoURL       string        `yaml:"helmRepoUrl" gantry:"required"`
	Auth              *RegistryAuth `yaml:"auth" gantry:"required"`
	DelegateSelectors []string      `yaml:"delegateSelectors"`
}

// K8sClusterSpec holds a K8sCluster connector's credential.
type K8sClusterSpec struct {
	Node              *yaml.Node     `yaml:"-"`
	Credential        *K8sCredential `yaml:"credential" gantry:"required"`
	DelegateSelectors []string       `yaml:"delegateSelectors"`
}

// DockerRegistrySpec is a DockerRegistry connector: a registry's URL and its credentials.
type DockerRegistrySpec struct {
	Node              *yaml.Node    `yaml:"-"`
	DockerRegistryURL string        `yaml:"dockerRegistryUrl" gantry:"required"`
	ProviderType      string        `yaml:"providerType"`
	Auth              *RegistryAuth `yaml:"auth" gantry:"required"`
	DelegateSelectors []string      `yaml:"delegateSelectors"`
}

// RegistryAuth is Anonymous, or UsernamePassword with a username (or a secret holding it) and
// a password secret.
type RegistryAuth struct {
	Node *yaml.Node      `yaml:"-"`
	Type string          `yaml:"type" gantry:"required"`
	Spec *GitCredentials `yaml:"spec"`
}

// GitConnectorSpec is a Git connector: any Git server, over HTTP (type Http, username and
// password) or SSH (type Ssh, a key).
type GitConnectorSpec struct {
	Node              *yaml.Node      `yaml:"-"`
	URL               string          `yaml:"url" gantry:"required"`
	ConnectionType    string          `yaml:"connectionType" gantry:"required"`
	Type              string          `yaml:"type" gantry:"required"`
	Spec              *GitCredentials `yaml:"spec" gantry:"required"`
	DelegateSelectors []string        `yaml:"delegateSelectors"`
}

// SCMConnectorSpec is a Github, Gitlab or Bitbucket connector: an account (organization) or
// one repository, and how to authenticate.
type SCMConnectorSpec struct {
	Node           *yaml.Node             `yaml:"-"`
	URL            string                 `yaml:"url" gantry:"required"`
	Type           string                 `yaml:"type" gantry:"required"` // Account or Repo
	Authentication *Typed[GitCredentials] `yaml:"authentication" gantry:"required"`
	// APIAccess is how the reference reaches the provider's API (commit statuses, pull
	// requests); Gantry reports CI stages' commit statuses through it.
	APIAccess         *Typed[APIAccessSpec] `yaml:"apiAccess"`
	DelegateSelectors []string              `yaml:"delegateSelectors"`
}

// APIAccessSpec is a Github, Gitlab or Bitbucket connector's API credential: a token (Token,
// OAuth), a username with a token (Bitbucket's UsernameToken), or a GitHub App.
type APIAccessSpec struct {
	Node              *yaml.Node `yaml:"-"`
	Username          string     `yaml:"username"`
	UsernameRef       string     `yaml:"usernameRef"`
	TokenRef          string     `yaml:"tokenRef"`
	RefreshTokenRef   string     `yaml:"refreshTokenRef"`
	InstallationID    string     `yaml:"installationId"`
	InstallationIDRef string     `yaml:"installationIdRef"`
	ApplicationID     string     `yaml:"applicationId"`
	ApplicationIDRef  string     `yaml:"applicationIdRef"`
	PrivateKeyRef     string     `yaml:"privateKeyRef"`
}

// GitCredentials are a Git connector's credentials: a username (or a secret holding it) with
// a password or token secret, or an SSH key secret. Github, Gitlab and Bitbucket nest the HTTP
// ones one level down, under the kind of HTTP credential (UsernameToken, UsernamePassword).
type GitCredentials struct {
	Node        *yaml.Node      `yaml:"-"`
	Type        string          `yaml:"type"`
	Spec        *GitCredentials `yaml:"spec"`
	Username    string          `yaml:"username"`
	UsernameRef string          `yaml:"usernameRef"`
	PasswordRef string          `yaml:"passwordRef"`
	TokenRef    string          `yaml:"tokenRef"`
	SSHKeyRef   string          `yaml:"sshKeyRef"`
}

// K8sCredential is how the worker reaches the cluster:
//   - InheritFromDelegate: the worker's in-cluster service account, or its KUBECONFIG;
//   - Kubeconfig: a kubeconfig file on the worker and an optional context (a Gantry addition);
//   - ManualConfig: a master URL and a service-account token from the secret resolver.
type K8sCredential struct {
	Node *yaml.Node   `yaml:"-"`
	Type string       `yaml:"type" gantry:"required"`
	Spec *K8sCredSpec `yaml:"spec"`
}

// K8sCredSpec is the credential's settings; which apply depends on the type.
type K8sCredSpec struct {
	Node                  *yaml.Node `yaml:"-"`
	MasterURL             string     `yaml:"masterUrl"`
	Auth                  *K8sAuth   `yaml:"auth"`
	InsecureSkipTLSVerify string     `yaml:"insecureSkipTlsVerify"`
	Path                  string     `yaml:"path"`
	Context               string     `yaml:"context"`
}

// K8sAuth is ManualConfig's authentication; only ServiceAccount tokens are supported.
type K8sAuth = Typed[K8sAuthSpec]

// K8sAuthSpec names the secrets holding the token and, optionally, the CA certificate.
type K8sAuthSpec struct {
	Node                   *yaml.Node `yaml:"-"`
	ServiceAccountTokenRef string     `yaml:"serviceAccountTokenRef" gantry:"required"`
	CACertRef              string     `yaml:"caCertRef"`
}

// DeploymentStageService is a Deployment stage's `service` section.
type DeploymentStageService struct {
	Node          *yaml.Node    `yaml:"-"`
	ServiceRef    string        `yaml:"serviceRef"`
	ServiceInputs *yaml.Node    `yaml:"serviceInputs"`
	UseFromStage  *UseFromStage `yaml:"useFromStage"`
}

// DeploymentStageEnvironment is a Deployment stage's `environment` section.
type DeploymentStageEnvironment struct {
	Node                      *yaml.Node    `yaml:"-"`
	EnvironmentRef            string        `yaml:"environmentRef"`
	DeployToAll               string        `yaml:"deployToAll"`
	InfrastructureDefinitions []InfraRef    `yaml:"infrastructureDefinitions"`
	EnvironmentInputs         *yaml.Node    `yaml:"environmentInputs"`
	ServiceOverrideInputs     *yaml.Node    `yaml:"serviceOverrideInputs"`
	Provisioner               *yaml.Node    `yaml:"provisioner"`
	UseFromStage              *UseFromStage `yaml:"useFromStage"`
}

// InfraRef picks an infrastructure definition of the environment.
type InfraRef struct {
	Node       *yaml.Node `yaml:"-"`
	Identifier string     `yaml:"identifier" gantry:"required"`
	Inputs     *yaml.Node `yaml:"inputs"`
}

// UseFromStage propagates a section from an earlier stage.
type UseFromStage struct {
	Node  *yaml.Node `yaml:"-"`
	Stage string     `yaml:"stage" gantry:"required"`
}

// decodeSpec decodes the connector's spec by its type (one of ConnectorKind.Runs; the spec of
// another type was left undecoded and reported).
func (c *Connector) decodeSpec(d *Decoder) {
	if c.Spec == nil {
		return
	}
	switch c.Type {
	case "K8sCluster":
		c.K8s = &K8sClusterSpec{}
		d.Decode(c.Spec, c.K8s, "spec")
	case "DockerRegistry":
		c.Docker = &DockerRegistrySpec{}
		d.Decode(c.Spec, c.Docker, "spec")
	case "Git":
		c.Git = &GitConnectorSpec{}
		d.Decode(c.Spec, c.Git, "spec")
	case "Github", "Gitlab", "Bitbucket":
		c.SCM = &SCMConnectorSpec{}
		d.Decode(c.Spec, c.SCM, "spec")
	case "HttpHelmRepo", "OciHelmRepo":
		c.Helm = &HelmRepoSpec{}
		d.Decode(c.Spec, c.Helm, "spec")
	case "Aws":
		c.Aws = &AwsConnectorSpec{}
		d.Decode(c.Spec, c.Aws, "spec")
	case "Prometheus":
		c.Prometheus = &PrometheusConnectorSpec{}
		d.Decode(c.Spec, c.Prometheus, "spec")
	case "Jira":
		c.Jira = &JiraConnectorSpec{}
		d.Decode(c.Spec, c.Jira, "spec")
	case "ServiceNow":
		c.ServiceNow = &ServiceNowConnectorSpec{}
		d.Decode(c.Spec, c.ServiceNow, "spec")
	case "Vault":
		c.Vault = &VaultConnectorSpec{}
		d.Decode(c.Spec, c.Vault, "spec")
	case "AwsSecretManager":
		c.AwsSM = &AwsSecretManagerSpec{}
		d.Decode(c.Spec, c.AwsSM, "spec")
	}
}

// Access says how the connector reaches its server: the K8s credential type, or Http or Ssh.
func (c *Connector) Access() string {
	switch {
	case c.K8s != nil && c.K8s.Credential != nil:
		return c.K8s.Credential.Type
	case c.Docker != nil && c.Docker.Auth != nil:
		return c.Docker.Auth.Type
	case c.Git != nil:
		return c.Git.Type
	case c.SCM != nil && c.SCM.Authentication != nil:
		return c.SCM.Authentication.Type
	case c.Helm != nil && c.Helm.Auth != nil:
		return c.Helm.Auth.Type
	case c.Aws != nil && c.Aws.Credential != nil:
		return c.Aws.Credential.Type
	case c.Prometheus != nil && c.Prometheus.Username != "":
		return "BasicAuth"
	case c.Prometheus != nil:
		return "Anonymous"
	case c.Jira != nil:
		return c.Jira.AuthType()
	case c.ServiceNow != nil:
		return c.ServiceNow.AuthType()
	}
	return ""
}

// NameValue is a name and a value: an AMI artifact's tag or filter.
type NameValue struct {
	Node  *yaml.Node `yaml:"-"`
	Name  string     `yaml:"name"`
	Value string     `yaml:"value"`
}
