// Package steps is the catalog of step types the engine knows: each type's spec shape, decoded
// strictly so that a misspelt spec key is an error before a run, not a silent no-op.
package steps

import (
	"maps"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Entry describes one step type.
type Entry struct {
	Type string
	// New returns a pointer to an empty spec value for the strict decoder.
	New func() any
	// Unresolved says how unresolved expressions in the spec render (spec 9.9): "null",
	// "verbatim" or "fail".
	Unresolved string
	// ValidateOnly types are checked but not run yet: a run with one is refused.
	ValidateOnly bool
}

var catalog = map[string]Entry{}

func register(e Entry) {
	if e.Unresolved == "" {
		e.Unresolved = "null"
	}
	catalog[e.Type] = e
}

func init() {
	register(Entry{Type: "ShellScript", New: func() any { return &ShellScript{} }})
	register(Entry{Type: "Http", New: func() any { return &Http{} }, Unresolved: "verbatim"})
	register(Entry{Type: "Wait", New: func() any { return &Wait{} }})
	register(Entry{Type: "HarnessApproval", New: func() any { return &HarnessApproval{} }})
	register(Entry{Type: "Barrier", New: func() any { return &Barrier{} }})
	register(Entry{Type: "Policy", New: func() any { return &Policy{} }, Unresolved: "fail"})
	register(Entry{Type: "Container", New: func() any { return &Container{} }})
	register(Entry{Type: "Run", New: func() any { return &Run{} }})
	register(Entry{Type: "Background", New: func() any { return &Background{} }})
	register(Entry{Type: "Plugin", New: func() any { return &Plugin{} }})
	register(Entry{Type: "GitClone", New: func() any { return &GitClone{} }})
	register(Entry{Type: "DownloadManifests", New: func() any { return &DownloadManifests{} }})
	register(Entry{Type: "K8sRollingDeploy", New: func() any { return &K8sRollingDeploy{} }})
	register(Entry{Type: "K8sRollingRollback", New: func() any { return &K8sRollingRollback{} }})
	register(Entry{Type: "K8sCanaryDeploy", New: func() any { return &K8sCanaryDeploy{} }})
	register(Entry{Type: "K8sCanaryDelete", New: func() any { return &K8sSimple{} }})
	register(Entry{Type: "K8sBlueGreenDeploy", New: func() any { return &K8sBlueGreenDeploy{} }})
	register(Entry{Type: "K8sBGSwapServices", New: func() any { return &K8sSimple{} }})
	register(Entry{Type: "K8sApply", New: func() any { return &K8sApply{} }})
	register(Entry{Type: "K8sScale", New: func() any { return &K8sScale{} }})
	register(Entry{Type: "K8sDelete", New: func() any { return &K8sDelete{} }})
	register(Entry{Type: "K8sDryRun", New: func() any { return &K8sSimple{} }})
	register(Entry{Type: "HelmDeploy", New: func() any { return &HelmDeploy{} }})
	register(Entry{Type: "HelmRollback", New: func() any { return &HelmRollback{} }})
	register(Entry{Type: "HelmDelete", New: func() any { return &HelmDelete{} }})
	register(Entry{Type: "AwsLambdaDeploy", New: func() any { return &SelectorsOnly{} }})
	register(Entry{Type: "AwsLambdaRollback", New: func() any { return &SelectorsOnly{} }})
	register(Entry{Type: "EcsRollingDeploy", New: func() any { return &EcsRollingDeploy{} }})
	register(Entry{Type: "EcsRollingRollback", New: func() any { return &SelectorsOnly{} }})
	register(Entry{Type: "EcsCanaryDeploy", New: func() any { return &SelectorsOnly{} }})
	register(Entry{Type: "EcsCanaryDelete", New: func() any { return &SelectorsOnly{} }})
	register(Entry{Type: "EcsRunTask", New: func() any { return &EcsRunTask{} }})
	register(Entry{Type: "EcsBlueGreenCreateService", New: func() any { return &EcsBlueGreenCreateService{} }})
	register(Entry{Type: "EcsBlueGreenSwapTargetGroups", New: func() any { return &EcsBlueGreenSwapTargetGroups{} }})
	register(Entry{Type: "EcsBlueGreenRollback", New: func() any { return &SelectorsOnly{} }})
}

// EcsBlueGreenCreateService starts the new version as a green service behind the stage
// listener: the load balancer's prod and stage listeners (and rules) say where traffic goes.
type EcsBlueGreenCreateService struct {
	SelectorsOnly                 `yaml:",inline"`
	LoadBalancer                  string `yaml:"loadBalancer"`
	ProdListener                  string `yaml:"prodListener"`
	ProdListenerRuleArn           string `yaml:"prodListenerRuleArn"`
	StageListener                 string `yaml:"stageListener"`
	StageListenerRuleArn          string `yaml:"stageListenerRuleArn"`
	SameAsAlreadyRunningInstances string `yaml:"sameAsAlreadyRunningInstances"`
}

// EcsBlueGreenSwapTargetGroups sends prod traffic to the green service and downsizes the old one.
type EcsBlueGreenSwapTargetGroups struct {
	SelectorsOnly                 `yaml:",inline"`
	DoNotDownsizeOldService       string `yaml:"doNotDownsizeOldService"`
	DownsizeOldServiceDelayInSecs string `yaml:"downsizeOldServiceDelayInSecs"`
}

// EcsRollingDeploy updates (or creates) the stage's ECS service with a new task definition.
type EcsRollingDeploy struct {
	SelectorsOnly                 `yaml:",inline"`
	SameAsAlreadyRunningInstances string `yaml:"sameAsAlreadyRunningInstances"`
	ForceNewDeployment            string `yaml:"forceNewDeployment"`
	SkipApplicationScaling        string `yaml:"skipApplicationScaling"`
}

// EcsRunTask runs a task: a task definition from a store (or an existing one's ARN), with a
// RunTask request definition, and waits for it to stop unless skipSteadyStateCheck.
type EcsRunTask struct {
	SelectorsOnly            `yaml:",inline"`
	TaskDefinition           *pipeline.ManifestStore `yaml:"taskDefinition"`
	TaskDefinitionArn        string                  `yaml:"taskDefinitionArn"`
	RunTaskRequestDefinition *pipeline.ManifestStore `yaml:"runTaskRequestDefinition"`
	SkipSteadyStateCheck     string                  `yaml:"skipSteadyStateCheck"`
}

// SelectorsOnly is the spec of AwsLambdaDeploy, AwsLambdaRollback and the ECS steps that take
// no settings: the stage's service, infrastructure and artifact say what is deployed, the step
// only where it runs.
type SelectorsOnly struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}

// Lookup returns the catalog entry of a step type.
func Lookup(typ string) (Entry, bool) {
	e, ok := catalog[typ]
	return e, ok
}

// Types lists the known step types, sorted.
func Types() []string { return slices.Sorted(maps.Keys(catalog)) }

// Runs reports whether the engine runs a step type (known and not ValidateOnly).
func Runs(typ string) bool {
	e, ok := catalog[typ]
	return ok && !e.ValidateOnly
}

// Runnable lists the step types the engine runs, sorted.
func Runnable() []string {
	var out []string
	for _, t := range Types() {
		if Runs(t) {
			out = append(out, t)
		}
	}
	return out
}

// NameTypeValue is an input, output or environment variable of a step.
type NameTypeValue struct {
	Node  *yaml.Node `yaml:"-"`
	Name  string     `yaml:"name" gantry:"required"`
	Type  string     `yaml:"type"`
	Value string     `yaml:"value"`
}

// ShellScript runs a script (spec 11.1).
type ShellScript struct {
	Node                  *yaml.Node       `yaml:"-"`
	Shell                 string           `yaml:"shell" gantry:"required"`
	OnDelegate            string           `yaml:"onDelegate"`
	ExecutionTarget       *ExecutionTarget `yaml:"executionTarget"`
	Source                *ScriptSource    `yaml:"source" gantry:"required"`
	EnvironmentVariables  []NameTypeValue  `yaml:"environmentVariables"`
	OutputVariables       []NameTypeValue  `yaml:"outputVariables"`
	DelegateSelectors     *yaml.Node       `yaml:"delegateSelectors"`
	IncludeInfraSelectors string           `yaml:"includeInfraSelectors"`
	OutputAlias           *OutputAlias     `yaml:"outputAlias"`
}

// ExecutionTarget is the remote host of a ShellScript step.
type ExecutionTarget struct {
	Node             *yaml.Node `yaml:"-"`
	Host             string     `yaml:"host"`
	ConnectorRef     string     `yaml:"connectorRef"`
	WorkingDirectory string     `yaml:"workingDirectory"`
}

// ScriptSource says where the script comes from.
type ScriptSource = pipeline.Typed[ScriptInline]

// ScriptInline holds an inline script or a file-store path.
type ScriptInline struct {
	Node   *yaml.Node `yaml:"-"`
	Script string     `yaml:"script"`
	File   string     `yaml:"file"`
}

// OutputAlias publishes outputs under an exported alias (spec 11.4).
type OutputAlias struct {
	Node  *yaml.Node `yaml:"-"`
	Key   string     `yaml:"key" gantry:"required"`
	Scope string     `yaml:"scope" gantry:"required"`
}

// Http calls a URL (spec 15.3).
type Http struct {
	Node              *yaml.Node      `yaml:"-"`
	URL               string          `yaml:"url" gantry:"required"`
	Method            string          `yaml:"method" gantry:"required"`
	Headers           []KeyValue      `yaml:"headers"`
	RequestBody       string          `yaml:"requestBody"`
	Assertion         string          `yaml:"assertion"`
	InputVariables    []NameTypeValue `yaml:"inputVariables"`
	OutputVariables   []NameTypeValue `yaml:"outputVariables"`
	Certificate       string          `yaml:"certificate"`
	CertificateKey    string          `yaml:"certificateKey"`
	DelegateSelectors *yaml.Node      `yaml:"delegateSelectors"`
}

// KeyValue is an HTTP header.
type KeyValue struct {
	Node  *yaml.Node `yaml:"-"`
	Key   string     `yaml:"key" gantry:"required"`
	Value string     `yaml:"value"`
}

// Wait pauses for a duration (spec 15.5).
type Wait struct {
	Node     *yaml.Node `yaml:"-"`
	Duration string     `yaml:"duration" gantry:"required"`
}

// HarnessApproval waits for people to approve (spec 8.1).
type HarnessApproval struct {
	Node                            *yaml.Node      `yaml:"-"`
	ApprovalMessage                 string          `yaml:"approvalMessage" gantry:"required"`
	IncludePipelineExecutionHistory string          `yaml:"includePipelineExecutionHistory" gantry:"required"`
	IsAutoRejectEnabled             string          `yaml:"isAutoRejectEnabled"`
	Approvers                       *Approvers      `yaml:"approvers" gantry:"required"`
	ApproverInputs                  []ApproverInput `yaml:"approverInputs"`
	AutoApproval                    *AutoApproval   `yaml:"autoApproval"`
	CallbackID                      string          `yaml:"callbackId"`
}

// Approvers says who may approve.
type Approvers struct {
	Node                     *yaml.Node `yaml:"-"`
	UserGroups               *yaml.Node `yaml:"userGroups" gantry:"required"`
	MinimumCount             string     `yaml:"minimumCount" gantry:"required"`
	DisallowPipelineExecutor string     `yaml:"disallowPipelineExecutor" gantry:"required"`
}

// ApproverInput is a value approvers fill in.
type ApproverInput struct {
	Node         *yaml.Node `yaml:"-"`
	Name         string     `yaml:"name" gantry:"required"`
	DefaultValue string     `yaml:"defaultValue"`
	Required     string     `yaml:"required"`
	// The choices are a list, or one string (the reference's schema types them so): values
	// separated by commas, or an expression that renders to them when the step starts.
	AllowedValues *yaml.Node `yaml:"allowedValues"`
	SelectOneFrom *yaml.Node `yaml:"selectOneFrom"`
	// SelectManyFrom takes a comma-separated selection of its values.
	SelectManyFrom *yaml.Node `yaml:"selectManyFrom"`
	Regex          string     `yaml:"regex"`
	Description    string     `yaml:"description"`
}

// AutoApproval approves at a deadline.
type AutoApproval struct {
	Node              *yaml.Node `yaml:"-"`
	Action            string     `yaml:"action" gantry:"required"`
	ScheduledDeadline *Deadline  `yaml:"scheduledDeadline" gantry:"required"`
	Comments          string     `yaml:"comments"`
}

// Deadline is a wall-clock time in a time zone.
type Deadline struct {
	Node     *yaml.Node `yaml:"-"`
	TimeZone string     `yaml:"timeZone" gantry:"required"`
	Time     string     `yaml:"time" gantry:"required"`
}

// Barrier waits for the other stages at a barrier (spec 7).
type Barrier struct {
	Node       *yaml.Node `yaml:"-"`
	BarrierRef string     `yaml:"barrierRef" gantry:"required"`
}

// Policy evaluates policy sets against a payload (spec 15.6).
type Policy struct {
	Node       *yaml.Node  `yaml:"-"`
	PolicySets *yaml.Node  `yaml:"policySets" gantry:"required"`
	Type       string      `yaml:"type" gantry:"required"`
	PolicySpec *PolicySpec `yaml:"policySpec" gantry:"required"`
}

// PolicySpec holds the payload.
type PolicySpec struct {
	Node    *yaml.Node `yaml:"-"`
	Payload *yaml.Node `yaml:"payload" gantry:"required"` // JSON text or a mapping
}

// Container runs a command in a container (spec 15.4).
type Container struct {
	Node            *yaml.Node                   `yaml:"-"`
	ConnectorRef    string                       `yaml:"connectorRef"`
	Image           string                       `yaml:"image"`
	Shell           string                       `yaml:"shell"`
	Command         string                       `yaml:"command" gantry:"required"`
	Entrypoint      []string                     `yaml:"entrypoint"`
	Infrastructure  *pipeline.StepGroupInfra     `yaml:"infrastructure" gantry:"required"`
	Settings        *yaml.Node                   `yaml:"settings"`
	Metadata        string                       `yaml:"metadata"`
	EnvVariables    map[string]string            `yaml:"envVariables"`
	OutputVariables []NameTypeValue              `yaml:"outputVariables"`
	Privileged      string                       `yaml:"privileged"`
	ImagePullPolicy string                       `yaml:"imagePullPolicy"`
	RunAsUser       string                       `yaml:"runAsUser"`
	Resources       *pipeline.ContainerResources `yaml:"resources"`
	Reports         *yaml.Node                   `yaml:"reports"`
}

// InContainer reports whether a step type runs in its own container of a containerized step
// group's pod.
func InContainer(t string) bool {
	return t == "Run" || t == "Background" || t == "Plugin" || t == "GitClone" || t == "DownloadManifests"
}

// DownloadManifests writes the stage service's manifests into its containerized step group's
// workspace, /harness/<manifest identifier>.
type DownloadManifests struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}

// ContainerSettings are what the container steps share: the image, its registry, and how the
// container runs.
type ContainerSettings struct {
	ConnectorRef    string                       `yaml:"connectorRef"`
	Image           string                       `yaml:"image"`
	ImagePullPolicy string                       `yaml:"imagePullPolicy"`
	Privileged      string                       `yaml:"privileged"`
	RunAsUser       string                       `yaml:"runAsUser"`
	Resources       *pipeline.ContainerResources `yaml:"resources"`
	Reports         *yaml.Node                   `yaml:"reports"`
}

// Run runs a command in its own container of a containerized step group.
type Run struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	RegistryRef       string            `yaml:"registryRef"`
	Shell             string            `yaml:"shell"`
	Command           string            `yaml:"command" gantry:"required"`
	EnvVariables      map[string]string `yaml:"envVariables"`
	OutputVariables   []NameTypeValue   `yaml:"outputVariables"`
	OutputAlias       *OutputAlias      `yaml:"outputAlias"`
}

// Background starts a service container that keeps running while the group's later steps run.
type Background struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	Shell             string            `yaml:"shell"`
	Command           string            `yaml:"command"`
	Entrypoint        []string          `yaml:"entrypoint"`
	EnvVariables      map[string]string `yaml:"envVariables"`
	PortBindings      map[string]string `yaml:"portBindings"`
}

// Plugin runs a Drone-style plugin image: settings become PLUGIN_* environment variables.
type Plugin struct {
	Node              *yaml.Node `yaml:"-"`
	ContainerSettings `yaml:",inline"`
	RegistryRef       string     `yaml:"registryRef"`
	Entrypoint        []string   `yaml:"entrypoint"`
	Settings          *yaml.Node `yaml:"settings"`
	Uses              string     `yaml:"uses"`
}

// GitClone clones a repository into the group's workspace.
type GitClone struct {
	Node                   *yaml.Node                   `yaml:"-"`
	ConnectorRef           string                       `yaml:"connectorRef" gantry:"required"`
	RepoName               string                       `yaml:"repoName"`
	ProjectName            string                       `yaml:"projectName"`
	Build                  *GitBuild                    `yaml:"build" gantry:"required"`
	CloneDirectory         string                       `yaml:"cloneDirectory"`
	Depth                  string                       `yaml:"depth"`
	SSLVerify              string                       `yaml:"sslVerify"`
	LFS                    string                       `yaml:"lfs"`
	Debug                  string                       `yaml:"debug"`
	FetchTags              string                       `yaml:"fetchTags"`
	SparseCheckout         []string                     `yaml:"sparseCheckout"`
	SubmoduleStrategy      string                       `yaml:"submoduleStrategy"`
	PreFetchCommand        string                       `yaml:"preFetchCommand"`
	OutputFilePathsContent []string                     `yaml:"outputFilePathsContent"`
	Resources              *pipeline.ContainerResources `yaml:"resources"`
	RunAsUser              string                       `yaml:"runAsUser"`
	Privileged             string                       `yaml:"privileged"`
	BaseImageConnectorRefs *yaml.Node                   `yaml:"baseImageConnectorRefs"`
}

// GitBuild is what a GitClone step checks out: `type: branch|tag|commitSha|PR` with its value.
type GitBuild = pipeline.Typed[GitBuildSpec]

// GitBuildSpec holds the branch, tag, commit or pull request number.
type GitBuildSpec struct {
	Node      *yaml.Node `yaml:"-"`
	Branch    string     `yaml:"branch"`
	Tag       string     `yaml:"tag"`
	CommitSha string     `yaml:"commitSha"`
	Number    string     `yaml:"number"`
}

// K8sRollingDeploy applies manifests and waits for steady state: a rolling rollback's settings
// and skipDryRun.
type K8sRollingDeploy struct {
	K8sRollingRollback `yaml:",inline"`
	SkipDryRun         string `yaml:"skipDryRun"`
}

// K8sRollingRollback restores the last successful release.
type K8sRollingRollback struct {
	K8sSimple      `yaml:",inline"`
	PruningEnabled string `yaml:"pruningEnabled"`
}

// InstanceSelection picks instances by count or percentage.
type InstanceSelection = pipeline.Typed[InstanceCount]

// InstanceCount is the count or percentage.
type InstanceCount struct {
	Node       *yaml.Node `yaml:"-"`
	Count      string     `yaml:"count"`
	Percentage string     `yaml:"percentage"`
}

// K8sCanaryDeploy deploys a canary copy.
type K8sCanaryDeploy struct {
	K8sSimple         `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
	SkipDryRun        string             `yaml:"skipDryRun"`
	TrafficRouting    *yaml.Node         `yaml:"trafficRouting"`
}

// K8sSimple is the spec of K8s steps with no settings of their own, and the settings the
// others share (all but K8sScale and K8sDelete).
type K8sSimple struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
	CommandFlags      *yaml.Node `yaml:"commandFlags"`
}

// K8sBlueGreenDeploy deploys to the stage colour: a rolling deploy's settings and its own.
type K8sBlueGreenDeploy struct {
	K8sRollingDeploy      `yaml:",inline"`
	SkipUnchangedManifest string     `yaml:"skipUnchangedManifest"`
	TrafficRouting        *yaml.Node `yaml:"trafficRouting"`
}

// K8sApply applies selected manifest files: of the service's manifests, or of the step's own
// manifestSource (then all of them when filePaths is absent).
type K8sApply struct {
	K8sSimple            `yaml:",inline"`
	FilePaths            *yaml.Node      `yaml:"filePaths"`
	SkipDryRun           string          `yaml:"skipDryRun"`
	SkipSteadyStateCheck string          `yaml:"skipSteadyStateCheck"`
	SkipRendering        string          `yaml:"skipRendering"`
	Overrides            *yaml.Node      `yaml:"overrides"`
	ManifestSource       *ManifestSource `yaml:"manifestSource"`
}

// ManifestSource is a K8sApply step's own manifest: a K8sManifest's store and values paths.
type ManifestSource = pipeline.Typed[pipeline.ManifestSpec]

// K8sScale scales a workload.
type K8sScale struct {
	Node                 *yaml.Node         `yaml:"-"`
	Workload             string             `yaml:"workload" gantry:"required"`
	InstanceSelection    *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
	SkipSteadyStateCheck string             `yaml:"skipSteadyStateCheck"`
	DelegateSelectors    *yaml.Node         `yaml:"delegateSelectors"`
}

// K8sDelete deletes resources.
type K8sDelete struct {
	Node              *yaml.Node       `yaml:"-"`
	DeleteResources   *DeleteResources `yaml:"deleteResources" gantry:"required"`
	DelegateSelectors *yaml.Node       `yaml:"delegateSelectors"`
}

// DeleteResources selects what K8sDelete removes.
type DeleteResources = pipeline.Typed[DeleteTarget]

// DeleteTarget lists names, manifest paths or the namespace.
type DeleteTarget struct {
	Node             *yaml.Node `yaml:"-"`
	ResourceNames    *yaml.Node `yaml:"resourceNames"`
	DeleteNamespace  string     `yaml:"deleteNamespace"`
	ManifestPaths    *yaml.Node `yaml:"manifestPaths"`
	AllManifestPaths string     `yaml:"allManifestPaths"`
}

// HelmSettings are what the NativeHelm steps share: where they run and the helm CLI's flags
// and environment (Gantry uses the Helm SDK: warned about, not applied).
type HelmSettings struct {
	Node                 *yaml.Node `yaml:"-"`
	DelegateSelectors    *yaml.Node `yaml:"delegateSelectors"`
	CommandFlags         *yaml.Node `yaml:"commandFlags"`
	EnvironmentVariables *yaml.Node `yaml:"environmentVariables"`
}

// HelmDeploy installs or upgrades the stage's Helm release.
type HelmDeploy struct {
	HelmSettings                `yaml:",inline"`
	SkipSteadyStateCheck        string `yaml:"skipSteadyStateCheck"`
	IgnoreReleaseHistFailStatus string `yaml:"ignoreReleaseHistFailStatus"`
	UseUpgradeInstall           string `yaml:"useUpgradeInstall"`
	RunChartTests               string `yaml:"runChartTests"`
	SkipCleanup                 string `yaml:"skipCleanup"`
}

// HelmRollback rolls the release back to the revision before this execution's.
type HelmRollback struct {
	HelmSettings         `yaml:",inline"`
	SkipSteadyStateCheck string `yaml:"skipSteadyStateCheck"`
	RunChartTests        string `yaml:"runChartTests"`
}

// HelmDelete uninstalls a release.
type HelmDelete struct {
	HelmSettings `yaml:",inline"`
	ReleaseName  string `yaml:"releaseName"`
	DryRun       string `yaml:"dryRun"`
}
