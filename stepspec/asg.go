package stepspec

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
