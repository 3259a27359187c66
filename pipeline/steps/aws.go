package steps

import (
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

// FetchInstanceScript runs a CustomDeployment infrastructure's fetch-instances script.
type FetchInstanceScript struct {
	Node              *yaml.Node `yaml:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
}
