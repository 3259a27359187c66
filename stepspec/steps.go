package stepspec

import "gopkg.in/yaml.v3"

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

// EmailSpec sends a message through the notification SMTP server. The user groups are read
// as written (ToUserGroups, CcUserGroups) by validation and as rendered (ToGroups, CcGroups) by
// the notification family.
type EmailSpec struct {
	Node              *yaml.Node      `yaml:"-" json:"-"`
	To                string          `yaml:"to" json:"to"`
	Cc                string          `yaml:"cc" json:"cc"`
	ToUserGroups      *yaml.Node      `yaml:"toUserGroups" json:"-"`
	CcUserGroups      *yaml.Node      `yaml:"ccUserGroups" json:"-"`
	ToGroups          any             `yaml:"-" json:"toUserGroups"`
	CcGroups          any             `yaml:"-" json:"ccUserGroups"`
	Subject           string          `yaml:"subject" json:"subject" gantry:"required"`
	Body              string          `yaml:"body" json:"body"`
	FireAndForget     string          `yaml:"fireAndForget" json:"fireAndForget"`
	InputVariables    []NameTypeValue `yaml:"inputVariables" json:"-"`
	DelegateSelectors *yaml.Node      `yaml:"delegateSelectors" json:"-"`
}

// PolicySpec evaluates policy sets against a payload (spec 15.6). The sets are read as
// written (PolicySets) by validation and as rendered (Sets) by the Policy activity.
type PolicySpec struct {
	Node       *yaml.Node     `yaml:"-" json:"-"`
	PolicySets *yaml.Node     `yaml:"policySets" json:"-" gantry:"required"`
	Sets       []string       `yaml:"-" json:"policySets"`
	Type       string         `yaml:"type" json:"type" gantry:"required"`
	PolicySpec *PolicyPayload `yaml:"policySpec" json:"policySpec" gantry:"required"`
}

// PolicyPayload holds the payload: JSON text or a mapping, as written (Payload) and rendered
// (Rendered).
type PolicyPayload struct {
	Node     *yaml.Node `yaml:"-" json:"-"`
	Payload  *yaml.Node `yaml:"payload" json:"-" gantry:"required"`
	Rendered any        `yaml:"-" json:"payload"`
}
