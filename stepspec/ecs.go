package stepspec

import "gopkg.in/yaml.v3"

// The ECS step types, run by the ECS family (one handler each) in Deployment stages of
// deploymentType ECS.
const (
	EcsRollingDeploy               = "EcsRollingDeploy"
	EcsRollingRollback             = "EcsRollingRollback"
	EcsCanaryDeploy                = "EcsCanaryDeploy"
	EcsCanaryDelete                = "EcsCanaryDelete"
	EcsRunTask                     = "EcsRunTask"
	EcsBlueGreenCreateService      = "EcsBlueGreenCreateService"
	EcsBlueGreenSwapTargetGroups   = "EcsBlueGreenSwapTargetGroups"
	EcsBlueGreenRollback           = "EcsBlueGreenRollback"
	EcsServiceSetup                = "EcsServiceSetup"
	EcsUpgradeContainer            = "EcsUpgradeContainer"
	EcsBasicRollback               = "EcsBasicRollback"
	EcsBlueGreenTrafficShift       = "EcsBlueGreenTrafficShift"
	StandAloneTrafficShiftRollback = "StandAloneTrafficShiftRollback"
	EcsScale                       = "EcsScale"
)

// EcsRollingDeploySpec updates (or creates) the stage's ECS service with a new task
// definition.
type EcsRollingDeploySpec struct {
	Selectors                     `yaml:",inline"`
	SameAsAlreadyRunningInstances Text `yaml:"sameAsAlreadyRunningInstances" json:"sameAsAlreadyRunningInstances"`
	ForceNewDeployment            Text `yaml:"forceNewDeployment" json:"forceNewDeployment"`
	SkipApplicationScaling        Text `yaml:"skipApplicationScaling" json:"skipApplicationScaling"`
}

// EcsRunTaskSpec runs a task: a task definition from a store (or an existing one's ARN), with a
// RunTask request definition, and waits for it to stop unless skipSteadyStateCheck. The stores
// reach the family as the step's manifest.
type EcsRunTaskSpec struct {
	Selectors                `yaml:",inline"`
	TaskDefinition           *ManifestStore `yaml:"taskDefinition" json:"-"`
	TaskDefinitionArn        string         `yaml:"taskDefinitionArn" json:"taskDefinitionArn"`
	RunTaskRequestDefinition *ManifestStore `yaml:"runTaskRequestDefinition" json:"-"`
	SkipSteadyStateCheck     Text           `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
}

// EcsBlueGreenCreateServiceSpec starts the new version as a green service behind the stage
// listener: the load balancer's prod and stage listeners (and rules) say where traffic goes.
// A traffic-shift deployment has no stage listener: the green service starts behind
// stageTargetGroupArn, and EcsBlueGreenTrafficShift (Inherit) weighs the prod rule.
type EcsBlueGreenCreateServiceSpec struct {
	Selectors                     `yaml:",inline"`
	LoadBalancer                  string `yaml:"loadBalancer" json:"loadBalancer"`
	ProdListener                  string `yaml:"prodListener" json:"prodListener"`
	ProdListenerRuleArn           string `yaml:"prodListenerRuleArn" json:"prodListenerRuleArn"`
	StageListener                 string `yaml:"stageListener" json:"stageListener"`
	StageListenerRuleArn          string `yaml:"stageListenerRuleArn" json:"stageListenerRuleArn"`
	SameAsAlreadyRunningInstances Text   `yaml:"sameAsAlreadyRunningInstances" json:"sameAsAlreadyRunningInstances"`
	IsTrafficShift                Text   `yaml:"isTrafficShift" json:"isTrafficShift"`
	StageTargetGroupArn           string `yaml:"stageTargetGroupArn" json:"stageTargetGroupArn"`
}

// EcsBlueGreenSwapTargetGroupsSpec sends prod traffic to the green service and downsizes the
// old one.
type EcsBlueGreenSwapTargetGroupsSpec struct {
	Selectors                     `yaml:",inline"`
	DoNotDownsizeOldService       Text `yaml:"doNotDownsizeOldService" json:"doNotDownsizeOldService"`
	DownsizeOldServiceDelayInSecs Text `yaml:"downsizeOldServiceDelayInSecs" json:"downsizeOldServiceDelayInSecs"`
}

// EcsServiceSetupSpec creates the next version of a basic deployment's service at zero tasks.
type EcsServiceSetupSpec struct {
	Selectors                     `yaml:",inline"`
	ResizeStrategy                string `yaml:"resizeStrategy" json:"resizeStrategy"`
	SameAsAlreadyRunningInstances Text   `yaml:"sameAsAlreadyRunningInstances" json:"sameAsAlreadyRunningInstances"`
}

// EcsUpgradeContainerSpec scales a basic deployment's new version up and the old one down.
type EcsUpgradeContainerSpec struct {
	Selectors                       `yaml:",inline"`
	NewServiceInstanceCount         Text   `yaml:"newServiceInstanceCount" json:"newServiceInstanceCount" gantry:"required"`
	NewServiceInstanceUnit          string `yaml:"newServiceInstanceUnit" json:"newServiceInstanceUnit" gantry:"required"`
	DownsizeOldServiceInstanceCount Text   `yaml:"downsizeOldServiceInstanceCount" json:"downsizeOldServiceInstanceCount"`
	DownsizeOldServiceInstanceUnit  string `yaml:"downsizeOldServiceInstanceUnit" json:"downsizeOldServiceInstanceUnit"`
}

// EcsScaleSpec sets a named ECS service's desired count.
type EcsScaleSpec struct {
	Selectors            `yaml:",inline"`
	ConnectorRef         *yaml.Node `yaml:"connectorRef" json:"-"`
	Region               *yaml.Node `yaml:"region" json:"-"`
	Cluster              string     `yaml:"cluster" json:"cluster"`
	Service              string     `yaml:"service" json:"service" gantry:"required"`
	InstanceUnit         string     `yaml:"instanceUnit" json:"instanceUnit" gantry:"required"`
	Instances            Text       `yaml:"instances" json:"instances" gantry:"required"`
	SkipSteadyStateCheck Text       `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
}

// EcsBlueGreenTrafficShiftSpec weighs a listener rule between target groups.
type EcsBlueGreenTrafficShiftSpec struct {
	Selectors              `yaml:",inline"`
	EcsTrafficShiftWrapper *Typed[EcsTrafficShiftSpec] `yaml:"ecsTrafficShiftWrapper" json:"ecsTrafficShiftWrapper" gantry:"required"`
}

// EcsTrafficShiftSpec is a Standalone shift's rule and weights, or an Inherit one's
// percentage. The weights are read as written (ForwardConfig) by validation and as rendered
// (Forward) by the ECS family.
type EcsTrafficShiftSpec struct {
	Node             *yaml.Node      `yaml:"-" json:"-"`
	LoadBalancer     string          `yaml:"loadBalancer" json:"loadBalancer"`
	Listener         string          `yaml:"listener" json:"listener"`
	ListenerRuleArn  string          `yaml:"listenerRuleArn" json:"listenerRuleArn"`
	ForwardConfig    *yaml.Node      `yaml:"forwardConfig" json:"-"`
	Forward          []ForwardWeight `yaml:"-" json:"forwardConfig"`
	WeightPercentage Text            `yaml:"weightPercentage" json:"weightPercentage"`
}

// ForwardWeight is a target group and its weight in a Standalone traffic shift.
type ForwardWeight struct {
	TargetGroupArn string `json:"targetGroupArn"`
	Weight         Text   `json:"weight"`
}

// StandAloneTrafficShiftRollbackSpec restores what the listener rules of the stage's
// Standalone traffic shifts forwarded to before: compile gives it those rules (listenerRuleArns).
type StandAloneTrafficShiftRollbackSpec struct {
	Selectors        `yaml:",inline"`
	ListenerRuleArns []string `yaml:"-" json:"listenerRuleArns"`
}
