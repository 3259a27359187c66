package plan

import (
	"net/url"
	"path"
	"strings"
)

// Deployment is what a Deployment stage deploys, resolved from the service, environment,
// infrastructure and connector files when the run was submitted (spec 15.1). Manifest and
// values files are copied in, so every worker deploys exactly what was validated and a rerun
// deploys the same definition. Texts may hold expressions, rendered when a step uses them.
type Deployment struct {
	Type        string          `json:"type"` // Kubernetes
	Service     *Service        `json:"service,omitempty"`
	Environment *Environment    `json:"environment,omitempty"`
	Infra       *Infrastructure `json:"infra,omitempty"`
	// ServiceFrom and EnvFrom name the earlier stage a `useFromStage` section propagates.
	ServiceFrom string `json:"serviceFrom,omitempty"`
	EnvFrom     string `json:"envFrom,omitempty"`
	// StepManifests are K8sApply steps' own manifests (manifestSource), by the step's path
	// below the stage (spec.execution.steps.ID, ...).
	StepManifests map[string]Manifest `json:"stepManifests,omitempty"`
	// Freezes are the enabled deployment freezes whose rules match this deployment; the
	// stage checks their windows when it starts.
	Freezes []Freeze `json:"freezes,omitempty"`
	// Monitored is the monitored service of the service in the environment: the metrics a
	// Verify step reads unless it names another.
	Monitored *MonitoredService `json:"monitored,omitempty"`
	// Project (org/project) scopes the deployments ledger's target (empty in plans made before
	// the ledger: default/default).
	Project string `json:"project,omitempty"`
}

// Service is a resolved service.
type Service struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Type        string            `json:"type"`
	Variables   []Variable        `json:"variables,omitempty"`
	Manifests   []Manifest        `json:"manifests,omitempty"`
	Artifact    *Artifact         `json:"artifact,omitempty"`
	// ConfigFiles are an Ssh service's config files, copied in when the run was submitted;
	// ConfigStores those kept in Git, fetched when the stage starts.
	ConfigFiles  []File     `json:"configFiles,omitempty"`
	ConfigStores []Manifest `json:"configStores,omitempty"`
}

// Manifest is a set of manifest files (in order) and values files (later ones win). Files of
// a Local store are copied in when the run is submitted; those of a Git store are fetched by a
// worker at the stage's service phase (Store says where), at one commit for the whole stage.
type Manifest struct {
	ID             string    `json:"id"`
	Type           string    `json:"type"`
	Files          []File    `json:"files,omitempty"`
	Values         []File    `json:"values,omitempty"`
	SkipVersioning bool      `json:"skipVersioning,omitempty"`
	Store          *GitStore `json:"store,omitempty"`
	// Chart is where a HelmChart of a chart repository is pulled from, at the service phase.
	Chart *ChartRepo `json:"chart,omitempty"`
	// S3 is a bucket the files are read from at the service phase.
	S3 *S3Store `json:"s3,omitempty"`
	// Folder is, for a Kustomize manifest, the folder (relative to the files' root) whose
	// kustomization is built, and for a HelmChart the chart's folder; Files then hold every
	// file of the store's folder.
	Folder string `json:"folder,omitempty"`
}

// ChartRepo is a Helm chart in a chart repository: an Http store (a repository serving
// index.yaml) or an OciHelmChart store (an OCI registry, the chart at BasePath/Name). Version
// may be a semver constraint or empty (the latest) and may hold expressions; ValuesPaths are
// files inside the chart. Digest pins an OCI chart's manifest (a rerun's).
type ChartRepo struct {
	Type        string            `json:"type"` // Http or OciHelmChart
	Connector   RegistryConnector `json:"connector"`
	BasePath    string            `json:"basePath,omitempty"`
	Name        string            `json:"name"`
	Version     string            `json:"version,omitempty"`
	Digest      string            `json:"digest,omitempty"`
	ValuesPaths []string          `json:"valuesPaths,omitempty"`
}

// Pin is how a run records which chart it pulled: version, and @digest for an OCI chart.
func (c *ChartRepo) Pin(version, digest string) string {
	if digest == "" {
		return version
	}
	return version + "@" + digest
}

// MaxManifestBytes bounds the files one manifest carries: they travel in the run's plan or in
// an activity's result, and Temporal refuses payloads above 2 MB.
const MaxManifestBytes = 1 << 20

// GitStore is where a manifest's files live in Git: a repository reached through a Git
// connector, at a branch's head or a commit, with the paths of the manifest and values files.
// Branch and Commit may hold expressions, rendered at the service phase.
type GitStore struct {
	Type        string       `json:"type"` // Git, Github, Gitlab, Bitbucket
	Connector   GitConnector `json:"connector"`
	RepoName    string       `json:"repoName,omitempty"` // for Account connectors
	Branch      string       `json:"branch,omitempty"`
	Commit      string       `json:"commit,omitempty"` // set: fetch this commit, not the branch's head
	Paths       []string     `json:"paths,omitempty"`
	ValuesPaths []string     `json:"valuesPaths,omitempty"`
	// AllFiles reads every file of the paths' folders, not only manifests (a kustomization's
	// generators and patches).
	AllFiles bool `json:"allFiles,omitempty"`
}

// GitConnector says how a worker reaches a Git server. Secrets are named, never held.
type GitConnector struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	URL            string `json:"url"`
	ConnectionType string `json:"connectionType"` // Account (URL + repoName) or Repo
	Username       string `json:"username,omitempty"`
	UsernameRef    string `json:"usernameRef,omitempty"`
	PasswordRef    string `json:"passwordRef,omitempty"` // a password or a token
	SSHKeyRef      string `json:"sshKeyRef,omitempty"`
	// API reaches a Github, Gitlab or Bitbucket connector's API (nil: none, or a GitHub App).
	API *GitAPI `json:"api,omitempty"`
}

// GitAPI is a connector's API credential: a token secret, with a username for Bitbucket.
type GitAPI struct {
	Type        string `json:"type"` // Token, OAuth or UsernameToken
	Username    string `json:"username,omitempty"`
	UsernameRef string `json:"usernameRef,omitempty"`
	TokenRef    string `json:"tokenRef"`
}

// RepoURL is the repository a store names: the connector's URL, joined with the store's
// repoName for an Account connector.
func (g *GitStore) RepoURL() string {
	if g.Connector.ConnectionType != "Account" || g.RepoName == "" {
		return g.Connector.URL
	}
	base := g.Connector.URL
	if !strings.HasSuffix(base, "/") && !strings.HasSuffix(base, ":") {
		base += "/"
	}
	return base + g.RepoName
}

// Repo names the store's repository: its repoName, else the last segment of its URL.
func (g *GitStore) Repo() string {
	if g.RepoName != "" {
		return g.RepoName
	}
	return strings.TrimSuffix(path.Base(strings.TrimSuffix(g.Connector.URL, "/")), ".git")
}

// RepoDisplay is RepoURL for messages: a password written into the URL is masked.
func (g *GitStore) RepoDisplay() string {
	if u, err := url.Parse(g.RepoURL()); err == nil && u.User != nil {
		return u.Redacted()
	}
	return g.RepoURL()
}

// File is a file's path (relative to its manifest store) and content.
type File struct {
	Path string `json:"path"`
	Text string `json:"text"`
	// ConfigFile is the service config file it belongs to (config files only).
	ConfigFile string `json:"configFile,omitempty"`
}

// Artifact is the primary artifact. With a registry connector (Connector), the tag (or the
// highest tag matching TagRegex) is resolved to a digest by a worker when the stage starts;
// Digest set pins it. Tag, TagRegex and ImagePath may hold expressions.
type Artifact struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	ConnectorRef string             `json:"connectorRef,omitempty"`
	Registry     string             `json:"registry,omitempty"`
	ImagePath    string             `json:"imagePath"`
	Tag          string             `json:"tag"`
	TagRegex     string             `json:"tagRegex,omitempty"`
	Digest       string             `json:"digest,omitempty"`
	Connector    *RegistryConnector `json:"connector,omitempty"`
	// S3 is an AmazonS3 source: a file in a bucket, found when the stage starts.
	S3 *S3Artifact `json:"s3,omitempty"`
	// Custom is a CustomArtifact source whose versions a script lists, run when the stage
	// starts.
	Custom *CustomArtifactScript `json:"custom,omitempty"`
	// Ami is an AmazonMachineImage source: an image found when the stage starts.
	Ami *AmiArtifact `json:"ami,omitempty"`
}

// AmiArtifact is an EC2 image of a region: the one named Version, or the newest whose name
// matches VersionRegex, among the account's available images with all the Tags and Filters.
// Each may hold expressions.
type AmiArtifact struct {
	Connector    AwsConnector `json:"connector"`
	Region       string       `json:"region"`
	Tags         []NameValue  `json:"tags,omitempty"`
	Filters      []NameValue  `json:"filters,omitempty"`
	Version      string       `json:"version,omitempty"`
	VersionRegex string       `json:"versionRegex,omitempty"`
}

// NameValue is a named value: an image tag or filter.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CustomArtifactScript lists a CustomArtifact source's artifacts: Script (Bash, with Inputs
// as its environment) writes JSON to $HARNESS_ARTIFACT_RESULT_PATH holding a list at
// ArrayPath; each artifact's version is at VersionPath and its Attributes become
// `<+artifact.metadata.NAME>`. The stage deploys Version, or the highest version matching
// VersionRegex. Script, inputs, Version and VersionRegex may hold expressions.
type CustomArtifactScript struct {
	Script       string              `json:"script"`
	Inputs       []Variable          `json:"inputs,omitempty"`
	ArrayPath    string              `json:"arrayPath"`
	VersionPath  string              `json:"versionPath"`
	Attributes   []InstanceAttribute `json:"attributes,omitempty"`
	Version      string              `json:"version,omitempty"`
	VersionRegex string              `json:"versionRegex,omitempty"`
}

// S3Artifact is a file in a bucket: FilePath, or the newest key matching FilePathRegex. Each
// may hold expressions.
type S3Artifact struct {
	Connector     AwsConnector `json:"connector"`
	Bucket        string       `json:"bucket"`
	Region        string       `json:"region,omitempty"`
	FilePath      string       `json:"filePath,omitempty"`
	FilePathRegex string       `json:"filePathRegex,omitempty"`
}

// S3Store is a manifest's S3 bucket: Paths are object keys or key prefixes (folders) in it.
type S3Store struct {
	Connector   AwsConnector `json:"connector"`
	Bucket      string       `json:"bucket"`
	Region      string       `json:"region,omitempty"`
	Paths       []string     `json:"paths"`
	ValuesPaths []string     `json:"valuesPaths,omitempty"`
}

// AwsConnector says how a worker signs AWS requests. Secrets are named, never held.
type AwsConnector struct {
	ID string `json:"id"`
	// Credential is ManualConfig (AccessKey or AccessKeyRef, and SecretKeyRef), or
	// InheritFromDelegate or Irsa (the worker's default credential chain).
	Credential   string `json:"credential"`
	AccessKey    string `json:"accessKey,omitempty"`
	AccessKeyRef string `json:"accessKeyRef,omitempty"`
	SecretKeyRef string `json:"secretKeyRef,omitempty"`
	// RoleARN is a role the credentials assume (cross-account access), with ExternalID.
	RoleARN    string `json:"roleArn,omitempty"`
	ExternalID string `json:"externalId,omitempty"`
	// Region is the connector's default region.
	Region string `json:"region,omitempty"`
	// Selectors are the connector's delegate selectors: the workers that use it.
	Selectors []string `json:"selectors,omitempty"`
}

// RegistryConnector says how a worker reaches an image registry or a chart repository.
// Secrets are named, never held.
type RegistryConnector struct {
	ID          string `json:"id"`
	URL         string `json:"url"` // https://registry.example.com, or http:// for a plain one
	Username    string `json:"username,omitempty"`
	UsernameRef string `json:"usernameRef,omitempty"`
	PasswordRef string `json:"passwordRef,omitempty"`
}

// Environment is a resolved environment with the overrides for the stage's service.
type Environment struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Description      string            `json:"description,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	Type             string            `json:"type"`
	Variables        []Variable        `json:"variables,omitempty"`
	ServiceOverrides []Variable        `json:"serviceOverrides,omitempty"`
	// GroupRef is the environment group the environment was deployed through (spec 21.3).
	GroupRef string `json:"groupRef,omitempty"`
}

// Infrastructure is a resolved infrastructure definition: a cluster's namespace and connector,
// or (Type AwsLambda, ECS) an AWS account's region (and ECS cluster) and its Aws connector.
type Infrastructure struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Type        string            `json:"type,omitempty"` // KubernetesDirect when empty
	Tags        map[string]string `json:"tags,omitempty"`
	Namespace   string            `json:"namespace"`
	ReleaseName string            `json:"releaseName,omitempty"`
	Connector   Connector         `json:"connector"`
	Aws         *AwsConnector     `json:"aws,omitempty"`
	Region      string            `json:"region,omitempty"`
	Cluster     string            `json:"cluster,omitempty"` // ECS
	// BaseAsgName is an Asg infrastructure's group (may hold expressions).
	BaseAsgName string `json:"baseAsgName,omitempty"`
	// Custom is a CustomDeployment infrastructure's deployment template.
	Custom *CustomInfra `json:"custom,omitempty"`
	// Ssh is a Pdc infrastructure: its hosts and their SSH login.
	Ssh *SshInfra `json:"ssh,omitempty"`
	// AllowSimultaneous lets stages deploy to the infrastructure at the same time
	// (allowSimultaneousDeployments); otherwise one at a time, the others waiting.
	AllowSimultaneous bool `json:"allowSimultaneous,omitempty"`
}

// SshInfra is the hosts of a Pdc infrastructure (each may hold expressions, or host:port) and
// the SSH credential that logs in to them.
type SshInfra struct {
	Hosts      []string      `json:"hosts"`
	Credential SSHCredential `json:"credential"`
	// Project (org/project) scopes the records of what the hosts were deployed with.
	Project string `json:"project,omitempty"`
	// Only keeps the hosts named (a hostFilter of type HostNames); empty keeps all.
	Only []string `json:"only,omitempty"`
	// Aws lists the hosts when the stage starts (an SshWinRmAws infrastructure; Hosts empty).
	Aws *AwsHosts `json:"aws,omitempty"`
}

// AwsHosts selects an SshWinRmAws infrastructure's hosts: the running EC2 instances of Region
// carrying every tag of Tags, in one of Vpcs when listed, reached at their public address
// when PublicIP is set, else their private one. Region and tag values may hold expressions.
type AwsHosts struct {
	Connector AwsConnector      `json:"connector"`
	Region    string            `json:"region"`
	Tags      map[string]string `json:"tags,omitempty"`
	Vpcs      []string          `json:"vpcs,omitempty"`
	PublicIP  bool              `json:"publicIp,omitempty"`
}

// SSHCredential is an SSHKey secret as a worker uses it: the user, and the key (a secret, or a
// file on the worker) or the password, named, never held.
type SSHCredential struct {
	ID            string `json:"id"`
	User          string `json:"user"`
	KeyRef        string `json:"keyRef,omitempty"`
	KeyPath       string `json:"keyPath,omitempty"`
	PassphraseRef string `json:"passphraseRef,omitempty"`
	PasswordRef   string `json:"passwordRef,omitempty"`
	Port          int    `json:"port,omitempty"`
}

// CustomInfra is a CustomDeployment infrastructure: its deployment template's script that
// lists the instances (run by a FetchInstanceScript step, with the stage's expressions
// rendered), where the list is in the JSON it writes, the attributes kept of each instance,
// and the template's infrastructure variables with the infrastructure's values over them.
type CustomInfra struct {
	Template   string              `json:"template"` // identifier@version
	Script     string              `json:"script"`
	ListPath   string              `json:"listPath"`
	Attributes []InstanceAttribute `json:"attributes"`
	Variables  []Variable          `json:"variables,omitempty"`
}

// InstanceAttribute names a field of each instance (JSONPath, dot-separated).
type InstanceAttribute struct {
	Name     string `json:"name"`
	JSONPath string `json:"jsonPath"`
}

// Connector says how a worker reaches the cluster. Secrets are named, never held.
type Connector struct {
	ID                    string `json:"id"`
	Name                  string `json:"name"`
	Type                  string `json:"type"` // InheritFromDelegate, Kubeconfig, ManualConfig
	MasterURL             string `json:"masterUrl,omitempty"`
	TokenRef              string `json:"tokenRef,omitempty"`
	CACertRef             string `json:"caCertRef,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTlsVerify,omitempty"`
	Kubeconfig            string `json:"kubeconfig,omitempty"`
	Context               string `json:"context,omitempty"`
}

// Pinned returns a copy of the deployment whose Git stores fetch the given commits (manifest
// identifier → commit; for a chart of a repository, its ChartRepo.Pin) and whose artifact resolves to the given digest, the ones an earlier run
// of the stage deployed; d itself is unchanged.
func (d *Deployment) Pinned(commits map[string]string, digest string) *Deployment {
	if d == nil || d.Service == nil || (len(commits) == 0 && digest == "") {
		return d
	}
	out, sv := *d, *d.Service
	if a := sv.Artifact; a != nil && a.Connector != nil && digest != "" {
		pinned := *a
		pinned.Digest = digest
		sv.Artifact = &pinned
	}
	sv.Manifests = append([]Manifest(nil), sv.Manifests...)
	for i := range sv.Manifests {
		m := &sv.Manifests[i]
		c, ok := commits[m.ID]
		switch {
		case ok && m.Store != nil:
			st := *m.Store
			st.Commit = c
			m.Store = &st
		case ok && m.Chart != nil:
			ch := *m.Chart
			ch.Version, ch.Digest, _ = strings.Cut(c, "@")
			m.Chart = &ch
		}
	}
	out.Service = &sv
	if len(d.StepManifests) > 0 {
		out.StepManifests = make(map[string]Manifest, len(d.StepManifests))
		for k, m := range d.StepManifests {
			if c, ok := commits[k]; ok && m.Store != nil {
				st := *m.Store
				st.Commit = c
				m.Store = &st
			}
			out.StepManifests[k] = m
		}
	}
	return &out
}
