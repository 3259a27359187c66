package pipeline

import "gopkg.in/yaml.v3"

// The CD entities a Deployment stage refers to (spec 15.1): services, environments,
// infrastructure definitions and the connectors they use. Each is a file of its own with one
// root key, in the shapes Harness uses.

// Service is a `service:` document.
type Service struct {
	Node              *yaml.Node `yaml:"-"`
	Entity            `yaml:",inline"`
	GitOpsEnabled     string             `yaml:"gitOpsEnabled"`
	ServiceDefinition *ServiceDefinition `yaml:"serviceDefinition" gantry:"required"`
}

// ServiceDefinition is a service's deployment type and what it deploys.
type ServiceDefinition = Typed[ServiceSpec]

// ServiceSpec holds manifests, artifacts and service variables.
type ServiceSpec struct {
	Node      *yaml.Node        `yaml:"-"`
	Manifests []ManifestElement `yaml:"manifests"`
	Artifacts *ServiceArtifacts `yaml:"artifacts"`
	Variables []Variable        `yaml:"variables"`
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

// ManifestSpec is where a manifest's files are and how they are rendered.
type ManifestSpec struct {
	Node                      *yaml.Node     `yaml:"-"`
	Store                     *ManifestStore `yaml:"store" gantry:"required"`
	ValuesPaths               []string       `yaml:"valuesPaths"`
	SkipResourceVersioning    string         `yaml:"skipResourceVersioning"`
	EnableDeclarativeRollback string         `yaml:"enableDeclarativeRollback"`
}

// ManifestStore locates manifest files. Gantry reads `Local` stores: paths relative to the
// service file, read when the run is submitted.
type ManifestStore = Typed[ManifestStoreSpec]

// ManifestStoreSpec lists files and folders.
type ManifestStoreSpec struct {
	Node  *yaml.Node `yaml:"-"`
	Paths []string   `yaml:"paths" gantry:"required"`
}

// ServiceArtifacts is the primary artifact and its sources.
type ServiceArtifacts struct {
	Node    *yaml.Node       `yaml:"-"`
	Primary *PrimaryArtifact `yaml:"primary"`
}

// PrimaryArtifact picks one of its sources.
type PrimaryArtifact struct {
	Node               *yaml.Node       `yaml:"-"`
	PrimaryArtifactRef string           `yaml:"primaryArtifactRef" gantry:"required"`
	Sources            []ArtifactSource `yaml:"sources" gantry:"required"`
}

// ArtifactSource is an image in a registry.
type ArtifactSource struct {
	Typed[ArtifactSourceSpec] `yaml:",inline"`
	Identifier                string `yaml:"identifier" gantry:"required"`
}

// ArtifactSourceSpec is the image path and tag.
type ArtifactSourceSpec struct {
	Node         *yaml.Node `yaml:"-"`
	ConnectorRef string     `yaml:"connectorRef"`
	ImagePath    string     `yaml:"imagePath" gantry:"required"`
	Tag          string     `yaml:"tag" gantry:"required"`
	Registry     string     `yaml:"registryHostname"`
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

// InfrastructureSpec is where a KubernetesDirect infrastructure deploys.
type InfrastructureSpec struct {
	Node         *yaml.Node `yaml:"-"`
	ConnectorRef string     `yaml:"connectorRef" gantry:"required"`
	Namespace    string     `yaml:"namespace" gantry:"required"`
	ReleaseName  string     `yaml:"releaseName"`
}

// Connector is a `connector:` document. Gantry knows K8sCluster connectors.
type Connector struct {
	Entity               `yaml:",inline"`
	Typed[ConnectorSpec] `yaml:",inline"`
}

// ConnectorSpec holds a K8sCluster connector's credential.
type ConnectorSpec struct {
	Node              *yaml.Node     `yaml:"-"`
	Credential        *K8sCredential `yaml:"credential" gantry:"required"`
	DelegateSelectors []string       `yaml:"delegateSelectors"`
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
