package stepspec

import "gopkg.in/yaml.v3"

// The EC2 Auto Scaling group step types, run by the Asg family (one handler each) in
// Deployment stages of deploymentType Asg.
const (
	AsgRollingDeploy        = "AsgRollingDeploy"
	AsgRollingRollback      = "AsgRollingRollback"
	AsgCanaryDeploy         = "AsgCanaryDeploy"
	AsgCanaryDelete         = "AsgCanaryDelete"
	AsgBlueGreenDeploy      = "AsgBlueGreenDeploy"
	AsgBlueGreenSwapService = "AsgBlueGreenSwapService"
	AsgShiftTraffic         = "AsgShiftTraffic"
	AsgBlueGreenRollback    = "AsgBlueGreenRollback"
	AsgSetup                = "AsgSetup"
	AsgPhasedDeploy         = "AsgPhasedDeploy"
	AsgRollback             = "AsgRollback"
	AsgScale                = "AsgScale"
	AsgSteadyState          = "AsgSteadyState"
)

// InstanceSelection picks instances by count or percentage (ASG and Kubernetes canaries).
type InstanceSelection = Typed[InstanceCount]

// InstanceCount is the count or percentage.
type InstanceCount struct {
	Node       *yaml.Node `yaml:"-" json:"-"`
	Count      Text       `yaml:"count" json:"count"`
	Percentage Text       `yaml:"percentage" json:"percentage"`
}

// AsgInstances is an ASG deploy's capacity: Fixed (min, max, desired) or CurrentRunning (the
// live group's).
type AsgInstances struct {
	Node *yaml.Node         `yaml:"-" json:"-"`
	Type string             `yaml:"type" json:"type" gantry:"required"`
	Spec *AsgFixedInstances `yaml:"spec" json:"spec"`
}

// AsgFixedInstances is a Fixed capacity.
type AsgFixedInstances struct {
	Node    *yaml.Node `yaml:"-" json:"-"`
	Desired Text       `yaml:"desired" json:"desired" gantry:"required"`
	Max     Text       `yaml:"max" json:"max" gantry:"required"`
	Min     Text       `yaml:"min" json:"min" gantry:"required"`
}

// AsgLoadBalancer is one load balancer of a blue-green deploy: its prod listener and rule,
// and the stage's (without them, traffic moves by weight).
type AsgLoadBalancer struct {
	Node                 *yaml.Node `yaml:"-" json:"-"`
	LoadBalancer         string     `yaml:"loadBalancer" json:"loadBalancer" gantry:"required"`
	ProdListener         string     `yaml:"prodListener" json:"prodListener" gantry:"required"`
	ProdListenerRuleArn  string     `yaml:"prodListenerRuleArn" json:"prodListenerRuleArn" gantry:"required"`
	StageListener        string     `yaml:"stageListener" json:"stageListener"`
	StageListenerRuleArn string     `yaml:"stageListenerRuleArn" json:"stageListenerRuleArn"`
}

// AsgFollowed is what compile gives the steps that act on what an earlier ASG step of the
// stage deployed (they name nothing themselves): its group's name and, after a blue-green
// deploy, its load balancers. Not read from YAML.
type AsgFollowed struct {
	AsgName       string            `yaml:"-" json:"asgName"`
	LoadBalancers []AsgLoadBalancer `yaml:"-" json:"loadBalancers"`
}

// AsgFollowerSpec is the spec of the steps that take no settings: AsgRollingRollback,
// AsgCanaryDelete, AsgBlueGreenRollback and AsgRollback.
type AsgFollowerSpec struct {
	Selectors   `yaml:",inline"`
	AsgFollowed `yaml:",inline"`
}

// AsgRollingDeploySpec updates (or creates) the stage's group with a new launch template
// version and refreshes its instances.
type AsgRollingDeploySpec struct {
	Selectors                       `yaml:",inline"`
	AsgName                         string        `yaml:"asgName" json:"asgName"`
	Instances                       *AsgInstances `yaml:"instances" json:"instances"`
	MinimumHealthyPercentage        Text          `yaml:"minimumHealthyPercentage" json:"minimumHealthyPercentage"`
	MaximumHealthyPercentage        Text          `yaml:"maximumHealthyPercentage" json:"maximumHealthyPercentage"`
	InstanceWarmup                  Text          `yaml:"instanceWarmup" json:"instanceWarmup"`
	SkipMatching                    Text          `yaml:"skipMatching" json:"skipMatching"`
	UseAlreadyRunningInstances      Text          `yaml:"useAlreadyRunningInstances" json:"useAlreadyRunningInstances"`
	SkipInstanceTermination         Text          `yaml:"skipInstanceTermination" json:"-"`
	HandleInProgressInstanceRefresh *yaml.Node    `yaml:"handleInProgressInstanceRefresh" json:"-"`
}

// AsgCanaryDeploySpec starts the new version in a NAME__Canary group.
type AsgCanaryDeploySpec struct {
	Selectors         `yaml:",inline"`
	AsgName           string             `yaml:"asgName" json:"asgName"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
}

// AsgBlueGreenDeploySpec deploys the new version to the blue-green group not serving prod:
// behind the listeners of loadBalancers, or of the step's own fields.
type AsgBlueGreenDeploySpec struct {
	Selectors                  `yaml:",inline"`
	AsgName                    string            `yaml:"asgName" json:"asgName"`
	Instances                  *AsgInstances     `yaml:"instances" json:"instances"`
	LoadBalancer               string            `yaml:"loadBalancer" json:"loadBalancer"`
	LoadBalancers              []AsgLoadBalancer `yaml:"loadBalancers" json:"loadBalancers"`
	ProdListener               string            `yaml:"prodListener" json:"prodListener"`
	ProdListenerRuleArn        string            `yaml:"prodListenerRuleArn" json:"prodListenerRuleArn"`
	StageListener              string            `yaml:"stageListener" json:"stageListener"`
	StageListenerRuleArn       string            `yaml:"stageListenerRuleArn" json:"stageListenerRuleArn"`
	UseAlreadyRunningInstances Text              `yaml:"useAlreadyRunningInstances" json:"useAlreadyRunningInstances"`
}

// Listeners are the deploy's load balancers: loadBalancers, or the step's own listener fields.
func (sp *AsgBlueGreenDeploySpec) Listeners() []AsgLoadBalancer {
	if len(sp.LoadBalancers) > 0 {
		return sp.LoadBalancers
	}
	if sp.ProdListener != "" || sp.ProdListenerRuleArn != "" {
		return []AsgLoadBalancer{{LoadBalancer: sp.LoadBalancer, ProdListener: sp.ProdListener, ProdListenerRuleArn: sp.ProdListenerRuleArn,
			StageListener: sp.StageListener, StageListenerRuleArn: sp.StageListenerRuleArn}}
	}
	return nil
}

// AsgBlueGreenSwapServiceSpec sends prod traffic to the new group.
type AsgBlueGreenSwapServiceSpec struct {
	Selectors      `yaml:",inline"`
	AsgFollowed    `yaml:",inline"`
	DownsizeOldAsg Text `yaml:"downsizeOldAsg" json:"downsizeOldAsg" gantry:"required"`
}

// AsgShiftTrafficSpec gives the new group a weight of the prod rule's traffic.
type AsgShiftTrafficSpec struct {
	Selectors      `yaml:",inline"`
	AsgFollowed    `yaml:",inline"`
	Weight         Text `yaml:"weight" json:"weight" gantry:"required"`
	DownsizeOldAsg Text `yaml:"downsizeOldAsg" json:"downsizeOldAsg" gantry:"required"`
}

// AsgSetupSpec creates the next group of a phased canary at no instances.
type AsgSetupSpec struct {
	Selectors      `yaml:",inline"`
	AsgName        string        `yaml:"asgName" json:"asgName" gantry:"required"`
	ResizeStrategy string        `yaml:"resizeStrategy" json:"resizeStrategy" gantry:"required"`
	Instances      *AsgInstances `yaml:"instances" json:"instances" gantry:"required"`
}

// AsgPhasedDeploySpec moves a share of the phased canary's capacity to the new group.
type AsgPhasedDeploySpec struct {
	Selectors         `yaml:",inline"`
	AsgFollowed       `yaml:",inline"`
	InstanceSelection *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
}

// AsgScaleSpec sets a group's desired capacity.
type AsgScaleSpec struct {
	Selectors            `yaml:",inline"`
	ConnectorRef         *yaml.Node         `yaml:"connectorRef" json:"-"`
	Region               *yaml.Node         `yaml:"region" json:"-"`
	AsgName              string             `yaml:"asgName" json:"asgName"`
	InstanceSelection    *InstanceSelection `yaml:"instanceSelection" json:"instanceSelection" gantry:"required"`
	SkipSteadyStateCheck Text               `yaml:"skipSteadyStateCheck" json:"skipSteadyStateCheck"`
}

// AsgSteadyStateSpec waits until a group runs its desired capacity.
type AsgSteadyStateSpec struct {
	Selectors       `yaml:",inline"`
	AsgName         string `yaml:"asgName" json:"asgName"`
	PollingInterval string `yaml:"pollingInterval" json:"pollingInterval"`
}
