package stepspec

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
