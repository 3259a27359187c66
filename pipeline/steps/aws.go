package steps

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

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
	IsTrafficShift                string `yaml:"isTrafficShift"`
	StageTargetGroupArn           string `yaml:"stageTargetGroupArn"`
}

// Check checks what a traffic-shift deployment needs: the prod rule whose weights change and
// the green service's target group, in place of a stage listener.
func (sp *EcsBlueGreenCreateService) Check(c Checker) {
	c.Boolean(sp.Node, "isTrafficShift", sp.IsTrafficShift)
	if sp.IsTrafficShift == "true" && (sp.ProdListenerRuleArn == "" || sp.StageTargetGroupArn == "") {
		c.Error(sp.Node, "missing-field", "EcsBlueGreenCreateService with isTrafficShift needs prodListenerRuleArn (whose weights EcsBlueGreenTrafficShift changes) and stageTargetGroupArn (where the green service starts)")
	}
}

// EcsBlueGreenTrafficShift weighs a listener rule between target groups.
type EcsBlueGreenTrafficShift struct {
	SelectorsOnly          `yaml:",inline"`
	EcsTrafficShiftWrapper *pipeline.Typed[EcsTrafficShiftSpec] `yaml:"ecsTrafficShiftWrapper" gantry:"required"`
}

// EcsTrafficShiftSpec is a Standalone shift's rule and weights, or an Inherit one's percentage.
type EcsTrafficShiftSpec struct {
	Node             *yaml.Node `yaml:"-"`
	LoadBalancer     string     `yaml:"loadBalancer"`
	Listener         string     `yaml:"listener"`
	ListenerRuleArn  string     `yaml:"listenerRuleArn"`
	ForwardConfig    *yaml.Node `yaml:"forwardConfig"`
	WeightPercentage string     `yaml:"weightPercentage"`
}

// Check checks the wrapper's type and what each type needs.
func (sp *EcsBlueGreenTrafficShift) Check(c Checker) {
	w := sp.EcsTrafficShiftWrapper
	if w == nil {
		return
	}
	c.Enum(w.Node, "type", w.Type, []string{"Standalone", "Inherit"}, "ecsTrafficShiftWrapper type")
	s := w.Spec
	if s == nil {
		return
	}
	switch w.Type {
	case "Standalone":
		for key, v := range map[string]string{"loadBalancer": s.LoadBalancer, "listener": s.Listener, "listenerRuleArn": s.ListenerRuleArn} {
			if v == "" {
				c.Error(s.Node, "missing-field", "a Standalone traffic shift needs `%s`", key)
			}
		}
		if s.ForwardConfig == nil {
			c.Error(s.Node, "missing-field", "a Standalone traffic shift needs `forwardConfig`, the target groups and their weights")
		}
	case "Inherit":
		if s.WeightPercentage == "" {
			c.Error(s.Node, "missing-field", "an Inherit traffic shift needs `weightPercentage`, the green service's share of the prod rule")
		} else if !strings.Contains(s.WeightPercentage, "<+") {
			if n, err := strconv.Atoi(s.WeightPercentage); err != nil || n < 0 || n > 100 {
				c.Error(pipeline.ValueAt(s.Node, "weightPercentage"), "enum", "weightPercentage %s is not a whole number from 0 to 100", s.WeightPercentage)
			}
		}
	}
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

// EcsServiceSetup creates the next version of a basic deployment's service at zero tasks.
type EcsServiceSetup struct {
	SelectorsOnly                 `yaml:",inline"`
	ResizeStrategy                string `yaml:"resizeStrategy"`
	SameAsAlreadyRunningInstances string `yaml:"sameAsAlreadyRunningInstances"`
}

// Check checks the resize strategy.
func (sp *EcsServiceSetup) Check(c Checker) {
	c.Enum(sp.Node, "resizeStrategy", sp.ResizeStrategy, []string{"ResizeNewFirst", "DownsizeOldFirst"}, "resizeStrategy")
	c.Boolean(sp.Node, "sameAsAlreadyRunningInstances", sp.SameAsAlreadyRunningInstances)
}

// EcsUpgradeContainer scales a basic deployment's new version up and the old one down.
type EcsUpgradeContainer struct {
	SelectorsOnly                   `yaml:",inline"`
	NewServiceInstanceCount         string `yaml:"newServiceInstanceCount" gantry:"required"`
	NewServiceInstanceUnit          string `yaml:"newServiceInstanceUnit" gantry:"required"`
	DownsizeOldServiceInstanceCount string `yaml:"downsizeOldServiceInstanceCount"`
	DownsizeOldServiceInstanceUnit  string `yaml:"downsizeOldServiceInstanceUnit"`
}

var instanceUnits = []string{"Count", "Percentage"}

// Check checks the counts and their units.
func (sp *EcsUpgradeContainer) Check(c Checker) {
	c.Enum(sp.Node, "newServiceInstanceUnit", sp.NewServiceInstanceUnit, instanceUnits, "newServiceInstanceUnit")
	c.Integer(sp.Node, "newServiceInstanceCount", sp.NewServiceInstanceCount, 0, false, "newServiceInstanceCount")
	if sp.DownsizeOldServiceInstanceCount != "" {
		c.Integer(sp.Node, "downsizeOldServiceInstanceCount", sp.DownsizeOldServiceInstanceCount, 0, false, "downsizeOldServiceInstanceCount")
		if sp.DownsizeOldServiceInstanceUnit == "" {
			c.Error(sp.Node, "missing-field", "downsizeOldServiceInstanceCount needs downsizeOldServiceInstanceUnit: Count or Percentage")
		}
	}
	c.Enum(sp.Node, "downsizeOldServiceInstanceUnit", sp.DownsizeOldServiceInstanceUnit, instanceUnits, "downsizeOldServiceInstanceUnit")
}

// EcsScale sets a named ECS service's desired count.
type EcsScale struct {
	SelectorsOnly        `yaml:",inline"`
	ConnectorRef         *yaml.Node `yaml:"connectorRef"`
	Region               *yaml.Node `yaml:"region"`
	Cluster              string     `yaml:"cluster"`
	Service              string     `yaml:"service" gantry:"required"`
	InstanceUnit         string     `yaml:"instanceUnit" gantry:"required"`
	Instances            string     `yaml:"instances" gantry:"required"`
	SkipSteadyStateCheck string     `yaml:"skipSteadyStateCheck"`
}

// Check checks the count and its unit; another connector or region than the stage's is not
// used.
func (sp *EcsScale) Check(c Checker) {
	c.Enum(sp.Node, "instanceUnit", sp.InstanceUnit, instanceUnits, "instanceUnit")
	c.Integer(sp.Node, "instances", sp.Instances, 0, false, "instances")
	c.Boolean(sp.Node, "skipSteadyStateCheck", sp.SkipSteadyStateCheck)
	c.Ignored(sp.ConnectorRef, "connectorRef", "the step uses the stage infrastructure's Aws connector")
	c.Ignored(sp.Region, "region", "the step uses the stage infrastructure's region")
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

// SelectorsOnly is the spec of the ECS steps that take no settings.
type SelectorsOnly = stepspec.Selectors

// checkTrafficShift checks AwsLambdaTrafficShift's percentage: above 0 and at most 100.
func checkTrafficShift(sp *stepspec.AwsLambdaTrafficShiftSpec, c Checker) {
	v := string(sp.TrafficPercentage)
	if v == "" {
		c.Error(sp.Node, "missing-field", "AwsLambdaTrafficShift needs `trafficPercentage`, the share of the alias's traffic the canary version takes").
			SetHint("trafficPercentage: 10")
		return
	}
	if strings.Contains(v, "<+") {
		return
	}
	if p, err := strconv.ParseFloat(v, 64); err != nil || p <= 0 || p > 100 {
		c.Error(pipeline.ValueAt(sp.Node, "trafficPercentage"), "enum", "trafficPercentage %s is not a number above 0 and at most 100", v).
			SetHint("100 routes all traffic to the canary version")
	}
}

// FetchInstanceScript runs a CustomDeployment infrastructure's fetch-instances script.
type FetchInstanceScript struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}
