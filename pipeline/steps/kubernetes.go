package steps

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The Kubernetes and Helm steps' specs, shared with the Kubernetes family (stepspec).
type (
	InstanceSelection          = stepspec.InstanceSelection
	InstanceCount              = stepspec.InstanceCount
	K8sSimple                  = stepspec.K8sSimpleSpec
	K8sRollingDeploy           = stepspec.K8sRollingDeploySpec
	K8sRollingRollback         = stepspec.K8sRollingRollbackSpec
	K8sCanaryDeploy            = stepspec.K8sCanaryDeploySpec
	K8sBlueGreenDeploy         = stepspec.K8sBlueGreenDeploySpec
	K8sTrafficRouting          = stepspec.K8sTrafficRoutingSpec
	K8sApply                   = stepspec.K8sApplySpec
	ManifestSource             = stepspec.ManifestSource
	K8sScale                   = stepspec.K8sScaleSpec
	K8sPatch                   = stepspec.K8sPatchSpec
	PatchSource                = stepspec.PatchSource
	K8sRollout                 = stepspec.K8sRolloutSpec
	RolloutResources           = stepspec.RolloutResources
	K8sDiff                    = stepspec.K8sDiffSpec
	K8sBlueGreenStageScaleDown = stepspec.K8sBlueGreenStageScaleDownSpec
	K8sDelete                  = stepspec.K8sDeleteSpec
	DeleteResources            = stepspec.DeleteResources
	HelmSettings               = stepspec.HelmSettings
	HelmDeploy                 = stepspec.HelmDeploySpec
	HelmRollback               = stepspec.HelmRollbackSpec
	HelmBGDeploy               = stepspec.HelmBGDeploySpec
	HelmCanaryDeploy           = stepspec.HelmCanaryDeploySpec
	HelmDelete                 = stepspec.HelmDeleteSpec
)

// checkK8sTrafficRouting checks the config type and, for a new config, its provider, name and
// routes.
func checkK8sTrafficRouting(sp *K8sTrafficRouting, c Checker) {
	c.Enum(sp.Node, "type", sp.Type, []string{"config", "inherit"}, "traffic routing type")
	if sp.TrafficRouting == nil {
		return
	}
	tr := sp.TrafficRouting.Node
	if sp.Type == "inherit" {
		if pipeline.Field(tr, "routes") == nil {
			c.Error(tr, "missing-field", "trafficRouting of type inherit needs `routes`, the destinations and weights to set").
				SetHint("routes: [{route: {name: main, destinations: [{destination: {host: stable, weight: 50}}]}}]")
		}
		return
	}
	checkTrafficRouting(c, sp.TrafficRouting)
}

// checkTrafficRouting checks a new traffic routing config: its provider, name and routes.
func checkTrafficRouting(c Checker, cfg *stepspec.TrafficRoutingConfig) {
	if cfg == nil || cfg.Node == nil || cfg.Node.Kind != yaml.MappingNode {
		return
	}
	tr := cfg.Node
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

// kubectlFlags is why the K8s steps' kubectl flags are ignored.
const kubectlFlags = "Gantry applies through the Kubernetes API, not kubectl"

// checkK8sCanaryDeploy checks the instance selection and warns of the settings Gantry does not
// act on.
func checkK8sCanaryDeploy(sp *K8sCanaryDeploy, c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	c.Ignored(sp.TrafficRouting, "trafficRouting", "the step does not write mesh routing; the canary shares the Service's traffic by pod count (a K8sTrafficRouting step after it does)")
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// checkKubectlFlags warns of kubectl's flags, which Gantry does not act on.
func checkKubectlFlags(sp *K8sSimple, c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// checkK8sRollingDeploy warns of the settings Gantry does not act on.
func checkK8sRollingDeploy(sp *K8sRollingDeploy, c Checker) { checkKubectlFlags(&sp.K8sSimpleSpec, c) }

// checkK8sRollingRollback warns of the settings Gantry does not act on.
func checkK8sRollingRollback(sp *K8sRollingRollback, c Checker) {
	checkKubectlFlags(&sp.K8sSimpleSpec, c)
}

// checkK8sBlueGreenDeploy checks the traffic routing and warns of kubectl's flags.
func checkK8sBlueGreenDeploy(sp *K8sBlueGreenDeploy, c Checker) {
	checkTrafficRouting(c, sp.TrafficRouting)
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
}

// checkK8sApply checks that the step names its files, and its own manifest's store.
func checkK8sApply(sp *K8sApply, c Checker) {
	c.Ignored(sp.CommandFlags, "commandFlags", kubectlFlags)
	c.Ignored(sp.Overrides, "overrides", "put overriding values in the service's values files")
	if pipeline.Field(sp.Node, "filePaths") == nil && sp.ManifestSource == nil {
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

// helmSDK says why the helm CLI's settings are ignored, for a verb ("deploys").
func helmSDK(verb string) string { return "Gantry " + verb + " with the Helm SDK, not the helm CLI" }

// checkHelmCLI warns of the helm CLI's flags and environment.
func checkHelmCLI(sp *HelmSettings, c Checker, verb string) {
	c.Ignored(sp.CommandFlags, "commandFlags", helmSDK(verb))
	c.Ignored(sp.EnvironmentVariables, "environmentVariables", helmSDK(verb))
}

// checkHelmBGDeploy warns of the helm CLI settings and of chart tests.
func checkHelmBGDeploy(sp *HelmBGDeploy, c Checker) {
	checkHelmCLI(&sp.HelmSettings, c, "deploys")
	ignoredTrue(c, sp.Node, "runChartTests", string(sp.RunChartTests), "Gantry does not run chart tests yet")
}

// checkHelmDeploy warns of the helm CLI settings and of chart tests.
func checkHelmDeploy(sp *HelmDeploy, c Checker) { checkHelmBGDeploy(&sp.HelmBGDeploySpec, c) }

// checkHelmRollback warns of the helm CLI settings and of chart tests.
func checkHelmRollback(sp *HelmRollback, c Checker) {
	checkHelmCLI(&sp.HelmSettings, c, "rolls back")
	ignoredTrue(c, sp.Node, "runChartTests", string(sp.RunChartTests), "Gantry does not run chart tests yet")
}

// checkHelmCanaryDeploy checks the instance selection and warns of the helm CLI settings.
func checkHelmCanaryDeploy(sp *HelmCanaryDeploy, c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	checkHelmBGDeploy(&sp.HelmBGDeploySpec, c)
}

// checkHelmSimple warns of the helm CLI settings.
func checkHelmSimple(sp *HelmSettings, c Checker) {
	checkHelmCLI(sp, c, "acts on Helm releases")
}

// checkHelmDelete warns of the helm CLI settings.
func checkHelmDelete(sp *HelmDelete, c Checker) { checkHelmCLI(&sp.HelmSettings, c, "uninstalls") }

// checkK8sScale checks the instance selection.
func checkK8sScale(sp *K8sScale, c Checker) { checkInstanceSelection(c, sp.InstanceSelection) }

// checkK8sPatch checks the patch: its merge strategy, and an Inline source with content.
func checkK8sPatch(sp *K8sPatch, c Checker) {
	c.Enum(sp.Node, "mergeStrategyType", sp.MergeStrategyType, []string{"Strategic", "Merge", "Json"}, "mergeStrategyType")
	c.Boolean(sp.Node, "recordChangeCause", string(sp.RecordChangeCause))
	c.Boolean(sp.Node, "skipSteadyStateCheck", string(sp.SkipSteadyStateCheck))
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
	if src.Spec != nil && src.Spec.Node != nil && src.Spec.Node.Kind == yaml.MappingNode && pipeline.Field(src.Spec.Node, "content") == nil {
		c.Error(src.Spec.Node, "missing-field", "K8sPatch source: an Inline source needs `content`, the patch").
			SetHint("spec: {content: '{spec: {replicas: 3}}'}")
	}
}

// checkK8sRollout checks the command and the resources' selection.
func checkK8sRollout(sp *K8sRollout, c Checker) {
	c.Enum(sp.Node, "command", sp.Command, []string{"restart", "resume", "status", "undo", "pause", "history"}, "command")
	c.Ignored(sp.CommandFlags, "commandFlags", "Gantry rolls out through the Kubernetes API, not kubectl")
	r := sp.Resources
	if r == nil {
		return
	}
	c.Enum(r.Node, "type", r.Type, []string{"ResourceName", "ReleaseName", "ManifestPath"}, "resources.type")
	if r.Type == "ResourceName" && r.Spec != nil && pipeline.Field(r.Spec.Node, "resourceNames") == nil {
		c.Error(r.Spec.Node, "missing-field", "resources of type ResourceName need `resourceNames`").
			SetHint("spec: {resourceNames: [Deployment/web]}")
	}
}

// checkK8sDelete checks what is deleted.
func checkK8sDelete(sp *K8sDelete, c Checker) {
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
