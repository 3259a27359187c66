package stepspec

import "gopkg.in/yaml.v3"

// The container step types, run by the container family (one kind each) in a CI stage's pod,
// a containerized step group's pod or on a build machine.
const (
	// The command steps: their command runs in a container of the group's pod (or on a build
	// machine, as a process or in a container of their image).
	Run        = "Run"
	RunTests   = "RunTests"
	Background = "Background"
	Plugin     = "Plugin"
	// Container runs its command in a pod of its own.
	Container = "Container"
	// The image builds, in the BuildKit image.
	BuildAndPushDockerRegistry = "BuildAndPushDockerRegistry"
	BuildAndPushECR            = "BuildAndPushECR"
	// The steps the worker does for the pod through its helper container.
	GitClone          = "GitClone"
	SaveCacheS3       = "SaveCacheS3"
	RestoreCacheS3    = "RestoreCacheS3"
	S3Upload          = "S3Upload"
	DownloadManifests = "DownloadManifests"
)

// ContainerSettings are what the container steps share: the image, its registry, and how its
// container runs. The family reads the image settings where it runs the container itself (on
// a build machine); in a pod, the workflow sized the container from the plan.
type ContainerSettings struct {
	ConnectorRef    string              `yaml:"connectorRef" json:"connectorRef"`
	Image           string              `yaml:"image" json:"image"`
	ImagePullPolicy string              `yaml:"imagePullPolicy" json:"imagePullPolicy"`
	Privileged      Text                `yaml:"privileged" json:"privileged"`
	RunAsUser       Text                `yaml:"runAsUser" json:"runAsUser"`
	Resources       *ContainerResources `yaml:"resources" json:"-"`
	Reports         *Reports            `yaml:"reports" json:"reports"`
}

// ImageSettings returns the container's settings, and that the step must name an image.
func (s *ContainerSettings) ImageSettings() (*ContainerSettings, bool) { return s, true }

// Reports are the JUnit files a step writes, read into the execution's test summary (not a
// Typed: validation words what a report without its paths lacks).
type Reports struct {
	Node *yaml.Node   `yaml:"-" json:"-"`
	Type string       `yaml:"type" json:"type"`
	Spec *ReportPaths `yaml:"spec" json:"spec"`
}

// ReportPaths are the report files, as globs in the workspace.
type ReportPaths struct {
	Node  *yaml.Node `yaml:"-" json:"-"`
	Paths List       `yaml:"paths" json:"paths"`
}

// CommandSettings are what the command steps share: the shell, the command and its
// environment.
type CommandSettings struct {
	Shell string `yaml:"shell" json:"shell"`
	// Command is the script; without one the image's entrypoint runs, as for a Plugin step.
	Command      string          `yaml:"command" json:"command"`
	EnvVariables map[string]Text `yaml:"envVariables" json:"envVariables"`
}

// RunSpec runs a command in its own container of a containerized step group (or on a build
// machine).
type RunSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	ContainerSettings `yaml:",inline"`
	CommandSettings   `yaml:",inline"`
	RegistryRef       string          `yaml:"registryRef" json:"-"`
	OutputVariables   []NameTypeValue `yaml:"outputVariables" json:"outputVariables"`
	OutputAlias       *OutputAlias    `yaml:"outputAlias" json:"-"`
}

// BackgroundSpec starts a service container that keeps running while the group's later steps
// run. A CI stage's service dependencies run as Background steps with args (after the
// entrypoint, or the image's), which the YAML of a step does not have.
type BackgroundSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	ContainerSettings `yaml:",inline"`
	CommandSettings   `yaml:",inline"`
	Entrypoint        []string        `yaml:"entrypoint" json:"entrypoint"`
	Args              []string        `yaml:"-" json:"args"`
	PortBindings      map[string]Text `yaml:"portBindings" json:"portBindings"`
}

// PluginSpec runs a Drone-style plugin image: settings become PLUGIN_* environment variables.
type PluginSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	ContainerSettings `yaml:",inline"`
	RegistryRef       string         `yaml:"registryRef" json:"-"`
	Entrypoint        []string       `yaml:"entrypoint" json:"entrypoint"`
	Settings          map[string]any `yaml:"settings" json:"settings"`
	Uses              string         `yaml:"uses" json:"-"`
}

// ImageSettings returns the container's settings; a plugin named from the catalog (uses)
// names no image.
func (s *PluginSpec) ImageSettings() (*ContainerSettings, bool) {
	return &s.ContainerSettings, s.Uses == ""
}

// ContainerSpec runs a command in a pod of its own, on the step's infrastructure.
type ContainerSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	ContainerSettings `yaml:",inline"`
	CommandSettings   `yaml:",inline"`
	Entrypoint        []string        `yaml:"entrypoint" json:"entrypoint"`
	Infrastructure    *StepGroupInfra `yaml:"infrastructure" json:"-" gantry:"required"`
	Settings          *yaml.Node      `yaml:"settings" json:"-"`
	Metadata          string          `yaml:"metadata" json:"-"`
	OutputVariables   []NameTypeValue `yaml:"outputVariables" json:"outputVariables"`
}

// RunTestsSpec runs a build tool's tests as a Run step: preCommand, the tool with args, then
// postCommand (RunTestsCommand). Test selection (Test Intelligence) is the vendor's: every
// test runs, and the fields that guide it are warned about.
type RunTestsSpec struct {
	Node                 *yaml.Node `yaml:"-" json:"-"`
	ContainerSettings    `yaml:",inline"`
	Language             string          `yaml:"language" json:"language" gantry:"required"`
	BuildTool            string          `yaml:"buildTool" json:"buildTool" gantry:"required"`
	Args                 string          `yaml:"args" json:"args"`
	PreCommand           string          `yaml:"preCommand" json:"preCommand"`
	PostCommand          string          `yaml:"postCommand" json:"postCommand"`
	Shell                string          `yaml:"shell" json:"shell"`
	EnvVariables         map[string]Text `yaml:"envVariables" json:"envVariables"`
	OutputVariables      []NameTypeValue `yaml:"outputVariables" json:"outputVariables"`
	RunOnlySelectedTests string          `yaml:"runOnlySelectedTests" json:"-"`
	EnableTestSplitting  string          `yaml:"enableTestSplitting" json:"-"`
	TestSplitStrategy    string          `yaml:"testSplitStrategy" json:"-"`
	TestAnnotations      string          `yaml:"testAnnotations" json:"-"`
	TestGlobs            string          `yaml:"testGlobs" json:"-"`
	TestRoot             string          `yaml:"testRoot" json:"-"`
	Packages             string          `yaml:"packages" json:"-"`
	Namespaces           string          `yaml:"namespaces" json:"-"`
	BuildEnvironment     string          `yaml:"buildEnvironment" json:"-"`
	FrameworkVersion     string          `yaml:"frameworkVersion" json:"-"`
	PythonVersion        string          `yaml:"pythonVersion" json:"-"`
}

// BuildSettings are what the BuildAndPush steps share: how the image is built.
type BuildSettings struct {
	Context                string              `yaml:"context" json:"context"`
	Dockerfile             string              `yaml:"dockerfile" json:"dockerfile"`
	Target                 string              `yaml:"target" json:"target"`
	Labels                 map[string]Text     `yaml:"labels" json:"labels"`
	BuildArgs              map[string]Text     `yaml:"buildArgs" json:"buildArgs"`
	CacheFrom              []string            `yaml:"cacheFrom" json:"cacheFrom"`
	CacheTo                string              `yaml:"cacheTo" json:"cacheTo"`
	Caching                string              `yaml:"caching" json:"-"`
	Optimize               string              `yaml:"optimize" json:"-"`
	BaseImageConnectorRefs *yaml.Node          `yaml:"baseImageConnectorRefs" json:"-"`
	Resources              *ContainerResources `yaml:"resources" json:"-"`
	RunAsUser              string              `yaml:"runAsUser" json:"-"`
}

// BuildAndPushSpec builds a Dockerfile with BuildKit and pushes the image with each of its
// tags to repo on a DockerRegistry connector's registry.
type BuildAndPushSpec struct {
	Node            *yaml.Node `yaml:"-" json:"-"`
	ConnectorRef    string     `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	Repo            string     `yaml:"repo" json:"repo" gantry:"required"`
	Tags            []Text     `yaml:"tags" json:"tags" gantry:"required"`
	RemoteCacheRepo string     `yaml:"remoteCacheRepo" json:"remoteCacheRepo"`
	BuildSettings   `yaml:",inline"`
}

// BuildAndPushECRSpec is BuildAndPush to the ECR registry of an account, logged in with an Aws
// connector.
type BuildAndPushECRSpec struct {
	Node             *yaml.Node `yaml:"-" json:"-"`
	ConnectorRef     string     `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	Account          Text       `yaml:"account" json:"account" gantry:"required"`
	Region           string     `yaml:"region" json:"region" gantry:"required"`
	ImageName        string     `yaml:"imageName" json:"imageName" gantry:"required"`
	Tags             []Text     `yaml:"tags" json:"tags" gantry:"required"`
	RemoteCacheImage string     `yaml:"remoteCacheImage" json:"remoteCacheImage"`
	BuildSettings    `yaml:",inline"`
}

// GitCloneSpec clones a repository into the group's workspace. A CI stage's codebase clone
// is a GitClone step with what its codebase adds: how a pull request is built and the commit
// a webhook event named (checkout), not fields of the step's YAML.
type GitCloneSpec struct {
	Node                   *yaml.Node          `yaml:"-" json:"-"`
	ConnectorRef           string              `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	RepoName               string              `yaml:"repoName" json:"repoName"`
	ProjectName            string              `yaml:"projectName" json:"-"`
	Build                  *GitBuild           `yaml:"build" json:"build" gantry:"required"`
	CloneDirectory         string              `yaml:"cloneDirectory" json:"cloneDirectory"`
	Depth                  Text                `yaml:"depth" json:"depth"`
	SSLVerify              Text                `yaml:"sslVerify" json:"sslVerify"`
	LFS                    string              `yaml:"lfs" json:"-"`
	Debug                  string              `yaml:"debug" json:"-"`
	FetchTags              Text                `yaml:"fetchTags" json:"fetchTags"`
	SparseCheckout         []string            `yaml:"sparseCheckout" json:"-"`
	SubmoduleStrategy      string              `yaml:"submoduleStrategy" json:"-"`
	PreFetchCommand        string              `yaml:"preFetchCommand" json:"-"`
	OutputFilePathsContent []string            `yaml:"outputFilePathsContent" json:"-"`
	Resources              *ContainerResources `yaml:"resources" json:"-"`
	RunAsUser              string              `yaml:"runAsUser" json:"-"`
	Privileged             string              `yaml:"privileged" json:"-"`
	BaseImageConnectorRefs *yaml.Node          `yaml:"baseImageConnectorRefs" json:"-"`
	PrCloneStrategy        string              `yaml:"-" json:"prCloneStrategy"`
	Checkout               string              `yaml:"-" json:"checkout"`
}

// GitBuild is what a GitClone step checks out: `type: branch|tag|commitSha|PR` with its value.
type GitBuild = Typed[GitBuildSpec]

// GitBuildSpec holds the branch, tag, commit or pull request number.
type GitBuildSpec struct {
	Node      *yaml.Node `yaml:"-" json:"-"`
	Branch    string     `yaml:"branch" json:"branch"`
	Tag       string     `yaml:"tag" json:"tag"`
	CommitSha string     `yaml:"commitSha" json:"commitSha"`
	Number    Text       `yaml:"number" json:"number"`
}

// CacheS3 is what SaveCacheS3 and RestoreCacheS3 share: the bucket, the key and how the
// archive is written, signed with an Aws connector's credentials (spec 22.2).
type CacheS3 struct {
	Node                   *yaml.Node          `yaml:"-" json:"-"`
	ConnectorRef           string              `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	Region                 string              `yaml:"region" json:"region"`
	Bucket                 string              `yaml:"bucket" json:"bucket" gantry:"required"`
	Key                    string              `yaml:"key" json:"key" gantry:"required"`
	Endpoint               string              `yaml:"endpoint" json:"endpoint"`
	PathStyle              Text                `yaml:"pathStyle" json:"pathStyle"`
	ArchiveFormat          string              `yaml:"archiveFormat" json:"archiveFormat"`
	BaseImageConnectorRefs *yaml.Node          `yaml:"baseImageConnectorRefs" json:"-"`
	Resources              *ContainerResources `yaml:"resources" json:"-"`
	RunAsUser              string              `yaml:"runAsUser" json:"-"`
	Description            string              `yaml:"description" json:"-"`
}

// SaveCacheS3Spec archives sourcePaths of the workspace to bucket/key.
type SaveCacheS3Spec struct {
	CacheS3     `yaml:",inline"`
	SourcePaths List `yaml:"sourcePaths" json:"sourcePaths" gantry:"required"`
	Override    Text `yaml:"override" json:"override"`
}

// RestoreCacheS3Spec unpacks bucket/key into the workspace.
type RestoreCacheS3Spec struct {
	CacheS3           `yaml:",inline"`
	FailIfKeyNotFound Text   `yaml:"failIfKeyNotFound" json:"failIfKeyNotFound"`
	PreserveMetadata  string `yaml:"preserveMetadata" json:"-"`
}

// S3UploadSpec uploads the workspace files sourcePath matches to bucket/target (spec 22.2).
type S3UploadSpec struct {
	Node                   *yaml.Node          `yaml:"-" json:"-"`
	ConnectorRef           string              `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	Region                 string              `yaml:"region" json:"region" gantry:"required"`
	Bucket                 string              `yaml:"bucket" json:"bucket" gantry:"required"`
	SourcePath             string              `yaml:"sourcePath" json:"sourcePath" gantry:"required"`
	Target                 string              `yaml:"target" json:"target"`
	StripPrefix            string              `yaml:"stripPrefix" json:"stripPrefix"`
	Endpoint               string              `yaml:"endpoint" json:"endpoint"`
	BaseImageConnectorRefs *yaml.Node          `yaml:"baseImageConnectorRefs" json:"-"`
	Resources              *ContainerResources `yaml:"resources" json:"-"`
	RunAsUser              string              `yaml:"runAsUser" json:"-"`
	Description            string              `yaml:"description" json:"-"`
}

// DownloadManifestsSpec writes the stage service's manifests into its containerized step
// group's workspace, /harness/<manifest identifier>; the step itself names nothing.
type DownloadManifestsSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}
