package stepspec

// The step types of any stage: scripts, calls, waits, decisions, notices and policies. The
// builtin ones (Wait, the approvals, Barrier, Queue, Verify) are workflow logic; the others run
// in the activity of their name.
const (
	ShellScript        = "ShellScript"
	Http               = "Http"
	Wait               = "Wait"
	HarnessApproval    = "HarnessApproval"
	Barrier            = "Barrier"
	Queue              = "Queue"
	Verify             = "Verify"
	JiraApproval       = "JiraApproval"
	ServiceNowApproval = "ServiceNowApproval"
	CustomApproval     = "CustomApproval"
	Email              = "Email"
	Policy             = "Policy"
)

// The steps that run on a deployment's hosts: a command over SSH or WinRM, and a custom
// deployment's script that lists its instances.
const (
	Command             = "Command"
	FetchInstanceScript = "FetchInstanceScript"
)
