package stepspec

import "gopkg.in/yaml.v3"

// The Kubernetes and Helm step types, run by the Kubernetes family (one handler each) in
// Deployment stages of deploymentType Kubernetes and NativeHelm.
const (
	K8sRollingDeploy           = "K8sRollingDeploy"
	K8sRollingRollback         = "K8sRollingRollback"
	K8sCanaryDeploy            = "K8sCanaryDeploy"
	K8sCanaryDelete            = "K8sCanaryDelete"
	K8sBlueGreenDeploy         = "K8sBlueGreenDeploy"
	K8sBGSwapServices          = "K8sBGSwapServices"
	K8sApply                   = "K8sApply"
	K8sScale                   = "K8sScale"
	K8sDelete                  = "K8sDelete"
	K8sPatch                   = "K8sPatch"
	K8sRollout                 = "K8sRollout"
	K8sDiff                    = "K8sDiff"
	K8sBlueGreenStageScaleDown = "K8sBlueGreenStageScaleDown"
	K8sTrafficRouting          = "K8sTrafficRouting"
	K8sDryRun                  = "K8sDryRun"
	HelmDeploy                 = "HelmDeploy"
	HelmRollback               = "HelmRollback"
	HelmDelete                 = "HelmDelete"
	HelmBGDeploy               = "HelmBGDeploy"
	HelmBlueGreenSwapStep      = "HelmBlueGreenSwapStep"
	HelmCanaryDeploy           = "HelmCanaryDeploy"
	HelmCanaryDelete           = "HelmCanaryDelete"
)

// K8sSimpleSpec is the spec of the K8s steps with no settings of their own (K8sCanaryDelete,
// K8sBGSwapServices, K8sDryRun), and the settings most others share: where they run and
// kubectl's flags, neither read by the family (it applies through the Kubernetes API).
type K8sSimpleSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
	CommandFlags      *yaml.Node `yaml:"commandFlags" json:"-"`
}

// K8sRollingRollbackSpec restores the last successful release; with pruning, the resources the
// failed release pruned come back too.
type K8sRollingRollbackSpec struct {
	K8sSimpleSpec  `yaml:",inline"`
	PruningEnabled Text `yaml:"pruningEnabled" json:"pruningEnabled"`
}

// K8sRollingDeploySpec applies the manifests as a new release and waits for steady state: a
// rolling rollback's settings and skipDryRun.
type K8sRollingDeploySpec struct {
	K8sRollingRollbackSpec `yaml:",inline"`
	SkipDryRun             Text `yaml:"skipDryRun" json:"skipDryRun"`
}

// K8sCanaryDeploySpec deploys a canary copy of the Deployment with the selected pods.
type K8sCanaryDeploySpec struct {
	K8sSimpleSpec     `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
	SkipDryRun        Text               `yaml:"skipDryRun" json:"skipDryRun"`
	// TrafficRouting is warned about: the canary shares the Service's traffic by pod count.
	TrafficRouting *yaml.Node `yaml:"trafficRouting" json:"-"`
}

// K8sBlueGreenDeploySpec deploys to the stage colour: a rolling deploy's settings, whether an
// unchanged manifest skips the deployment, and a mesh's routing written after it.
type K8sBlueGreenDeploySpec struct {
	K8sRollingDeploySpec  `yaml:",inline"`
	SkipUnchangedManifest Text                  `yaml:"skipUnchangedManifest" json:"skipUnchangedManifest"`
	TrafficRouting        *TrafficRoutingConfig `yaml:"trafficRouting" json:"trafficRouting"`
}

// K8sTrafficRoutingSpec writes a service mesh's routing: a new config, or new weights for the
// release's existing one (inherit, whose trafficRouting holds only routes).
type K8sTrafficRoutingSpec struct {
	K8sSimpleSpec  `yaml:",inline"`
	Type           string                `yaml:"type" json:"type" gantry:"required"`
	TrafficRouting *TrafficRoutingConfig `yaml:"trafficRouting" json:"trafficRouting" gantry:"required"`
}

// TrafficRoutingConfig is a mesh's routing: its provider (istio or smi) and the routes of its
// spec, or, for type inherit, only routes.
type TrafficRoutingConfig struct {
	Node     *yaml.Node          `yaml:"-" json:"-"`
	Provider string              `yaml:"provider" json:"provider"`
	Spec     TrafficRoutingRules `yaml:"spec" json:"spec"`
	Routes   []TrafficRoute      `yaml:"routes" json:"routes"`
}

// TrafficRoutingRules names the routing resource and lists its routes; Istio's also name
// hosts and gateways, SMI's the root service.
type TrafficRoutingRules struct {
	Node        *yaml.Node     `yaml:"-" json:"-"`
	Name        string         `yaml:"name" json:"name"`
	RootService string         `yaml:"rootService" json:"rootService"`
	Hosts       []string       `yaml:"hosts" json:"hosts"`
	Gateways    []string       `yaml:"gateways" json:"gateways"`
	Routes      []TrafficRoute `yaml:"routes" json:"routes"`
}

// TrafficRoute is one entry of routes.
type TrafficRoute struct {
	Node  *yaml.Node       `yaml:"-" json:"-"`
	Route TrafficRouteSpec `yaml:"route" json:"route"`
}

// TrafficRouteSpec matches requests by its rules and sends them to weighted destinations.
type TrafficRouteSpec struct {
	Node         *yaml.Node           `yaml:"-" json:"-"`
	Type         string               `yaml:"type" json:"type"`
	Name         string               `yaml:"name" json:"name"`
	Rules        []TrafficRuleEntry   `yaml:"rules" json:"rules"`
	Destinations []TrafficDestination `yaml:"destinations" json:"destinations"`
}

// TrafficRuleEntry is one entry of a route's rules.
type TrafficRuleEntry struct {
	Node *yaml.Node  `yaml:"-" json:"-"`
	Rule TrafficRule `yaml:"rule" json:"rule"`
}

// TrafficRule matches on a request's uri, method, headers, port, scheme or authority.
type TrafficRule struct {
	Node *yaml.Node      `yaml:"-" json:"-"`
	Type string          `yaml:"type" json:"type"`
	Spec TrafficRuleSpec `yaml:"spec" json:"spec"`
}

// TrafficRuleSpec is a rule's value and how it matches; a headers rule has values instead.
type TrafficRuleSpec struct {
	Node      *yaml.Node           `yaml:"-" json:"-"`
	Name      string               `yaml:"name" json:"name"`
	MatchType string               `yaml:"matchType" json:"matchType"`
	Value     Text                 `yaml:"value" json:"value"`
	Values    []TrafficHeaderMatch `yaml:"values" json:"values"`
}

// TrafficHeaderMatch matches one header.
type TrafficHeaderMatch struct {
	Node      *yaml.Node `yaml:"-" json:"-"`
	Key       string     `yaml:"key" json:"key"`
	Value     string     `yaml:"value" json:"value"`
	MatchType string     `yaml:"matchType" json:"matchType"`
}

// TrafficDestination is one entry of a route's destinations.
type TrafficDestination struct {
	Node        *yaml.Node         `yaml:"-" json:"-"`
	Destination TrafficBackendSpec `yaml:"destination" json:"destination"`
}

// TrafficBackendSpec is a backend: a host (a Service, or stable/stage/canary for the release's
// own), its share of the traffic and its port.
type TrafficBackendSpec struct {
	Node   *yaml.Node `yaml:"-" json:"-"`
	Host   string     `yaml:"host" json:"host"`
	Weight Text       `yaml:"weight" json:"weight"`
	Port   Text       `yaml:"port" json:"port"`
}

// K8sApplySpec applies selected manifest files: of the service's manifests, or of the step's
// own manifestSource (then all of them when filePaths is absent; the source reaches the
// family as the step's manifests).
type K8sApplySpec struct {
	K8sSimpleSpec        `yaml:",inline"`
	FilePaths            List            `yaml:"filePaths" json:"filePaths"`
	SkipDryRun           Text            `yaml:"skipDryRun" json:"skipDryRun"`
	SkipSteadyStateCheck Text            `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
	SkipRendering        Text            `yaml:"skipRendering" json:"skipRendering"`
	Overrides            *yaml.Node      `yaml:"overrides" json:"-"`
	ManifestSource       *ManifestSource `yaml:"manifestSource" json:"-"`
}

// ManifestSource is a K8sApply step's own manifest: a K8sManifest's store and values paths.
type ManifestSource = Typed[ManifestSpec]

// K8sScaleSpec scales a workload (Kind/name; a bare name is a Deployment).
type K8sScaleSpec struct {
	Node                 *yaml.Node         `yaml:"-" json:"-"`
	Workload             string             `yaml:"workload" json:"workload" gantry:"required"`
	InstanceSelection    *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
	SkipSteadyStateCheck Text               `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
	DelegateSelectors    *yaml.Node         `yaml:"delegateSelectors" json:"-"`
}

// K8sPatchSpec patches a live workload with the step's own patch.
type K8sPatchSpec struct {
	Node                 *yaml.Node   `yaml:"-" json:"-"`
	Workload             string       `yaml:"workload" json:"workload" gantry:"required"`
	Source               *PatchSource `yaml:"source" json:"source" gantry:"required"`
	MergeStrategyType    string       `yaml:"mergeStrategyType" json:"mergeStrategyType" gantry:"required"`
	RecordChangeCause    Text         `yaml:"recordChangeCause" json:"recordChangeCause"`
	SkipSteadyStateCheck Text         `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
	CommandFlags         *yaml.Node   `yaml:"commandFlags" json:"-"`
	DelegateSelectors    *yaml.Node   `yaml:"delegateSelectors" json:"-"`
}

// PatchSource is where a K8sPatch step's patch comes from: a store, of which Gantry reads the
// Inline one's content.
type PatchSource = Typed[PatchSourceSpec]

// PatchSourceSpec is an Inline store's content, or another store's location (not read yet).
type PatchSourceSpec struct {
	ManifestStoreSpec `yaml:",inline"`
	Content           string `yaml:"content" json:"content"`
}

// K8sRolloutSpec runs a `kubectl rollout` command on workloads.
type K8sRolloutSpec struct {
	Node              *yaml.Node        `yaml:"-" json:"-"`
	Command           string            `yaml:"command" json:"command" gantry:"required"`
	Resources         *RolloutResources `yaml:"resources" json:"resources" gantry:"required"`
	CommandFlags      *yaml.Node        `yaml:"commandFlags" json:"-"`
	DelegateSelectors *yaml.Node        `yaml:"delegateSelectors" json:"-"`
}

// RolloutResources selects K8sRollout's workloads, as K8sDelete's resources are selected.
type RolloutResources = Typed[RolloutTarget]

// RolloutTarget lists names (ResourceName) or manifest paths (ManifestPath); ReleaseName needs
// neither.
type RolloutTarget struct {
	Node             *yaml.Node `yaml:"-" json:"-"`
	ResourceNames    List       `yaml:"resourceNames" json:"resourceNames"`
	ManifestPaths    List       `yaml:"manifestPaths" json:"manifestPaths"`
	AllManifestPaths Text       `yaml:"allManifestPaths" json:"allManifestPaths"`
}

// K8sDiffSpec shows what deploying the stage's manifests would change.
type K8sDiffSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}

// K8sBlueGreenStageScaleDownSpec scales the stage colour of a blue-green deployment to zero.
type K8sBlueGreenStageScaleDownSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}

// K8sDeleteSpec deletes resources.
type K8sDeleteSpec struct {
	Node              *yaml.Node       `yaml:"-" json:"-"`
	DeleteResources   *DeleteResources `yaml:"deleteResources" json:"deleteResources" gantry:"required"`
	DelegateSelectors *yaml.Node       `yaml:"delegateSelectors" json:"-"`
}

// DeleteResources selects what K8sDelete removes.
type DeleteResources = Typed[DeleteTarget]

// DeleteTarget lists names (ResourceName) or manifest paths (ManifestPath); ReleaseName deletes
// the release's resources, and the namespace with deleteNamespace.
type DeleteTarget struct {
	Node             *yaml.Node `yaml:"-" json:"-"`
	ResourceNames    List       `yaml:"resourceNames" json:"resourceNames"`
	DeleteNamespace  Text       `yaml:"deleteNamespace" json:"deleteNamespace"`
	ManifestPaths    List       `yaml:"manifestPaths" json:"manifestPaths"`
	AllManifestPaths Text       `yaml:"allManifestPaths" json:"allManifestPaths"`
}

// HelmSettings are what the NativeHelm steps share: where they run and the helm CLI's flags
// and environment (Gantry uses the Helm SDK: warned about, not applied). Alone, the spec of
// HelmBlueGreenSwapStep and HelmCanaryDelete.
type HelmSettings struct {
	Node                 *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors    *yaml.Node `yaml:"delegateSelectors" json:"-"`
	CommandFlags         *yaml.Node `yaml:"commandFlags" json:"-"`
	EnvironmentVariables *yaml.Node `yaml:"environmentVariables" json:"-"`
}

// HelmBGDeploySpec deploys the chart as the stage colour of a blue-green release; its
// settings are those of every Helm install or upgrade.
type HelmBGDeploySpec struct {
	HelmSettings                `yaml:",inline"`
	SkipSteadyStateCheck        Text `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
	IgnoreReleaseHistFailStatus Text `yaml:"ignoreReleaseHistFailStatus" json:"ignoreReleaseHistFailStatus"`
	UseUpgradeInstall           Text `yaml:"useUpgradeInstall" json:"useUpgradeInstall"`
	RunChartTests               Text `yaml:"runChartTests" json:"runChartTests"`
}

// HelmDeploySpec installs or upgrades the stage's Helm release; skipCleanup keeps a failed
// first install.
type HelmDeploySpec struct {
	HelmBGDeploySpec `yaml:",inline"`
	SkipCleanup      Text `yaml:"skipCleanup" json:"skipCleanup"`
}

// HelmCanaryDeploySpec deploys some of the chart's pods as a canary release.
type HelmCanaryDeploySpec struct {
	HelmBGDeploySpec  `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
}

// HelmRollbackSpec rolls the releases back to the revisions before this execution's.
type HelmRollbackSpec struct {
	HelmSettings         `yaml:",inline"`
	SkipSteadyStateCheck Text `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
	RunChartTests        Text `yaml:"runChartTests" json:"runChartTests"`
}

// HelmDeleteSpec uninstalls a release (the stage's when releaseName is empty).
type HelmDeleteSpec struct {
	HelmSettings `yaml:",inline"`
	ReleaseName  string `yaml:"releaseName" json:"releaseName"`
	DryRun       Text   `yaml:"dryRun" json:"dryRun"`
}
