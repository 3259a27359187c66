package steps

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// The ASG steps' specs, shared with the ASG family (stepspec).
type (
	AsgInstances            = stepspec.AsgInstances
	AsgFixedInstances       = stepspec.AsgFixedInstances
	AsgLoadBalancer         = stepspec.AsgLoadBalancer
	AsgFollower             = stepspec.AsgFollowerSpec
	AsgRollingDeploy        = stepspec.AsgRollingDeploySpec
	AsgCanaryDeploy         = stepspec.AsgCanaryDeploySpec
	AsgBlueGreenDeploy      = stepspec.AsgBlueGreenDeploySpec
	AsgBlueGreenSwapService = stepspec.AsgBlueGreenSwapServiceSpec
	AsgShiftTraffic         = stepspec.AsgShiftTrafficSpec
	AsgSetup                = stepspec.AsgSetupSpec
	AsgPhasedDeploy         = stepspec.AsgPhasedDeploySpec
	AsgScale                = stepspec.AsgScaleSpec
	AsgSteadyState          = stepspec.AsgSteadyStateSpec
)

func checkAsgInstances(c Checker, in *AsgInstances) {
	if in == nil {
		return
	}
	c.Enum(in.Node, "type", in.Type, []string{"Fixed", "CurrentRunning"}, "instances.type")
	if in.Type != "Fixed" {
		return
	}
	s := in.Spec
	if s == nil {
		c.Error(in.Node, "missing-field", "Fixed instances need `spec` with min, max and desired")
		return
	}
	for key, v := range map[string]stepspec.Text{"min": s.Min, "max": s.Max, "desired": s.Desired} {
		c.Integer(s.Node, key, string(v), 0, false, "instances "+key)
	}
	mn, e1 := strconv.Atoi(string(s.Min))
	mx, e2 := strconv.Atoi(string(s.Max))
	d, e3 := strconv.Atoi(string(s.Desired))
	if e1 == nil && e2 == nil && e3 == nil && (mn > d || d > mx) {
		c.Error(pipeline.ValueAt(s.Node, "desired"), "enum", "desired %d must be between min %d and max %d", d, mn, mx)
	}
}

// checkPercent checks a whole-number percentage from lo to hi.
func checkPercent(c Checker, obj *yaml.Node, key string, text stepspec.Text, lo, hi int) {
	v := string(text)
	if v == "" || strings.Contains(v, "<+") {
		return
	}
	if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
		c.Error(pipeline.ValueAt(obj, key), "enum", "%s %s is not a whole number from %d to %d", key, v, lo, hi)
	}
}

// Check checks the capacity, the refresh's percentages and the flags.
func checkAsgRollingDeploy(sp *AsgRollingDeploy, c Checker) {
	checkAsgInstances(c, sp.Instances)
	checkPercent(c, sp.Node, "minimumHealthyPercentage", sp.MinimumHealthyPercentage, 0, 100)
	checkPercent(c, sp.Node, "maximumHealthyPercentage", sp.MaximumHealthyPercentage, 100, 200)
	if sp.InstanceWarmup != "" {
		c.Integer(sp.Node, "instanceWarmup", string(sp.InstanceWarmup), 0, false, "instanceWarmup")
	}
	for key, v := range map[string]stepspec.Text{"skipMatching": sp.SkipMatching, "useAlreadyRunningInstances": sp.UseAlreadyRunningInstances, "skipInstanceTermination": sp.SkipInstanceTermination} {
		c.Boolean(sp.Node, key, string(v))
	}
	ignoredTrue(c, sp.Node, "skipInstanceTermination", string(sp.SkipInstanceTermination), "the instance refresh replaces instances as AWS does")
	c.Ignored(sp.HandleInProgressInstanceRefresh, "handleInProgressInstanceRefresh", "Gantry waits for a refresh already in progress to end, then starts its own")
}

// Check checks the instances.
func checkAsgCanaryDeploy(sp *AsgCanaryDeploy, c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
}

// Check checks that the prod listener is named, here or in loadBalancers, and the capacity.
func checkAsgBlueGreenDeploy(sp *AsgBlueGreenDeploy, c Checker) {
	checkAsgInstances(c, sp.Instances)
	c.Boolean(sp.Node, "useAlreadyRunningInstances", string(sp.UseAlreadyRunningInstances))
	if len(sp.LoadBalancers) == 0 && (sp.ProdListener == "" || sp.ProdListenerRuleArn == "") {
		c.Error(sp.Node, "missing-field", "AsgBlueGreenDeploy needs the prod listener: prodListener and prodListenerRuleArn (with stageListener and stageListenerRuleArn to swap, without them to shift traffic by weight), or loadBalancers").
			SetHint("loadBalancers: [{loadBalancer: web, prodListener: <arn>, prodListenerRuleArn: <arn>, stageListener: <arn>, stageListenerRuleArn: <arn>}]")
	}
}

// Check checks the flag.
func checkAsgBlueGreenSwapService(sp *AsgBlueGreenSwapService, c Checker) {
	c.Boolean(sp.Node, "downsizeOldAsg", string(sp.DownsizeOldAsg))
}

// Check checks the weight and the flag.
func checkAsgShiftTraffic(sp *AsgShiftTraffic, c Checker) {
	checkPercent(c, sp.Node, "weight", sp.Weight, 0, 100)
	c.Boolean(sp.Node, "downsizeOldAsg", string(sp.DownsizeOldAsg))
}

// Check checks the resize order and the capacity.
func checkAsgSetup(sp *AsgSetup, c Checker) {
	c.Enum(sp.Node, "resizeStrategy", sp.ResizeStrategy, []string{"resize_new_first", "downsize_old_first"}, "resizeStrategy")
	checkAsgInstances(c, sp.Instances)
}

// Check checks the instances.
func checkAsgPhasedDeploy(sp *AsgPhasedDeploy, c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
}

// Check checks the instances; another connector or region than the stage's is not used.
func checkAsgScale(sp *AsgScale, c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	c.Boolean(sp.Node, "skipSteadyStateCheck", string(sp.SkipSteadyStateCheck))
	c.Ignored(sp.ConnectorRef, "connectorRef", "the step uses the stage infrastructure's Aws connector")
	c.Ignored(sp.Region, "region", "the step uses the stage infrastructure's region")
}

// Check checks the polling interval.
func checkAsgSteadyState(sp *AsgSteadyState, c Checker) {
	if sp.PollingInterval != "" {
		c.Duration(sp.Node, "pollingInterval", sp.PollingInterval, "pollingInterval")
	}
}
