package stepspec

import "gopkg.in/yaml.v3"

// The AWS Lambda step types, run by the AwsLambda family (one handler each) in Deployment
// stages of deploymentType AwsLambda.
const (
	AwsLambdaDeploy         = "AwsLambdaDeploy"
	AwsLambdaRollback       = "AwsLambdaRollback"
	AwsLambdaCanaryDeploy   = "AwsLambdaCanaryDeploy"
	AwsLambdaTrafficShift   = "AwsLambdaTrafficShift"
	AwsLambdaCanaryRollback = "AwsLambdaCanaryRollback"
)

// Selectors is the spec of the steps that take no settings (AwsLambdaDeploy, AwsLambdaRollback,
// AwsLambdaCanaryDeploy, AwsLambdaCanaryRollback and ECS steps alike): the stage's service,
// infrastructure and artifact say what is deployed, the step only where it runs (which the
// workflow reads from the plan, not the activity from its spec).
type Selectors struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}

// AwsLambdaTrafficShiftSpec gives a Lambda canary's version a share of its alias's traffic.
type AwsLambdaTrafficShiftSpec struct {
	Selectors         `yaml:",inline"`
	TrafficPercentage Text `yaml:"trafficPercentage" json:"trafficPercentage"`
}
