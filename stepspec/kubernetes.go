package stepspec

// The Kubernetes and Helm step types, run by the Kubernetes family (one handler each) in
// Deployment stages of deploymentType Kubernetes and NativeHelm.
const (
	K8sRollingDeploy           = "K8sRollingDeploy"
	K8sRollingRollback         = "K8sRollingRollback"
	K8sCanaryDeploy            = "K8sCanaryDeploy"
	K8sCanaryDelete            = "K8sCanaryDelete"
	K8sBlueGreenDeploy         = "K8sBlueGreenDeploy"
	K8sBGSwapServices          = "K8sBGSwapServices"
	K8sApply                   = "K8sApply"
	K8sScale                   = "K8sScale"
	K8sDelete                  = "K8sDelete"
	K8sPatch                   = "K8sPatch"
	K8sRollout                 = "K8sRollout"
	K8sDiff                    = "K8sDiff"
	K8sBlueGreenStageScaleDown = "K8sBlueGreenStageScaleDown"
	K8sTrafficRouting          = "K8sTrafficRouting"
	K8sDryRun                  = "K8sDryRun"
	HelmDeploy                 = "HelmDeploy"
	HelmRollback               = "HelmRollback"
	HelmDelete                 = "HelmDelete"
	HelmBGDeploy               = "HelmBGDeploy"
	HelmBlueGreenSwapStep      = "HelmBlueGreenSwapStep"
	HelmCanaryDeploy           = "HelmCanaryDeploy"
	HelmCanaryDelete           = "HelmCanaryDelete"
)
