package steps

import (
	"strconv"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// Check checks what a traffic-shift deployment needs: the prod rule whose weights change and
// the green service's target group, in place of a stage listener.
func checkEcsBlueGreenCreateService(sp *EcsBlueGreenCreateService, c Checker) {
	c.Boolean(sp.Node, "isTrafficShift", string(sp.IsTrafficShift))
	if sp.IsTrafficShift == "true" && (sp.ProdListenerRuleArn == "" || sp.StageTargetGroupArn == "") {
		c.Error(sp.Node, "missing-field", "EcsBlueGreenCreateService with isTrafficShift needs prodListenerRuleArn (whose weights EcsBlueGreenTrafficShift changes) and stageTargetGroupArn (where the green service starts)")
	}
}

// Check checks the wrapper's type and what each type needs.
func checkEcsBlueGreenTrafficShift(sp *EcsBlueGreenTrafficShift, c Checker) {
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
		if wp := string(s.WeightPercentage); wp == "" {
			c.Error(s.Node, "missing-field", "an Inherit traffic shift needs `weightPercentage`, the green service's share of the prod rule")
		} else if !strings.Contains(wp, "<+") {
			if n, err := strconv.Atoi(wp); err != nil || n < 0 || n > 100 {
				c.Error(pipeline.ValueAt(s.Node, "weightPercentage"), "enum", "weightPercentage %s is not a whole number from 0 to 100", wp)
			}
		}
	}
}

// Check checks the resize strategy.
func checkEcsServiceSetup(sp *EcsServiceSetup, c Checker) {
	c.Enum(sp.Node, "resizeStrategy", sp.ResizeStrategy, []string{"ResizeNewFirst", "DownsizeOldFirst"}, "resizeStrategy")
	c.Boolean(sp.Node, "sameAsAlreadyRunningInstances", string(sp.SameAsAlreadyRunningInstances))
}

var instanceUnits = []string{"Count", "Percentage"}

// Check checks the counts and their units.
func checkEcsUpgradeContainer(sp *EcsUpgradeContainer, c Checker) {
	c.Enum(sp.Node, "newServiceInstanceUnit", sp.NewServiceInstanceUnit, instanceUnits, "newServiceInstanceUnit")
	c.Integer(sp.Node, "newServiceInstanceCount", string(sp.NewServiceInstanceCount), 0, false, "newServiceInstanceCount")
	if sp.DownsizeOldServiceInstanceCount != "" {
		c.Integer(sp.Node, "downsizeOldServiceInstanceCount", string(sp.DownsizeOldServiceInstanceCount), 0, false, "downsizeOldServiceInstanceCount")
		if sp.DownsizeOldServiceInstanceUnit == "" {
			c.Error(sp.Node, "missing-field", "downsizeOldServiceInstanceCount needs downsizeOldServiceInstanceUnit: Count or Percentage")
		}
	}
	c.Enum(sp.Node, "downsizeOldServiceInstanceUnit", sp.DownsizeOldServiceInstanceUnit, instanceUnits, "downsizeOldServiceInstanceUnit")
}

// Check checks the count and its unit; another connector or region than the stage's is not
// used.
func checkEcsScale(sp *EcsScale, c Checker) {
	c.Enum(sp.Node, "instanceUnit", sp.InstanceUnit, instanceUnits, "instanceUnit")
	c.Integer(sp.Node, "instances", string(sp.Instances), 0, false, "instances")
	c.Boolean(sp.Node, "skipSteadyStateCheck", string(sp.SkipSteadyStateCheck))
	c.Ignored(sp.ConnectorRef, "connectorRef", "the step uses the stage infrastructure's Aws connector")
	c.Ignored(sp.Region, "region", "the step uses the stage infrastructure's region")
}

// SelectorsOnly is the spec of the ECS steps that take no settings; the others' specs are
// stepspec's, shared with the ECS family.
type (
	SelectorsOnly                  = stepspec.Selectors
	EcsRollingDeploy               = stepspec.EcsRollingDeploySpec
	EcsRunTask                     = stepspec.EcsRunTaskSpec
	EcsBlueGreenCreateService      = stepspec.EcsBlueGreenCreateServiceSpec
	EcsBlueGreenSwapTargetGroups   = stepspec.EcsBlueGreenSwapTargetGroupsSpec
	EcsServiceSetup                = stepspec.EcsServiceSetupSpec
	EcsUpgradeContainer            = stepspec.EcsUpgradeContainerSpec
	EcsScale                       = stepspec.EcsScaleSpec
	EcsBlueGreenTrafficShift       = stepspec.EcsBlueGreenTrafficShiftSpec
	EcsTrafficShiftSpec            = stepspec.EcsTrafficShiftSpec
	StandAloneTrafficShiftRollback = stepspec.StandAloneTrafficShiftRollbackSpec
)

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

// FetchInstanceScript runs a CustomDeployment infrastructure's fetch-instances script
// (stepspec's).
type FetchInstanceScript = stepspec.FetchInstanceScriptSpec
