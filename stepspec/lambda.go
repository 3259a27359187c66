package stepspec

// The AWS Lambda step types, run by the AwsLambda family (one handler each) in Deployment
// stages of deploymentType AwsLambda.
const (
	AwsLambdaDeploy         = "AwsLambdaDeploy"
	AwsLambdaRollback       = "AwsLambdaRollback"
	AwsLambdaCanaryDeploy   = "AwsLambdaCanaryDeploy"
	AwsLambdaTrafficShift   = "AwsLambdaTrafficShift"
	AwsLambdaCanaryRollback = "AwsLambdaCanaryRollback"
)
