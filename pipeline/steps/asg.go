package steps

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// AsgInstances is an ASG deploy's capacity: Fixed (min, max, desired) or CurrentRunning (the
// live group's).
type AsgInstances struct {
	Node *yaml.Node         `yaml:"-"`
	Type string             `yaml:"type" gantry:"required"`
	Spec *AsgFixedInstances `yaml:"spec"`
}

// AsgFixedInstances is a Fixed capacity.
type AsgFixedInstances struct {
	Node    *yaml.Node `yaml:"-"`
	Desired string     `yaml:"desired" gantry:"required"`
	Max     string     `yaml:"max" gantry:"required"`
	Min     string     `yaml:"min" gantry:"required"`
}

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
	for key, v := range map[string]string{"min": s.Min, "max": s.Max, "desired": s.Desired} {
		c.Integer(s.Node, key, v, 0, false, "instances "+key)
	}
	mn, e1 := strconv.Atoi(s.Min)
	mx, e2 := strconv.Atoi(s.Max)
	d, e3 := strconv.Atoi(s.Desired)
	if e1 == nil && e2 == nil && e3 == nil && (mn > d || d > mx) {
		c.Error(pipeline.ValueAt(s.Node, "desired"), "enum", "desired %d must be between min %d and max %d", d, mn, mx)
	}
}

// checkPercent checks a whole-number percentage from lo to hi.
func checkPercent(c Checker, obj *yaml.Node, key, v string, lo, hi int) {
	if v == "" || strings.Contains(v, "<+") {
		return
	}
	if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
		c.Error(pipeline.ValueAt(obj, key), "enum", "%s %s is not a whole number from %d to %d", key, v, lo, hi)
	}
}

// AsgRollingDeploy updates (or creates) the stage's group with a new launch template version
// and refreshes its instances.
type AsgRollingDeploy struct {
	SelectorsOnly                   `yaml:",inline"`
	AsgName                         string        `yaml:"asgName"`
	Instances                       *AsgInstances `yaml:"instances"`
	MinimumHealthyPercentage        string        `yaml:"minimumHealthyPercentage"`
	MaximumHealthyPercentage        string        `yaml:"maximumHealthyPercentage"`
	InstanceWarmup                  string        `yaml:"instanceWarmup"`
	SkipMatching                    string        `yaml:"skipMatching"`
	UseAlreadyRunningInstances      string        `yaml:"useAlreadyRunningInstances"`
	SkipInstanceTermination         string        `yaml:"skipInstanceTermination"`
	HandleInProgressInstanceRefresh *yaml.Node    `yaml:"handleInProgressInstanceRefresh"`
}

// Check checks the capacity, the refresh's percentages and the flags.
func (sp *AsgRollingDeploy) Check(c Checker) {
	checkAsgInstances(c, sp.Instances)
	checkPercent(c, sp.Node, "minimumHealthyPercentage", sp.MinimumHealthyPercentage, 0, 100)
	checkPercent(c, sp.Node, "maximumHealthyPercentage", sp.MaximumHealthyPercentage, 100, 200)
	if sp.InstanceWarmup != "" {
		c.Integer(sp.Node, "instanceWarmup", sp.InstanceWarmup, 0, false, "instanceWarmup")
	}
	for key, v := range map[string]string{"skipMatching": sp.SkipMatching, "useAlreadyRunningInstances": sp.UseAlreadyRunningInstances, "skipInstanceTermination": sp.SkipInstanceTermination} {
		c.Boolean(sp.Node, key, v)
	}
	ignoredTrue(c, sp.Node, "skipInstanceTermination", sp.SkipInstanceTermination, "the instance refresh replaces instances as AWS does")
	c.Ignored(sp.HandleInProgressInstanceRefresh, "handleInProgressInstanceRefresh", "Gantry waits for a refresh already in progress to end, then starts its own")
}

// AsgCanaryDeploy starts the new version in a NAME__Canary group.
type AsgCanaryDeploy struct {
	SelectorsOnly     `yaml:",inline"`
	AsgName           string             `yaml:"asgName"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
}

// Check checks the instances.
func (sp *AsgCanaryDeploy) Check(c Checker) { checkInstanceSelection(c, sp.InstanceSelection) }

// AsgLoadBalancer is one load balancer of a blue-green deploy.
type AsgLoadBalancer struct {
	Node                 *yaml.Node `yaml:"-"`
	LoadBalancer         string     `yaml:"loadBalancer" gantry:"required"`
	ProdListener         string     `yaml:"prodListener" gantry:"required"`
	ProdListenerRuleArn  string     `yaml:"prodListenerRuleArn" gantry:"required"`
	StageListener        string     `yaml:"stageListener"`
	StageListenerRuleArn string     `yaml:"stageListenerRuleArn"`
}

// AsgBlueGreenDeploy deploys the new version to the blue-green group not serving prod.
type AsgBlueGreenDeploy struct {
	SelectorsOnly              `yaml:",inline"`
	AsgName                    string            `yaml:"asgName"`
	Instances                  *AsgInstances     `yaml:"instances"`
	LoadBalancer               string            `yaml:"loadBalancer"`
	LoadBalancers              []AsgLoadBalancer `yaml:"loadBalancers"`
	ProdListener               string            `yaml:"prodListener"`
	ProdListenerRuleArn        string            `yaml:"prodListenerRuleArn"`
	StageListener              string            `yaml:"stageListener"`
	StageListenerRuleArn       string            `yaml:"stageListenerRuleArn"`
	UseAlreadyRunningInstances string            `yaml:"useAlreadyRunningInstances"`
}

// Check checks that the prod listener is named, here or in loadBalancers, and the capacity.
func (sp *AsgBlueGreenDeploy) Check(c Checker) {
	checkAsgInstances(c, sp.Instances)
	c.Boolean(sp.Node, "useAlreadyRunningInstances", sp.UseAlreadyRunningInstances)
	if len(sp.LoadBalancers) == 0 && (sp.ProdListener == "" || sp.ProdListenerRuleArn == "") {
		c.Error(sp.Node, "missing-field", "AsgBlueGreenDeploy needs the prod listener: prodListener and prodListenerRuleArn (with stageListener and stageListenerRuleArn to swap, without them to shift traffic by weight), or loadBalancers").
			SetHint("loadBalancers: [{loadBalancer: web, prodListener: <arn>, prodListenerRuleArn: <arn>, stageListener: <arn>, stageListenerRuleArn: <arn>}]")
	}
}

// AsgBlueGreenSwapService sends prod traffic to the new group.
type AsgBlueGreenSwapService struct {
	SelectorsOnly  `yaml:",inline"`
	DownsizeOldAsg string `yaml:"downsizeOldAsg" gantry:"required"`
}

// Check checks the flag.
func (sp *AsgBlueGreenSwapService) Check(c Checker) {
	c.Boolean(sp.Node, "downsizeOldAsg", sp.DownsizeOldAsg)
}

// AsgShiftTraffic gives the new group a weight of the prod rule's traffic.
type AsgShiftTraffic struct {
	SelectorsOnly  `yaml:",inline"`
	Weight         string `yaml:"weight" gantry:"required"`
	DownsizeOldAsg string `yaml:"downsizeOldAsg" gantry:"required"`
}

// Check checks the weight and the flag.
func (sp *AsgShiftTraffic) Check(c Checker) {
	checkPercent(c, sp.Node, "weight", sp.Weight, 0, 100)
	c.Boolean(sp.Node, "downsizeOldAsg", sp.DownsizeOldAsg)
}

// AsgSetup creates the next group of a phased canary at no instances.
type AsgSetup struct {
	SelectorsOnly  `yaml:",inline"`
	AsgName        string        `yaml:"asgName" gantry:"required"`
	ResizeStrategy string        `yaml:"resizeStrategy" gantry:"required"`
	Instances      *AsgInstances `yaml:"instances" gantry:"required"`
}

// Check checks the resize order and the capacity.
func (sp *AsgSetup) Check(c Checker) {
	c.Enum(sp.Node, "resizeStrategy", sp.ResizeStrategy, []string{"resize_new_first", "downsize_old_first"}, "resizeStrategy")
	checkAsgInstances(c, sp.Instances)
}

// AsgPhasedDeploy moves a share of the phased canary's capacity to the new group.
type AsgPhasedDeploy struct {
	SelectorsOnly     `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
}

// Check checks the instances.
func (sp *AsgPhasedDeploy) Check(c Checker) { checkInstanceSelection(c, sp.InstanceSelection) }

// AsgScale sets a group's desired capacity.
type AsgScale struct {
	SelectorsOnly        `yaml:",inline"`
	ConnectorRef         *yaml.Node         `yaml:"connectorRef"`
	Region               *yaml.Node         `yaml:"region"`
	AsgName              string             `yaml:"asgName"`
	InstanceSelection    *InstanceSelection `yaml:"instanceSelection" gantry:"required"`
	SkipSteadyStateCheck string             `yaml:"skipSteadyStateCheck"`
}

// Check checks the instances; another connector or region than the stage's is not used.
func (sp *AsgScale) Check(c Checker) {
	checkInstanceSelection(c, sp.InstanceSelection)
	c.Boolean(sp.Node, "skipSteadyStateCheck", sp.SkipSteadyStateCheck)
	c.Ignored(sp.ConnectorRef, "connectorRef", "the step uses the stage infrastructure's Aws connector")
	c.Ignored(sp.Region, "region", "the step uses the stage infrastructure's region")
}

// AsgSteadyState waits until a group runs its desired capacity.
type AsgSteadyState struct {
	SelectorsOnly   `yaml:",inline"`
	AsgName         string `yaml:"asgName"`
	PollingInterval string `yaml:"pollingInterval"`
}

// Check checks the polling interval.
func (sp *AsgSteadyState) Check(c Checker) {
	if sp.PollingInterval != "" {
		c.Duration(sp.Node, "pollingInterval", sp.PollingInterval, "pollingInterval")
	}
}
