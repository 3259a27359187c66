// Package plan is the immutable, JSON-serialisable form of a validated, input-merged pipeline.
// It is the pipeline workflow's input, so every run is frozen in its history. It holds data
// only: expressions stay as source text and are rendered by the workflow when a node starts.
package plan

// Version is bumped when the plan's shape changes incompatibly.
const Version = 1

// Plan is one pipeline ready to run.
type Plan struct {
	Version     int               `json:"version"`
	File        string            `json:"file,omitempty"`
	Identifier  string            `json:"identifier"`
	Name        string            `json:"name"`
	Org         string            `json:"org,omitempty"`
	Project     string            `json:"project,omitempty"`
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Timeout     string            `json:"timeout,omitempty"`
	Variables   []Variable        `json:"variables,omitempty"`
	Stages      []*Node           `json:"stages"` // KindStage or KindParallel
	// Policy is the on-run policy decision taken before the run started (spec 15.6).
	Policy *PolicyRecord `json:"policy,omitempty"`
	// Template is the pipeline template the pipeline was expanded from (spec 19.8).
	Template *TemplateRef `json:"template,omitempty"`
	// Notifications are the pipeline's enabled notification rules (spec 20).
	Notifications []NotificationRule `json:"notifications,omitempty"`
	// Codebase is the repository the pipeline's CI stages build (spec 22.3).
	Codebase *Codebase `json:"codebase,omitempty"`
	// Secrets are the secrets the pipeline's entity files keep in a secret manager connector,
	// by identifier; the others resolve through the worker's default store.
	Secrets map[string]SecretRoute `json:"secrets,omitempty"`
	// Sources are the files the run was read from Git, each at the commit read; empty for a
	// pipeline from a local file or inline YAML.
	Sources []Source `json:"sources,omitempty"`
}

// Source is one file of a remote entity (the reference's Git Experience) as a run read it.
type Source struct {
	Kind       string `json:"kind"` // pipeline, inputSet, template, service, environment, infrastructure, connector, policy
	Identifier string `json:"identifier"`
	Connector  string `json:"connectorRef"`
	Repo       string `json:"repoName,omitempty"`
	URL        string `json:"repoUrl"` // without credentials
	FilePath   string `json:"filePath"`
	Branch     string `json:"branch,omitempty"`
	Commit     string `json:"commitId"`
}

// Remote is the pipeline's own source when it was read from Git (nil: a local file or
// inline YAML).
func (p *Plan) Remote() *Source {
	for i := range p.Sources {
		if p.Sources[i].Kind == "pipeline" {
			return &p.Sources[i]
		}
	}
	return nil
}

// Codebase is the pipeline's CI codebase as `<+codebase.*>` shows it; the build's values may
// be expressions, rendered when the pipeline starts.
type Codebase struct {
	RepoURL   string `json:"repoUrl,omitempty"`
	BuildType string `json:"buildType,omitempty"` // branch, tag, PR or commitSha
	Branch    string `json:"branch,omitempty"`
	Tag       string `json:"tag,omitempty"`
	PRNumber  string `json:"prNumber,omitempty"`
	CommitSha string `json:"commitSha,omitempty"`
	// Status is where CI stages report their commit's status: the codebase's repository, when
	// its connector has API access (nil: nowhere).
	Status *GitStore `json:"status,omitempty"`
}

// PolicyRecord is an on-run policy decision as recorded with an execution.
type PolicyRecord struct {
	Status   string            `json:"status"` // pass or warning (a deny never starts)
	Messages []string          `json:"messages,omitempty"`
	Sets     []PolicySetRecord `json:"sets"`
}

// PolicySetRecord is one evaluated policy set.
type PolicySetRecord struct {
	Set      string `json:"set"`
	Severity string `json:"severity"`
	Status   string `json:"status"`
	Micros   int64  `json:"micros"` // evaluation time
}

// Kind is a node's kind.
type Kind string

// Node kinds.
const (
	KindStage    Kind = "stage"
	KindParallel Kind = "parallel"
	KindGroup    Kind = "group"
	KindStep     Kind = "step"
)

// Variable is a pipeline, stage or step-group variable. Value may hold expressions.
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Node is a stage, a parallel block, a step group or a step.
type Node struct {
	Kind        Kind              `json:"kind"`
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name,omitempty"`
	Type        string            `json:"type,omitempty"` // stage type or step type
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	// Timeout is a duration or an expression rendered when the node starts; "" means the default.
	Timeout string `json:"timeout,omitempty"`
	// When is the node's condition compiled per spec 4.2 (condition-mode JEXL); parallel blocks
	// have none.
	When      string     `json:"when,omitempty"`
	Variables []Variable `json:"variables,omitempty"`
	// Spec is a step's spec as a value tree (maps, lists, strings); expressions inside are
	// rendered just before the step runs.
	Spec any `json:"spec,omitempty"`
	// Unresolved is how unresolved expressions in Spec render: "null", "verbatim" or "fail".
	Unresolved string `json:"unresolved,omitempty"`
	// Children are a stage's execution steps, a group's steps or a parallel block's members.
	Children []*Node `json:"children,omitempty"`
	// Rollback are a stage's or group's rollback steps.
	Rollback []*Node `json:"rollback,omitempty"`
	// Strategy is the node's looping strategy (spec 6), expanded when the node starts.
	Strategy *Strategy `json:"strategy,omitempty"`
	// Postfix is set on an expanded iteration: its identifier is the base identifier + Postfix.
	Postfix string `json:"postfix,omitempty"`
	// Inputs are the step's execution-time inputs (spec 9.6): asked for when the step starts.
	Inputs []ExecInput `json:"inputs,omitempty"`
	// OnFailure is a step's effective failure strategy (spec 5.4): error category → action,
	// with stage, step-group and step levels already overlaid.
	OnFailure map[string]*Action `json:"onFailure,omitempty"`
	// Template is the template this node was expanded from (spec 19.8).
	Template *TemplateRef `json:"template,omitempty"`
	// Selectors are a step's effective delegate selectors (spec 1.9): its activities run only on
	// workers started with all of these tags.
	Selectors []string `json:"selectors,omitempty"`
	// Deploy is a Deployment stage's service, environment and infrastructure.
	Deploy *Deployment `json:"deploy,omitempty"`
	// Deploys are the deployments of a multi-service or multi-environment stage's iterations,
	// by DeployKey of their matrix values (spec 21.2).
	Deploys map[string]*Deployment `json:"deploys,omitempty"`
	// Pod is a containerized step group's pod (spec: stepGroupInfra).
	Pod *Pod `json:"pod,omitempty"`
	// Traits are what the engine needs to know of a step's type to run it, copied from the
	// step catalog, so that workflows read the node and never compare type names.
	Traits *Traits `json:"traits,omitempty"`
	// Provisioner marks the step group that is a Deployment stage's environment provisioner:
	// it runs before the infrastructure is rendered, and its rollback steps run when the
	// stage rolls back.
	Provisioner bool `json:"provisioner,omitempty"`
	// Refs are what a step's spec names outside the pipeline, resolved before the run (the
	// Terraform steps' stores and provisioner scope).
	Refs *StepRefs `json:"refs,omitempty"`
	// Chain is what the step of a `type: Pipeline` stage runs: another pipeline.
	Chain *Chain `json:"chain,omitempty"`
}

// StepRefs are a step's references resolved before the run: the Git connectors its spec's
// stores name (by connectorRef), the SSH credential of its target host, and the project its
// provisioner identifiers are scoped to.
type StepRefs struct {
	Project string                  `json:"project,omitempty"` // org/project
	Git     map[string]GitConnector `json:"git,omitempty"`
	// SSH are the SSH credentials a ShellScript's executionTarget names, by connectorRef.
	SSH map[string]SSHCredential `json:"ssh,omitempty"`
	// Monitored is the monitored service a Verify step names (type Configured).
	Monitored *MonitoredService `json:"monitored,omitempty"`
	// Ticket is the Jira or ServiceNow connector a ticket step names.
	Ticket *TicketConnector `json:"ticket,omitempty"`
}

// Traits are the facts about a step type that decide how a step runs.
type Traits struct {
	// Activity is the activity that runs the step; "" when workflow code runs it (Builtin).
	Activity string `json:"activity,omitempty"`
	// Builtin names the workflow logic that runs the step: "wait", "approval", "barrier",
	// "queue", "verify", "ticketApproval" or "customApproval".
	Builtin string `json:"builtin,omitempty"`
	// Deployment says the activity receives the stage's service, environment and
	// infrastructure.
	Deployment bool `json:"deployment,omitempty"`
	// Container says where in a pod the step runs: ContainerOwn (a container of its own) or
	// ContainerHelper (the pod's gantry helper container); "" outside any pod.
	Container string `json:"container,omitempty"`
	// OwnPod says the step brings its own pod (its infrastructure) instead of its group's.
	OwnPod bool `json:"ownPod,omitempty"`
	// Heartbeat says the activity heartbeats, so that a lost worker is noticed before the
	// step's timeout.
	Heartbeat bool `json:"heartbeat,omitempty"`
	// FastPath says the step may run as a local activity on the stage's worker.
	FastPath bool `json:"fastPath,omitempty"`
	// Deferred are the spec fields rendered after the activity returned, from its outputs
	// (paths as ".field" and ".list[].field").
	Deferred []string `json:"deferred,omitempty"`
	// Outcome names the workflow logic that turns the activity's outputs into the step's
	// outcome: "http" (assertion and output variables), "codebase" (the commit a clone
	// checked out), "artifact" (the images a build pushed, as the step's artifact_<id>).
	Outcome string `json:"outcome,omitempty"`
}

// Where a container step runs in its pod.
const (
	ContainerOwn    = "own"
	ContainerHelper = "helper"
)

// Strategy is a looping strategy. Exactly one of Axes, Times/Items or Parallelism is set.
// Numeric fields stay text: they may be expressions rendered when the loop starts.
type Strategy struct {
	// Axes are the matrix axes in expansion order (literal axes, then expression axes, spec
	// 6.2.1); Values is a list or an expression that renders to one.
	Axes     []Axis `json:"axes,omitempty"`
	Exclude  any    `json:"exclude,omitempty"`
	NodeName string `json:"nodeName,omitempty"`

	Times         string `json:"times,omitempty"`
	Items         any    `json:"items,omitempty"`
	Start         string `json:"start,omitempty"`
	End           string `json:"end,omitempty"`
	Unit          string `json:"unit,omitempty"`
	PartitionSize string `json:"partitionSize,omitempty"`

	Parallelism string `json:"parallelism,omitempty"`

	// ItemsAsMatrix makes each repeat item (a map) the iteration's matrix values: the implicit
	// loop of a multi-service or multi-environment Deployment stage (spec 21.3), postfixed by
	// index, with <+matrix.serviceRef>, <+matrix.environmentRef> and <+matrix.identifier>.
	ItemsAsMatrix bool `json:"itemsAsMatrix,omitempty"`

	MaxConcurrency string `json:"maxConcurrency,omitempty"`
	When           string `json:"when,omitempty"`      // strategy.when, evaluated before expansion
	OnFailure      string `json:"onFailure,omitempty"` // RunAll (default) or SkipQueued
}

// Axis is one matrix axis.
type Axis struct {
	Key    string `json:"key"`
	Values any    `json:"values"`
}

// ExecInput is one `<+input>.executionInput()` field of a step spec.
type ExecInput struct {
	// Key names the field below the step, as users supply it: spec.environmentVariables.WHO.
	Key string `json:"key"`
	// At locates the field in the spec tree: map keys and list indexes (as strings).
	At            []string `json:"at"`
	Default       *string  `json:"default,omitempty"`
	AllowedValues []string `json:"allowedValues,omitempty"`
	Regex         string   `json:"regex,omitempty"`
}

// Action is a failure-strategy action (spec 5.3).
type Action struct {
	Type           string   `json:"type"`
	RetryCount     int      `json:"retryCount,omitempty"`
	RetryIntervals []string `json:"retryIntervals,omitempty"` // durations
	OnRetryFailure *Action  `json:"onRetryFailure,omitempty"`
	Timeout        string   `json:"timeout,omitempty"` // ManualIntervention
	OnTimeout      *Action  `json:"onTimeout,omitempty"`
	FailAll        bool     `json:"failAll,omitempty"`
	// Group is the step group whose list declared the action (RetryStepGroup and
	// StepGroupRollback act on it).
	Group string `json:"group,omitempty"`
}

// Categories are the error categories in the canonical dispatch order of spec 5.5.
var Categories = []string{
	"Unknown", "Authentication", "Connectivity", "Timeout", "Authorization", "Verification",
	"DelegateProvisioning", "PolicyEvaluationFailure", "InputTimeoutError", "ApprovalRejection",
	"DelegateRestart", "UserMarkedFailure",
}

// Walk calls fn for every node below nodes, depth first, with the node's identifier path.
func Walk(nodes []*Node, path []string, fn func(n *Node, path []string)) {
	for _, n := range nodes {
		p := path
		if n.ID != "" {
			p = append(append([]string(nil), path...), n.ID)
		}
		fn(n, p)
		Walk(n.Children, p, fn)
		Walk(n.Rollback, p, fn)
	}
}

// TemplateRef names the template and the version a node was expanded from: the version is the
// one resolved, also when the link relied on the stable version.
type TemplateRef struct {
	Ref     string `json:"ref"`
	Version string `json:"version"`
}

// DeployKey names the deployment of one iteration of a multi-deployment stage by its matrix
// values (service, environment, infrastructure; absent dimensions are empty).
func DeployKey(matrix map[string]any) string {
	str := func(k string) string { s, _ := matrix[k].(string); return s }
	return str("serviceRef") + "|" + str("environmentRef") + "|" + str("identifier")
}
