package steps

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
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

// AwsLambdaTrafficShift gives a Lambda canary's version a share of its alias's traffic.
type AwsLambdaTrafficShift struct {
	SelectorsOnly     `yaml:",inline"`
	TrafficPercentage string `yaml:"trafficPercentage"`
}

// Check checks the percentage: above 0 and at most 100.
func (sp *AwsLambdaTrafficShift) Check(c Checker) {
	v := sp.TrafficPercentage
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
