package stepspec

import "gopkg.in/yaml.v3"

// The builtin steps' specs: workflow logic (Wait, the approvals, Barrier, Queue, Verify) reads
// them from the rendered spec as the front end decoded the YAML. A scalar the workflow reads
// is Text, as an expression may render it to a number or a boolean.

// WaitSpec pauses for a duration (spec 15.5).
type WaitSpec struct {
	Node     *yaml.Node `yaml:"-" json:"-"`
	Duration Text       `yaml:"duration" json:"duration" gantry:"required"`
}

// HarnessApprovalSpec waits for people to approve (spec 8.1).
type HarnessApprovalSpec struct {
	Node                            *yaml.Node      `yaml:"-" json:"-"`
	ApprovalMessage                 Text            `yaml:"approvalMessage" json:"approvalMessage" gantry:"required"`
	IncludePipelineExecutionHistory Text            `yaml:"includePipelineExecutionHistory" json:"includePipelineExecutionHistory" gantry:"required"`
	IsAutoRejectEnabled             Text            `yaml:"isAutoRejectEnabled" json:"-"`
	Approvers                       *Approvers      `yaml:"approvers" json:"approvers" gantry:"required"`
	ApproverInputs                  []ApproverInput `yaml:"approverInputs" json:"approverInputs"`
	AutoApproval                    *AutoApproval   `yaml:"autoApproval" json:"-"`
	CallbackID                      string          `yaml:"callbackId" json:"-"`
}

// Approvers says who may approve: members of the user groups, minimumCount of them.
type Approvers struct {
	Node                     *yaml.Node `yaml:"-" json:"-"`
	UserGroups               List       `yaml:"userGroups" json:"userGroups" gantry:"required"`
	MinimumCount             Text       `yaml:"minimumCount" json:"minimumCount" gantry:"required"`
	DisallowPipelineExecutor Text       `yaml:"disallowPipelineExecutor" json:"disallowPipelineExecutor" gantry:"required"`
}

// ApproverInput is a value approvers fill in.
type ApproverInput struct {
	Node         *yaml.Node `yaml:"-" json:"-"`
	Name         Text       `yaml:"name" json:"name" gantry:"required"`
	DefaultValue Text       `yaml:"defaultValue" json:"defaultValue"`
	Required     Text       `yaml:"required" json:"required"`
	// The choices are a list, or one string (the reference's schema types them so): values
	// separated by commas, or an expression that renders to them when the step starts.
	AllowedValues Choices `yaml:"allowedValues" json:"allowedValues"`
	SelectOneFrom Choices `yaml:"selectOneFrom" json:"selectOneFrom"`
	// SelectManyFrom takes a comma-separated selection of its values.
	SelectManyFrom Choices `yaml:"selectManyFrom" json:"selectManyFrom"`
	Regex          Text    `yaml:"regex" json:"regex"`
	Description    string  `yaml:"description" json:"-"`
}

// AutoApproval approves at a deadline (warned about: not acted on yet).
type AutoApproval struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	Action            string     `yaml:"action" json:"-" gantry:"required"`
	ScheduledDeadline *Deadline  `yaml:"scheduledDeadline" json:"-" gantry:"required"`
	Comments          string     `yaml:"comments" json:"-"`
}

// Deadline is a wall-clock time in a time zone.
type Deadline struct {
	Node     *yaml.Node `yaml:"-" json:"-"`
	TimeZone string     `yaml:"timeZone" json:"-" gantry:"required"`
	Time     string     `yaml:"time" json:"-" gantry:"required"`
}

// BarrierSpec waits for the other stages at a barrier (spec 7).
type BarrierSpec struct {
	Node       *yaml.Node `yaml:"-" json:"-"`
	BarrierRef string     `yaml:"barrierRef" json:"barrierRef" gantry:"required"`
}

// QueueSpec waits until the execution holds a key that other executions and pipelines queue
// on too, first come first served, and keeps it until its scope (the stage or the pipeline)
// ends.
type QueueSpec struct {
	Node  *yaml.Node `yaml:"-" json:"-"`
	Key   Text       `yaml:"key" json:"key" gantry:"required"`
	Scope Text       `yaml:"scope" json:"scope" gantry:"required"`
}

// VerifySpec judges a deployment by its metrics: for its duration it reads the monitored
// service's health sources for the new instances and a control, and fails when they regressed
// (docs/verification.md). The monitored service is resolved into the plan before the run.
type VerifySpec struct {
	Node             *yaml.Node       `yaml:"-" json:"-"`
	Type             Text             `yaml:"type" json:"type" gantry:"required"`
	Spec             *VerifyJob       `yaml:"spec" json:"spec" gantry:"required"`
	MonitoredService *VerifyMonitored `yaml:"monitoredService" json:"-"`
	// MonitoredServiceRef is how older pipelines named a Configured monitored service.
	MonitoredServiceRef    string     `yaml:"monitoredServiceRef" json:"-"`
	ConfigurableProperties *yaml.Node `yaml:"configurableProperties" json:"-"`
	IsMultiServicesOrEnvs  string     `yaml:"isMultiServicesOrEnvs" json:"-"`
}

// VerifyJob is how a Verify step analyses: for how long, how sensitively, and what happens
// when there is nothing to analyse.
type VerifyJob struct {
	Node                              *yaml.Node `yaml:"-" json:"-"`
	Duration                          Text       `yaml:"duration" json:"duration" gantry:"required"`
	Sensitivity                       Text       `yaml:"sensitivity" json:"sensitivity"`
	DeploymentTag                     Text       `yaml:"deploymentTag" json:"deploymentTag"`
	FailOnNoAnalysis                  Text       `yaml:"failOnNoAnalysis" json:"failOnNoAnalysis"`
	TrafficSplitPercentage            string     `yaml:"trafficSplitPercentage" json:"-"`
	Baseline                          string     `yaml:"baseline" json:"-"`
	SupportedDataTypesForVerification []string   `yaml:"supportedDataTypesForVerification" json:"-"`
}

// VerifyMonitored names the monitored service: Default (the one of the stage's service and
// environment), Configured (by identifier) or Template.
type VerifyMonitored struct {
	Node *yaml.Node           `yaml:"-" json:"-"`
	Type string               `yaml:"type" json:"-" gantry:"required"`
	Spec *VerifyMonitoredSpec `yaml:"spec" json:"-"`
}

// VerifyMonitoredSpec is the monitored service of a Configured or Template choice.
type VerifyMonitoredSpec struct {
	Node                        *yaml.Node `yaml:"-" json:"-"`
	MonitoredServiceRef         string     `yaml:"monitoredServiceRef" json:"-"`
	Branch                      string     `yaml:"branch" json:"-"`
	MonitoredServiceTemplateRef string     `yaml:"monitoredServiceTemplateRef" json:"-"`
	VersionLabel                string     `yaml:"versionLabel" json:"-"`
	Label                       string     `yaml:"label" json:"-"`
	TemplateInputs              *yaml.Node `yaml:"templateInputs" json:"-"`
}

// FetchInstanceScriptSpec runs a CustomDeployment infrastructure's fetch-instances script (the
// infrastructure names the script; the step names only where it runs).
type FetchInstanceScriptSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}

// JiraApprovalSpec waits until a Jira issue meets its approval criteria (or its rejection
// criteria), reading it every retryInterval.
type JiraApprovalSpec struct {
	Node              *yaml.Node `yaml:"-" json:"-"`
	ConnectorRef      string     `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	IssueKey          Text       `yaml:"issueKey" json:"issueKey" gantry:"required"`
	IssueType         string     `yaml:"issueType" json:"-"`
	ProjectKey        string     `yaml:"projectKey" json:"-"`
	ApprovalCriteria  *Criteria  `yaml:"approvalCriteria" json:"approvalCriteria" gantry:"required"`
	RejectionCriteria *Criteria  `yaml:"rejectionCriteria" json:"rejectionCriteria"`
	RetryInterval     Text       `yaml:"retryInterval" json:"retryInterval"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors" json:"-"`
}

// ServiceNowApprovalSpec waits until a ServiceNow ticket meets its approval criteria (or its
// rejection criteria), and, with a change window, until the window opens.
type ServiceNowApprovalSpec struct {
	Node              *yaml.Node    `yaml:"-" json:"-"`
	ConnectorRef      string        `yaml:"connectorRef" json:"connectorRef" gantry:"required"`
	TicketType        Text          `yaml:"ticketType" json:"ticketType" gantry:"required"`
	TicketNumber      Text          `yaml:"ticketNumber" json:"ticketNumber" gantry:"required"`
	ApprovalCriteria  *Criteria     `yaml:"approvalCriteria" json:"approvalCriteria" gantry:"required"`
	RejectionCriteria *Criteria     `yaml:"rejectionCriteria" json:"rejectionCriteria"`
	ChangeWindow      *ChangeWindow `yaml:"changeWindow" json:"changeWindow"`
	RetryInterval     Text          `yaml:"retryInterval" json:"retryInterval"`
	DelegateSelectors *yaml.Node    `yaml:"delegateSelectors" json:"-"`
}

// ChangeWindow names the ticket's fields that hold the window's start and end.
type ChangeWindow struct {
	Node       *yaml.Node `yaml:"-" json:"-"`
	StartField Text       `yaml:"startField" json:"startField" gantry:"required"`
	EndField   Text       `yaml:"endField" json:"endField" gantry:"required"`
}

// CustomApprovalSpec runs a script every retryInterval until its output variables meet the
// approval criteria (or the rejection criteria).
type CustomApprovalSpec struct {
	Node                 *yaml.Node      `yaml:"-" json:"-"`
	Shell                string          `yaml:"shell" json:"shell" gantry:"required"`
	Source               *ScriptSource   `yaml:"source" json:"source" gantry:"required"`
	EnvironmentVariables []NameTypeValue `yaml:"environmentVariables" json:"environmentVariables"`
	OutputVariables      []NameTypeValue `yaml:"outputVariables" json:"outputVariables"`
	RetryInterval        Text            `yaml:"retryInterval" json:"retryInterval" gantry:"required"`
	ScriptTimeout        Text            `yaml:"scriptTimeout" json:"scriptTimeout" gantry:"required"`
	ApprovalCriteria     *Criteria       `yaml:"approvalCriteria" json:"approvalCriteria" gantry:"required"`
	RejectionCriteria    *Criteria       `yaml:"rejectionCriteria" json:"rejectionCriteria"`
	OnDelegate           string          `yaml:"onDelegate" json:"-"`
	DelegateSelectors    *yaml.Node      `yaml:"delegateSelectors" json:"-"`
}

// Criteria decide an approval: a Jexl expression, or conditions on fields (all of them, or
// any with matchAnyCondition).
type Criteria struct {
	Node *yaml.Node    `yaml:"-" json:"-"`
	Type Text          `yaml:"type" json:"type" gantry:"required"`
	Spec *CriteriaSpec `yaml:"spec" json:"spec" gantry:"required"`
}

// CriteriaSpec is a Jexl criterion's expression or a KeyValues criterion's conditions.
type CriteriaSpec struct {
	Node              *yaml.Node  `yaml:"-" json:"-"`
	Expression        Text        `yaml:"expression" json:"expression"`
	Conditions        []Condition `yaml:"conditions" json:"conditions"`
	MatchAnyCondition Text        `yaml:"matchAnyCondition" json:"matchAnyCondition"`
}

// Condition compares a field with a value: equals, not equals, in, not in (a comma-separated
// list).
type Condition struct {
	Node     *yaml.Node `yaml:"-" json:"-"`
	Key      Text       `yaml:"key" json:"key" gantry:"required"`
	Operator Text       `yaml:"operator" json:"operator" gantry:"required"`
	Value    Text       `yaml:"value" json:"value" gantry:"required"`
}
