// Package pipeline is the YAML model of Harness-style pipelines (root `pipeline:`), input sets and
// overlay input sets, with a strict parser that keeps every node's position.
package pipeline

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/plan"
)

// Pipeline is the `pipeline:` root object (spec 1.1).
type Pipeline struct {
	Node                 *yaml.Node `yaml:"-"`
	Entity               `yaml:",inline"`
	Timeout              string             `yaml:"timeout"`
	AllowStageExecutions string             `yaml:"allowStageExecutions"`
	DelegateSelectors    *yaml.Node         `yaml:"delegateSelectors"`
	Properties           *yaml.Node         `yaml:"properties"`
	Variables            []Variable         `yaml:"variables"`
	FlowControl          *FlowControl       `yaml:"flowControl"`
	NotificationRules    []NotificationRule `yaml:"notificationRules"`
	Stages               []StageElement     `yaml:"stages" gantry:"required"`
	// Codebase is properties.ci.codebase, decoded with the pipeline (spec 22.3); nil without.
	Codebase *Codebase `yaml:"-"`
}

// FlowControl declares barriers (spec 7.1).
type FlowControl struct {
	Node     *yaml.Node `yaml:"-"`
	Barriers []Barrier  `yaml:"barriers"`
}

// Barrier is one declared barrier.
type Barrier struct {
	Node     *yaml.Node `yaml:"-"`
	Identity `yaml:",inline"`
}

// Variable is a pipeline, stage or step-group variable (spec 10.1).
type Variable struct {
	Node        *yaml.Node `yaml:"-"`
	Name        string     `yaml:"name" gantry:"required"`
	Type        string     `yaml:"type" gantry:"required"`
	Value       string     `yaml:"value"`
	Description string     `yaml:"description"`
	Required    string     `yaml:"required"`
	Default     string     `yaml:"default"`
}

// StageElement is one entry of `stages`: exactly one of stage or parallel (spec 1.2).
type StageElement struct {
	Node     *yaml.Node     `yaml:"-"`
	Stage    *Stage         `yaml:"stage"`
	Parallel []StageElement `yaml:"parallel"`
}

// Stage is a stage (spec 1.3). When, Strategy and FailureStrategies stay raw because each may
// also be a runtime input; Spec is decoded by stage type.
type Stage struct {
	Node              *yaml.Node `yaml:"-"`
	Identity          `yaml:",inline"`
	Description       string            `yaml:"description"`
	Type              string            `yaml:"type" gantry:"required"`
	Tags              map[string]string `yaml:"tags"`
	Timeout           string            `yaml:"timeout"`
	DelegateSelectors *yaml.Node        `yaml:"delegateSelectors"`
	Variables         []Variable        `yaml:"variables"`
	When              *yaml.Node        `yaml:"when"`
	Strategy          *yaml.Node        `yaml:"strategy"`
	FailureStrategies *yaml.Node        `yaml:"failureStrategies"`
	SkipCondition     string            `yaml:"skipCondition"`
	Spec              *yaml.Node        `yaml:"spec" gantry:"required"`

	// Decoded from Spec by Parse, by type (stagespec.go): the one of these that matches Type.
	Deployment *DeploymentStageSpec `yaml:"-"`
	CI         *CIStageSpec         `yaml:"-"`
	Custom     *CustomStageSpec     `yaml:"-"`
	Approval   *ApprovalStageSpec   `yaml:"-"`
	Chain      *ChainSpec           `yaml:"-"`
}

// CIInfrastructure is where a CI stage's steps run (spec 22.1): `KubernetesDirect` with the
// pod's settings, or `UseFromStage` naming an earlier CI stage whose infrastructure it reuses.
type CIInfrastructure struct {
	Node         *yaml.Node `yaml:"-"`
	Type         string     `yaml:"type"`
	Spec         *PodInfra  `yaml:"spec"`
	UseFromStage string     `yaml:"useFromStage"`
}

// Kind is the infrastructure's type; `{useFromStage: S}` alone is UseFromStage, as the
// reference's schema has it (its type is optional).
func (i *CIInfrastructure) Kind() string {
	if i.Type == "" && i.UseFromStage != "" {
		return "UseFromStage"
	}
	return i.Type
}

// DependencyElement is a CI stage's service dependency (spec 22.1): a container started before
// the first step and kept running to the end of the stage, as a Background step.
type DependencyElement struct {
	Node        *yaml.Node      `yaml:"-"`
	Identifier  string          `yaml:"identifier" gantry:"required"`
	Name        string          `yaml:"name"`
	Type        string          `yaml:"type" gantry:"required"`
	Description string          `yaml:"description"`
	Spec        *DependencySpec `yaml:"spec"`
}

// DependencySpec is the container of a service dependency.
type DependencySpec struct {
	Node            *yaml.Node          `yaml:"-"`
	Image           string              `yaml:"image"`
	ConnectorRef    string              `yaml:"connectorRef"`
	EnvVariables    map[string]string   `yaml:"envVariables"`
	Entrypoint      []string            `yaml:"entrypoint"`
	Args            []string            `yaml:"args"`
	Privileged      string              `yaml:"privileged"`
	ImagePullPolicy string              `yaml:"imagePullPolicy"`
	RunAsUser       string              `yaml:"runAsUser"`
	PortBindings    map[string]string   `yaml:"portBindings"`
	Resources       *ContainerResources `yaml:"resources"`
	Description     string              `yaml:"description"`
}

// Properties are a pipeline's module properties; Gantry reads the CI codebase (spec 22.3).
type Properties struct {
	Node *yaml.Node    `yaml:"-"`
	CI   *CIProperties `yaml:"ci"`
}

// CIProperties hold the pipeline's codebase.
type CIProperties struct {
	Node     *yaml.Node `yaml:"-"`
	Codebase *Codebase  `yaml:"codebase"`
}

// Codebase is the repository CI stages with cloneCodebase clone into /harness (spec 22.3).
// Build is a mapping ({type, spec}) or a runtime input that a run fills.
type Codebase struct {
	Node *yaml.Node `yaml:"-"`
	// ConnectorRef is the Git connector; without it, RepoName is a repository of the
	// vendor's own Git hosting, which Gantry does not reach (validate says so).
	ConnectorRef    string     `yaml:"connectorRef"`
	RepoName        string     `yaml:"repoName"`
	Build           *yaml.Node `yaml:"build" gantry:"required"`
	Depth           string     `yaml:"depth"`
	SslVerify       string     `yaml:"sslVerify"`
	PrCloneStrategy string     `yaml:"prCloneStrategy"`
	Resources       *yaml.Node `yaml:"resources"`
}

// CodebaseBuild is what a codebase clone checks out: `type: branch | tag | PR | commitSha`.
type CodebaseBuild = Typed[CodebaseBuildSpec]

// CodebaseBuildSpec holds the branch, tag, pull request number or commit.
type CodebaseBuildSpec struct {
	Node      *yaml.Node `yaml:"-"`
	Branch    string     `yaml:"branch"`
	Tag       string     `yaml:"tag"`
	Number    string     `yaml:"number"`
	CommitSha string     `yaml:"commitSha"`
}

// Execution is a stage's execution section (spec 1.4).
type Execution struct {
	Node          *yaml.Node    `yaml:"-"`
	Steps         []StepElement `yaml:"steps" gantry:"required"`
	RollbackSteps []StepElement `yaml:"rollbackSteps"`
}

// StepElement is one entry of a steps list: exactly one of step, stepGroup or parallel.
type StepElement struct {
	Node      *yaml.Node    `yaml:"-"`
	Step      *Step         `yaml:"step"`
	StepGroup *StepGroup    `yaml:"stepGroup"`
	Parallel  []StepElement `yaml:"parallel"`
}

// Step is a step (spec 1.5). Spec is decoded by the step-type catalog.
type Step struct {
	Node              *yaml.Node `yaml:"-"`
	Identity          `yaml:",inline"`
	Type              string     `yaml:"type" gantry:"required"`
	Description       string     `yaml:"description"`
	Timeout           string     `yaml:"timeout"`
	DelegateSelectors *yaml.Node `yaml:"delegateSelectors"`
	When              *yaml.Node `yaml:"when"`
	FailureStrategies *yaml.Node `yaml:"failureStrategies"`
	Strategy          *yaml.Node `yaml:"strategy"`
	Enforce           *Enforce   `yaml:"enforce"`
	Spec              *yaml.Node `yaml:"spec"`
}

// Enforce lists policy sets evaluated before the step starts.
type Enforce struct {
	Node       *yaml.Node `yaml:"-"`
	PolicySets []string   `yaml:"policySets"`
}

// StepGroup is a step group (spec 1.6).
type StepGroup struct {
	Node              *yaml.Node `yaml:"-"`
	Identity          `yaml:",inline"`
	Description       string          `yaml:"description"`
	When              *yaml.Node      `yaml:"when"`
	FailureStrategies *yaml.Node      `yaml:"failureStrategies"`
	Variables         []Variable      `yaml:"variables"`
	DelegateSelectors *yaml.Node      `yaml:"delegateSelectors"`
	Strategy          *yaml.Node      `yaml:"strategy"`
	StepGroupInfra    *StepGroupInfra `yaml:"stepGroupInfra"`
	SharedPaths       *yaml.Node      `yaml:"sharedPaths"`
	Steps             []StepElement   `yaml:"steps" gantry:"required"`
	RollbackSteps     []StepElement   `yaml:"rollbackSteps"`
	// Provisioner marks the group a Deployment stage's environment provisioner became.
	Provisioner bool `yaml:"-"`
}

// StageWhen is a stage's `when` (spec 4.1).
type StageWhen struct {
	Node           *yaml.Node `yaml:"-"`
	PipelineStatus string     `yaml:"pipelineStatus" gantry:"required"`
	Condition      string     `yaml:"condition"`
}

// StepWhen is a step's or step group's `when` (spec 4.1).
type StepWhen struct {
	Node        *yaml.Node `yaml:"-"`
	StageStatus string     `yaml:"stageStatus" gantry:"required"`
	Condition   string     `yaml:"condition"`
}

// FailureStrategy is one entry of `failureStrategies` (spec 5.1).
type FailureStrategy struct {
	Node      *yaml.Node `yaml:"-"`
	OnFailure *OnFailure `yaml:"onFailure" gantry:"required"`
}

// OnFailure maps error categories to an action.
type OnFailure struct {
	Node   *yaml.Node `yaml:"-"`
	Errors []string   `yaml:"errors" gantry:"required"`
	Action *Action    `yaml:"action" gantry:"required"`
}

// Action is a failure-strategy action; Spec is decoded by action type.
type Action struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"`
	Spec *yaml.Node `yaml:"spec"`
}

// ActionHolder wraps a nested action (`onRetryFailure`, `onTimeout`).
type ActionHolder struct {
	Node   *yaml.Node `yaml:"-"`
	Action *Action    `yaml:"action" gantry:"required"`
}

// RetrySpec is the spec of Retry and RetryStepGroup.
type RetrySpec struct {
	Node           *yaml.Node    `yaml:"-"`
	RetryCount     string        `yaml:"retryCount" gantry:"required"`
	RetryIntervals *yaml.Node    `yaml:"retryIntervals" gantry:"required"`
	OnRetryFailure *ActionHolder `yaml:"onRetryFailure"`
}

// ManualInterventionSpec is the spec of ManualIntervention.
type ManualInterventionSpec struct {
	Node      *yaml.Node    `yaml:"-"`
	Timeout   string        `yaml:"timeout" gantry:"required"`
	OnTimeout *ActionHolder `yaml:"onTimeout" gantry:"required"`
}

// PipelineRollbackSpec is the spec of PipelineRollback.
type PipelineRollbackSpec struct {
	Node    *yaml.Node `yaml:"-"`
	FailAll string     `yaml:"failAll"`
}

// Strategy is a looping strategy (spec 6.1). Matrix stays raw: its axes are free keys.
type Strategy struct {
	Node           *yaml.Node `yaml:"-"`
	Matrix         *yaml.Node `yaml:"matrix"`
	Repeat         *Repeat    `yaml:"repeat"`
	Parallelism    string     `yaml:"parallelism"`
	MaxConcurrency string     `yaml:"maxConcurrency"`
	When           string     `yaml:"when"`
	OnFailure      string     `yaml:"onFailure"`
}

// Repeat is the repeat strategy (spec 6.3).
type Repeat struct {
	Node           *yaml.Node `yaml:"-"`
	Times          string     `yaml:"times"`
	Items          *yaml.Node `yaml:"items"`
	MaxConcurrency string     `yaml:"maxConcurrency"`
	Start          string     `yaml:"start"`
	End            string     `yaml:"end"`
	Unit           string     `yaml:"unit"`
	PartitionSize  string     `yaml:"partitionSize"`
	NodeName       string     `yaml:"nodeName"`
}

// LocalRef is the identifier an entity reference names (see plan.LocalRef).
func LocalRef(ref string) string { return plan.LocalRef(ref) }
