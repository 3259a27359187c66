package steps

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

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

// InstanceSelection picks instances by count or percentage; InstanceCount is the count or
// percentage (stepspec's, shared with the families).
type (
	InstanceSelection = stepspec.InstanceSelection
	InstanceCount     = stepspec.InstanceCount
)

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

// K8sTrafficRouting writes a service mesh's routing: a new config, or new weights for the
// release's existing one (inherit).
type K8sTrafficRouting struct {
	K8sSimple      `yaml:",inline"`
	Type           string     `yaml:"type" gantry:"required"`
	TrafficRouting *yaml.Node `yaml:"trafficRouting" gantry:"required"`
}

// Check checks the config type and, for a new config, its provider, name and routes.
func (sp *K8sTrafficRouting) Check(c Checker) {
	c.Enum(sp.Node, "type", sp.Type, []string{"config", "inherit"}, "traffic routing type")
	tr := sp.TrafficRouting
	if tr == nil || tr.Kind != yaml.MappingNode {
		return
	}
	if sp.Type == "inherit" {
		if pipeline.Field(tr, "routes") == nil {
			c.Error(tr, "missing-field", "trafficRouting of type inherit needs `routes`, the destinations and weights to set").
				SetHint("routes: [{route: {name: main, destinations: [{destination: {host: stable, weight: 50}}]}}]")
		}
		return
	}
	checkTrafficRouting(c, tr)
}

// checkTrafficRouting checks a new traffic routing config: its provider, name and routes.
func checkTrafficRouting(c Checker, tr *yaml.Node) {
	if tr == nil || tr.Kind != yaml.MappingNode {
		return
	}
	provider := pipeline.Field(tr, "provider")
	if provider == nil {
		c.Error(tr, "missing-field", "trafficRouting needs `provider`: istio or smi")
		return
	}
	c.Enum(tr, "provider", provider.Value, []string{"istio", "smi"}, "traffic routing provider")
	spec := pipeline.Field(tr, "spec")
	for _, key := range []string{"name", "routes"} {
		if spec == nil || pipeline.Field(spec, key) == nil {
			at := tr
			if spec != nil {
				at = spec
			}
			c.Error(at, "missing-field", "trafficRouting.spec needs `%s`", key)
		}
	}
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

// K8sPatch patches a live workload with the step's own patch.
type K8sPatch struct {
	Node                 *yaml.Node   `yaml:"-"`
	Workload             string       `yaml:"workload" gantry:"required"`
	Source               *PatchSource `yaml:"source" gantry:"required"`
	MergeStrategyType    string       `yaml:"mergeStrategyType" gantry:"required"`
	RecordChangeCause    string       `yaml:"recordChangeCause"`
	SkipSteadyStateCheck string       `yaml:"skipSteadyStateCheck"`
	CommandFlags         *yaml.Node   `yaml:"commandFlags"`
	DelegateSelectors    *yaml.Node   `yaml:"delegateSelectors"`
}

// PatchSource is where a K8sPatch step's patch comes from: a store, of which Gantry reads the
// Inline one (its spec is read by the step's check).
type PatchSource struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"`
	Spec *yaml.Node `yaml:"spec" gantry:"required"`
}

// K8sRollout runs a `kubectl rollout` command on workloads.
type K8sRollout struct {
	Node              *yaml.Node        `yaml:"-"`
	Command           string            `yaml:"command" gantry:"required"`
	Resources         *RolloutResources `yaml:"resources" gantry:"required"`
	CommandFlags      *yaml.Node        `yaml:"commandFlags"`
	DelegateSelectors *yaml.Node        `yaml:"delegateSelectors"`
}

// RolloutResources selects K8sRollout's workloads, as K8sDelete's resources are selected.
type RolloutResources = pipeline.Typed[RolloutTarget]

// RolloutTarget lists names or manifest paths (a release needs neither).
type RolloutTarget struct {
	Node             *yaml.Node `yaml:"-"`
	ResourceNames    *yaml.Node `yaml:"resourceNames"`
	ManifestPaths    *yaml.Node `yaml:"manifestPaths"`
	AllManifestPaths string     `yaml:"allManifestPaths"`
}

// K8sDiff shows what deploying the stage's manifests would change.
type K8sDiff struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}

// K8sBlueGreenStageScaleDown scales the stage colour of a blue-green deployment to zero.
type K8sBlueGreenStageScaleDown struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
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

// HelmBGDeploy deploys the chart as the stage colour of a blue-green release.
type HelmBGDeploy struct {
	HelmSettings                `yaml:",inline"`
	SkipSteadyStateCheck        string `yaml:"skipSteadyStateCheck"`
	IgnoreReleaseHistFailStatus string `yaml:"ignoreReleaseHistFailStatus"`
	UseUpgradeInstall           string `yaml:"useUpgradeInstall"`
	RunChartTests               string `yaml:"runChartTests"`
}

// HelmCanaryDeploy deploys some of the chart's pods as a canary release.
type HelmCanaryDeploy struct {
	HelmBGDeploy      `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
}

// HelmSimple is the spec of the Helm steps with no settings of their own
// (HelmBlueGreenSwapStep, HelmCanaryDelete).
type HelmSimple struct {
	HelmSettings `yaml:",inline"`
}

// HelmDelete uninstalls a release.
type HelmDelete struct {
	HelmSettings `yaml:",inline"`
	ReleaseName  string `yaml:"releaseName"`
	DryRun       string `yaml:"dryRun"`
}

// kubectlFlags is why the K8s steps' kubectl flags are ignored.
const kubectlFlags = "Gantry applies through the Kubernetes API, not kubectl"

// Check warns of the settings Gantry does not act on.
func (sp *K8sCanaryDeploy) Check(c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	c.Ignored(sp.TrafficRouting, "trafficRouting", "the step does not write mesh routing; the canary shares the Service's traffic by pod count (a K8sTrafficRouting step after it does)")
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// Check warns of the settings Gantry does not act on.
func (sp *K8sRollingDeploy) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// Check warns of the settings Gantry does not act on.
func (sp *K8sRollingRollback) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// Check warns of the settings Gantry does not act on.
func (sp *K8sBlueGreenDeploy) Check(c Checker) {
	checkTrafficRouting(c, sp.TrafficRouting)
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// Check checks that the step names its files, and its own manifest's store.
func (sp *K8sApply) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
	c.Ignored(sp.Overrides, "overrides", "put overriding values in the service's values files")
	if sp.FilePaths == nil && sp.ManifestSource == nil {
		c.Error(sp.Node, "missing-field", "K8sApply needs `filePaths` (files of the service's manifests) or `manifestSource`").
			SetHint("filePaths: [jobs/migrate.yaml]")
	}
	if ms := sp.ManifestSource; ms != nil {
		c.Enum(ms.Node, "type", ms.Type, []string{"K8sManifest"}, "manifestSource type")
		if ms.Spec != nil && ms.Spec.Store != nil {
			c.Store(ms.Spec.Store)
		}
	}
}

// Check warns of the helm CLI settings the Helm SDK has no use for.
func (sp *HelmDeploy) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry deploys with the Helm SDK, not the helm CLI")
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", "Gantry deploys with the Helm SDK, not the helm CLI")
	ignoredTrue(c, sp.Node, "runChartTests", sp.RunChartTests, "Gantry does not run chart tests yet")
}

// Check warns of the helm CLI settings the Helm SDK has no use for.
func (sp *HelmRollback) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry rolls back with the Helm SDK, not the helm CLI")
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", "Gantry rolls back with the Helm SDK, not the helm CLI")
	ignoredTrue(c, sp.Node, "runChartTests", sp.RunChartTests, "Gantry does not run chart tests yet")
}

// Check warns of the helm CLI settings the Helm SDK has no use for.
func (sp *HelmBGDeploy) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry deploys with the Helm SDK, not the helm CLI")
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", "Gantry deploys with the Helm SDK, not the helm CLI")
	ignoredTrue(c, sp.Node, "runChartTests", sp.RunChartTests, "Gantry does not run chart tests yet")
}

// Check checks the instance selection and warns of the helm CLI settings.
func (sp *HelmCanaryDeploy) Check(c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	sp.HelmBGDeploy.Check(c)
}

// Check warns of the helm CLI settings the Helm SDK has no use for.
func (sp *HelmSimple) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry acts on Helm releases with the Helm SDK, not the helm CLI")
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", "Gantry acts on Helm releases with the Helm SDK, not the helm CLI")
}

// Check warns of the helm CLI settings the Helm SDK has no use for.
func (sp *HelmDelete) Check(c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry uninstalls with the Helm SDK, not the helm CLI")
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", "Gantry uninstalls with the Helm SDK, not the helm CLI")
}

// Check checks the instance selection.
func (sp *K8sScale) Check(c Checker) { checkInstanceSelection(c, sp.InstanceSelection) }

// Check checks the patch: its merge strategy, and an Inline source with content.
func (sp *K8sPatch) Check(c Checker) {
	c.Enum(sp.Node, "mergeStrategyType", sp.MergeStrategyType, []string{"Strategic", "Merge", "Json"}, "mergeStrategyType")
	c.Boolean(sp.Node, "recordChangeCause", sp.RecordChangeCause)
	c.Boolean(sp.Node, "skipSteadyStateCheck", sp.SkipSteadyStateCheck)
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry patches through the Kubernetes API, not kubectl")
	src := sp.Source
	if src == nil {
		return
	}
	if src.Type != "Inline" {
		c.Unsupported(pipeline.ValueAt(src.Node, "type"), "unsupported-manifest-store",
			"K8sPatch source: a %s store is not read yet; Gantry patches with the step's Inline content", src.Type).
			SetHint("source: {type: Inline, spec: {content: '{spec: {replicas: 3}}'}}")
		return
	}
	if src.Spec != nil && src.Spec.Kind == yaml.MappingNode && pipeline.Field(src.Spec, "content") == nil {
		c.Error(src.Spec, "missing-field", "K8sPatch source: an Inline source needs `content`, the patch").
			SetHint("spec: {content: '{spec: {replicas: 3}}'}")
	}
}

// Check checks the command and the resources' selection.
func (sp *K8sRollout) Check(c Checker) {
	c.Enum(sp.Node, "command", sp.Command, []string{"restart", "resume", "status", "undo", "pause", "history"}, "command")
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry rolls out through the Kubernetes API, not kubectl")
	r := sp.Resources
	if r == nil {
		return
	}
	c.Enum(r.Node, "type", r.Type, []string{"ResourceName", "ReleaseName", "ManifestPath"}, "resources.type")
	if r.Type == "ResourceName" && r.Spec != nil && r.Spec.ResourceNames == nil {
		c.Error(r.Spec.Node, "missing-field", "resources of type ResourceName need `resourceNames`").
			SetHint("spec: {resourceNames: [Deployment/web]}")
	}
}

// Check checks what is deleted.
func (sp *K8sDelete) Check(c Checker) {
	if d := sp.DeleteResources; d != nil {
		c.Enum(d.Node, "type", d.Type, []string{"ResourceName", "ReleaseName", "ManifestPath"}, "deleteResources.type")
	}
}

func checkInstanceSelection(c Checker, is *InstanceSelection) {
	if is == nil {
		return
	}
	c.Enum(is.Node, "type", is.Type, []string{"Count", "Percentage"}, "instanceSelection.type")
	if is.Spec == nil {
		return
	}
	switch is.Type {
	case "Count":
		c.Integer(is.Spec.Node, "count", string(is.Spec.Count), 1, false, "instance count")
	case "Percentage":
		c.Integer(is.Spec.Node, "percentage", string(is.Spec.Percentage), 1, false, "instance percentage")
	}
}
