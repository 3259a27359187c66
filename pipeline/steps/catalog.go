// Package steps is the catalog of step types the engine knows: for each type, one entry holds
// its spec shape (decoded strictly, so that a misspelt spec key is an error before a run, not a
// silent no-op), its checks, the activity that runs it and the traits that decide how a step
// of that type runs. compile copies the traits onto the plan; nothing else compares type names.
package steps

import (
	"maps"
	"slices"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// Entry describes one step type.
type Entry struct {
	Type string
	// New returns a pointer to an empty spec value for the strict decoder: the spec's type,
	// from stepspec when its family reads it as the same type. A spec type of this package
	// that implements Checked checks its own values; Check checks a stepspec type's.
	New   func() any
	Check func(spec any, c Checker)
	// Unresolved says how unresolved expressions in the spec render (spec 9.9): "null"
	// (the default), "verbatim" or "fail".
	Unresolved string
	// Deploys is the deployment type of the stages the step runs in ("Kubernetes", "ECS",
	// "AwsLambda"); "" for a step of any stage.
	Deploys string
	// DeploymentStage says the step runs only in Deployment stages (all that Deploy do).
	DeploymentStage bool
	// Connector is the kind of connector the spec's connectorRef names ("Git",
	// "DockerRegistry"), resolved before the run; "" when the spec has none.
	Connector string
	// Typed are the spec fields (paths of keys) whose mappings and lists keep their YAML
	// types in the plan; all other values are strings until rendered.
	Typed [][]string
	// DefaultImage says the step runs an image of its own, for which a build infrastructure's
	// default image stands in when the spec names none.
	DefaultImage bool
	// OnMachine is how a build machine runs the step ("": it does not): OnMachineCommand,
	// OnMachineClone or OnMachineBuild.
	OnMachine string
	// Stores says the spec holds stores (`store: {type, spec: {connectorRef}}`) at any depth:
	// their Git connectors are resolved before the run into the node's Refs.
	Stores bool
	// SSHTarget says the spec may name a target host's SSH credential
	// (executionTarget.connectorRef, with onDelegate: false), resolved before the run.
	SSHTarget bool
	// Monitored says the step reads a monitored service, resolved before the run (a named
	// one into the node's Refs, the stage's own onto its deployment).
	Monitored bool
	// Ticketing is the kind of ticket system connector the spec's connectorRef names ("Jira",
	// "ServiceNow"), resolved before the run into the node's Refs.
	Ticketing string
	// NoDotInName says the step's name may not contain '.'.
	NoDotInName bool
	// OutsideDeployment says the reference also runs the type outside Deployment stages (a
	// Command step on a named host), which Gantry does not yet: unsupported there, not broken.
	OutsideDeployment bool
	// ValidateOnly types are checked but not run yet: a run with one is refused.
	ValidateOnly bool
	// Traits decide how a step of this type runs; compile copies them onto its plan node.
	Traits plan.Traits
}

// The traits the step families share.
var (
	kubernetes = plan.Traits{Activity: contract.Kubernetes, Deployment: true, Heartbeat: true}
	ecs        = plan.Traits{Activity: contract.Ecs, Deployment: true, Heartbeat: true}
	asg        = plan.Traits{Activity: contract.Asg, Deployment: true, Heartbeat: true}
	lambda     = plan.Traits{Activity: contract.AwsLambda, Deployment: true, Heartbeat: true}
	container  = plan.Traits{Activity: contract.ContainerStep, Container: plan.ContainerOwn, Heartbeat: true}
	helper     = plan.Traits{Activity: contract.ContainerStep, Container: plan.ContainerHelper, Heartbeat: true}
	terraform  = plan.Traits{Activity: contract.Terraform, Heartbeat: true}
	// A ticket step's outputs are its issue or ticket (<+execution.steps.S.issue.key>).
	ticket         = plan.Traits{Activity: contract.Ticket, Outcome: "ticket"}
	ticketApproval = plan.Traits{Builtin: "ticketApproval"}
)

// entries are the step types, one entry each. Adding a step type adds its entry here and its
// activity (docs/contributing.md).
var entries = []Entry{
	{Type: stepspec.ShellScript, New: func() any { return &ShellScript{} }, Check: checks(checkShellScript), NoDotInName: true, SSHTarget: true,
		Traits: plan.Traits{Activity: contract.ShellScript, Heartbeat: true, FastPath: true}},
	{Type: stepspec.Http, New: func() any { return &stepspec.HttpSpec{} }, Check: checks(checkHttp), Unresolved: "verbatim",
		Traits: plan.Traits{Activity: contract.Http, FastPath: true, Outcome: "http",
			Deferred: []string{".assertion", ".outputVariables[].value"}}},
	{Type: stepspec.Wait, New: func() any { return &Wait{} }, Check: checks(checkWait), Traits: plan.Traits{Builtin: "wait"}},
	{Type: stepspec.HarnessApproval, New: func() any { return &HarnessApproval{} }, Check: checks(checkHarnessApproval), Traits: plan.Traits{Builtin: "approval"}},
	{Type: stepspec.Barrier, New: func() any { return &Barrier{} }, Traits: plan.Traits{Builtin: "barrier"}},
	{Type: stepspec.Queue, New: func() any { return &Queue{} }, Check: checks(checkQueue), Traits: plan.Traits{Builtin: "queue"}},
	{Type: stepspec.Verify, New: func() any { return &Verify{} }, Check: checks(checkVerify), DeploymentStage: true, Monitored: true, Traits: plan.Traits{Builtin: "verify"}},
	// An approval's Jexl criteria keep <+issue...>, <+ticket...> and <+output...> as written:
	// they are evaluated against the ticket (or the script's outputs) each time it is read.
	{Type: stepspec.JiraCreate, New: func() any { return &JiraCreate{} }, Check: checks(checkJiraCreate), Ticketing: "Jira", Traits: ticket},
	{Type: stepspec.JiraUpdate, New: func() any { return &JiraUpdate{} }, Check: checks(checkJiraUpdate), Ticketing: "Jira", Traits: ticket},
	{Type: stepspec.JiraApproval, New: func() any { return &JiraApproval{} }, Check: checks(checkJiraApproval), Ticketing: "Jira", Unresolved: "verbatim", Traits: ticketApproval},
	{Type: stepspec.ServiceNowCreate, New: func() any { return &ServiceNowCreate{} }, Check: checks(checkServiceNowCreate), Ticketing: "ServiceNow", Traits: ticket},
	{Type: stepspec.ServiceNowUpdate, New: func() any { return &ServiceNowUpdate{} }, Check: checks(checkServiceNowUpdate), Ticketing: "ServiceNow", Traits: ticket},
	{Type: stepspec.ServiceNowImportSet, New: func() any { return &ServiceNowImportSet{} }, Check: checks(checkServiceNowImportSet), Ticketing: "ServiceNow", Traits: ticket},
	{Type: stepspec.ServiceNowApproval, New: func() any { return &ServiceNowApproval{} }, Check: checks(checkServiceNowApproval), Ticketing: "ServiceNow", Unresolved: "verbatim", Traits: ticketApproval},
	{Type: stepspec.CustomApproval, New: func() any { return &CustomApproval{} }, Check: checks(checkCustomApproval), Unresolved: "verbatim", Traits: plan.Traits{Builtin: "customApproval"}},
	{Type: stepspec.Email, New: func() any { return &Email{} }, Check: checks(checkEmail), Traits: plan.Traits{Activity: contract.EmailStep}},
	{Type: stepspec.Policy, New: func() any { return &Policy{} }, Check: checks(checkPolicy), Unresolved: "fail", Typed: [][]string{{"policySpec", "payload"}},
		Traits: plan.Traits{Activity: contract.Policy}},

	{Type: stepspec.TerraformPlan, New: func() any { return &TerraformPlan{} }, Check: checks(checkTerraformPlan), Stores: true, Traits: terraform},
	{Type: stepspec.TerraformApply, New: func() any { return &TerraformApply{} }, Check: checks(checkTerraformApply), Stores: true, Traits: terraform},
	{Type: stepspec.TerraformDestroy, New: func() any { return &TerraformApply{} }, Check: checks(checkTerraformDestroy), Stores: true, Traits: terraform},
	{Type: stepspec.TerraformRollback, New: func() any { return &TerraformRollback{} }, Check: checks(checkTerraformRollback), Stores: true, Traits: terraform},

	{Type: stepspec.Container, New: func() any { return &Container{} }, Check: checks(checkContainer), Connector: "DockerRegistry", Traits: withOwnPod(container)},
	{Type: stepspec.Run, New: func() any { return &Run{} }, Check: checks(checkRun), Connector: "DockerRegistry", DefaultImage: true, OnMachine: OnMachineCommand, Traits: container},
	{Type: stepspec.Background, New: func() any { return &Background{} }, Check: checks(checkBackground), Connector: "DockerRegistry", DefaultImage: true, OnMachine: OnMachineCommand, Traits: container},
	{Type: stepspec.Plugin, New: func() any { return &Plugin{} }, Check: checks(checkPlugin), Connector: "DockerRegistry", DefaultImage: true, Traits: container},
	{Type: stepspec.RunTests, New: func() any { return &RunTests{} }, Check: checks(checkRunTests), Connector: "DockerRegistry", DefaultImage: true, OnMachine: OnMachineCommand, Traits: container},
	{Type: stepspec.BuildAndPushDockerRegistry, New: func() any { return &BuildAndPush{} }, Check: checks(checkBuildAndPush), Connector: "DockerRegistry", OnMachine: OnMachineBuild, Traits: withOutcome(container, "artifact")},
	{Type: stepspec.BuildAndPushECR, New: func() any { return &BuildAndPushECR{} }, Check: checks(checkBuildAndPushECR), Connector: "Aws", OnMachine: OnMachineBuild, Traits: withOutcome(container, "artifact")},
	{Type: stepspec.GitClone, New: func() any { return &GitClone{} }, Check: checks(checkGitClone), Connector: "Git", OnMachine: OnMachineClone, Traits: helper},
	{Type: stepspec.SaveCacheS3, New: func() any { return &SaveCacheS3{} }, Check: checks(checkSaveCacheS3), Connector: "Aws", Traits: helper},
	{Type: stepspec.RestoreCacheS3, New: func() any { return &RestoreCacheS3{} }, Check: checks(checkRestoreCacheS3), Connector: "Aws", Traits: helper},
	{Type: stepspec.S3Upload, New: func() any { return &S3Upload{} }, Check: checks(checkS3Upload), Connector: "Aws", Traits: helper},
	{Type: stepspec.DownloadManifests, New: func() any { return &DownloadManifests{} }, DeploymentStage: true, Traits: withDeployment(helper)},

	{Type: stepspec.K8sRollingDeploy, New: func() any { return &K8sRollingDeploy{} }, Check: checks(checkK8sRollingDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sRollingRollback, New: func() any { return &K8sRollingRollback{} }, Check: checks(checkK8sRollingRollback), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sCanaryDeploy, New: func() any { return &K8sCanaryDeploy{} }, Check: checks(checkK8sCanaryDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sCanaryDelete, New: func() any { return &K8sSimple{} }, Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sBlueGreenDeploy, New: func() any { return &K8sBlueGreenDeploy{} }, Check: checks(checkK8sBlueGreenDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sBGSwapServices, New: func() any { return &K8sSimple{} }, Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sApply, New: func() any { return &K8sApply{} }, Check: checks(checkK8sApply), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sScale, New: func() any { return &K8sScale{} }, Check: checks(checkK8sScale), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sDelete, New: func() any { return &K8sDelete{} }, Check: checks(checkK8sDelete), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sPatch, New: func() any { return &K8sPatch{} }, Check: checks(checkK8sPatch), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sRollout, New: func() any { return &K8sRollout{} }, Check: checks(checkK8sRollout), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sDiff, New: func() any { return &K8sDiff{} }, Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sBlueGreenStageScaleDown, New: func() any { return &K8sBlueGreenStageScaleDown{} }, Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sTrafficRouting, New: func() any { return &K8sTrafficRouting{} }, Check: checks(checkK8sTrafficRouting), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.K8sDryRun, New: func() any { return &K8sSimple{} }, Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmDeploy, New: func() any { return &HelmDeploy{} }, Check: checks(checkHelmDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmRollback, New: func() any { return &HelmRollback{} }, Check: checks(checkHelmRollback), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmDelete, New: func() any { return &HelmDelete{} }, Check: checks(checkHelmDelete), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmBGDeploy, New: func() any { return &HelmBGDeploy{} }, Check: checks(checkHelmBGDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmBlueGreenSwapStep, New: func() any { return &HelmSettings{} }, Check: checks(checkHelmSimple), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmCanaryDeploy, New: func() any { return &HelmCanaryDeploy{} }, Check: checks(checkHelmCanaryDeploy), Deploys: "Kubernetes", Traits: kubernetes},
	{Type: stepspec.HelmCanaryDelete, New: func() any { return &HelmSettings{} }, Check: checks(checkHelmSimple), Deploys: "Kubernetes", Traits: kubernetes},

	{Type: stepspec.AwsLambdaDeploy, New: func() any { return &stepspec.Selectors{} }, Deploys: "AwsLambda", Traits: lambda},
	{Type: stepspec.AwsLambdaRollback, New: func() any { return &stepspec.Selectors{} }, Deploys: "AwsLambda", Traits: lambda},
	{Type: stepspec.AwsLambdaCanaryDeploy, New: func() any { return &stepspec.Selectors{} }, Deploys: "AwsLambda", Traits: lambda},
	{Type: stepspec.AwsLambdaTrafficShift, New: func() any { return &stepspec.AwsLambdaTrafficShiftSpec{} }, Check: checks(checkTrafficShift),
		Deploys: "AwsLambda", Traits: lambda},
	{Type: stepspec.AwsLambdaCanaryRollback, New: func() any { return &stepspec.Selectors{} }, Deploys: "AwsLambda", Traits: lambda},

	{Type: stepspec.Command, New: func() any { return &Command{} }, Check: checks(checkCommand), Deploys: "Ssh", OutsideDeployment: true,
		Traits: plan.Traits{Activity: contract.Command, Deployment: true, Heartbeat: true}},
	{Type: stepspec.FetchInstanceScript, New: func() any { return &FetchInstanceScript{} }, Deploys: "CustomDeployment",
		Traits: plan.Traits{Activity: contract.FetchInstances, Deployment: true, Heartbeat: true, Outcome: "instances"}},

	{Type: stepspec.EcsRollingDeploy, New: func() any { return &EcsRollingDeploy{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsRollingRollback, New: func() any { return &SelectorsOnly{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsCanaryDeploy, New: func() any { return &SelectorsOnly{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsCanaryDelete, New: func() any { return &SelectorsOnly{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsRunTask, New: func() any { return &EcsRunTask{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsBlueGreenCreateService, New: func() any { return &EcsBlueGreenCreateService{} }, Check: checks(checkEcsBlueGreenCreateService), Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsBlueGreenSwapTargetGroups, New: func() any { return &EcsBlueGreenSwapTargetGroups{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsBlueGreenRollback, New: func() any { return &SelectorsOnly{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsServiceSetup, New: func() any { return &EcsServiceSetup{} }, Check: checks(checkEcsServiceSetup), Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsUpgradeContainer, New: func() any { return &EcsUpgradeContainer{} }, Check: checks(checkEcsUpgradeContainer), Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsBasicRollback, New: func() any { return &SelectorsOnly{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsBlueGreenTrafficShift, New: func() any { return &EcsBlueGreenTrafficShift{} }, Check: checks(checkEcsBlueGreenTrafficShift), Deploys: "ECS", Traits: ecs},
	{Type: stepspec.StandAloneTrafficShiftRollback, New: func() any { return &StandAloneTrafficShiftRollback{} }, Deploys: "ECS", Traits: ecs},
	{Type: stepspec.EcsScale, New: func() any { return &EcsScale{} }, Check: checks(checkEcsScale), Deploys: "ECS", Traits: ecs},

	{Type: stepspec.AsgRollingDeploy, New: func() any { return &AsgRollingDeploy{} }, Check: checks(checkAsgRollingDeploy), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgRollingRollback, New: func() any { return &AsgFollower{} }, Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgCanaryDeploy, New: func() any { return &AsgCanaryDeploy{} }, Check: checks(checkAsgCanaryDeploy), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgCanaryDelete, New: func() any { return &AsgFollower{} }, Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgBlueGreenDeploy, New: func() any { return &AsgBlueGreenDeploy{} }, Check: checks(checkAsgBlueGreenDeploy), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgBlueGreenSwapService, New: func() any { return &AsgBlueGreenSwapService{} }, Check: checks(checkAsgBlueGreenSwapService), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgShiftTraffic, New: func() any { return &AsgShiftTraffic{} }, Check: checks(checkAsgShiftTraffic), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgBlueGreenRollback, New: func() any { return &AsgFollower{} }, Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgSetup, New: func() any { return &AsgSetup{} }, Check: checks(checkAsgSetup), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgPhasedDeploy, New: func() any { return &AsgPhasedDeploy{} }, Check: checks(checkAsgPhasedDeploy), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgRollback, New: func() any { return &AsgFollower{} }, Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgScale, New: func() any { return &AsgScale{} }, Check: checks(checkAsgScale), Deploys: "Asg", Traits: asg},
	{Type: stepspec.AsgSteadyState, New: func() any { return &AsgSteadyState{} }, Check: checks(checkAsgSteadyState), Deploys: "Asg", Traits: asg},
}

// The step a CI stage with cloneCodebase starts with: the pipeline's codebase cloned into the
// workspace (spec 22.1). Its identifier is reserved in such stages.
const (
	CloneStepType = stepspec.GitClone
	CloneStepID   = "cloneCodebase"
)

// ServiceStepType is the step type a CI stage's service dependencies run as.
const ServiceStepType = stepspec.Background

// How a build machine runs a step (Entry.OnMachine).
const (
	// OnMachineCommand: the command as a process in the workspace, or in a container of its
	// image through the machine's containerd.
	OnMachineCommand = "command"
	// OnMachineClone: a clone into the workspace.
	OnMachineClone = "clone"
	// OnMachineBuild: in the BuildKit image, through the machine's containerd only.
	OnMachineBuild = "build"
)

func withOwnPod(t plan.Traits) plan.Traits     { t.OwnPod = true; return t }
func withDeployment(t plan.Traits) plan.Traits { t.Deployment = true; return t }
func withOutcome(t plan.Traits, o string) plan.Traits {
	t.Outcome = o
	return t
}

var catalog = index(entries)

func index(list []Entry) map[string]Entry {
	m := make(map[string]Entry, len(list))
	for _, e := range list {
		if e.Unresolved == "" {
			e.Unresolved = "null"
		}
		if e.Deploys != "" {
			e.DeploymentStage = true
		}
		if _, dup := m[e.Type]; dup {
			panic("steps: step type " + e.Type + " is listed twice")
		}
		m[e.Type] = e
	}
	return m
}

// Lookup returns the catalog entry of a step type.
func Lookup(typ string) (Entry, bool) {
	e, ok := catalog[typ]
	return e, ok
}

// DefaultImage says a build infrastructure's default image stands in for a step type's
// image (Entry.DefaultImage).
func DefaultImage(typ string) bool { return catalog[typ].DefaultImage }

// OnMachine is how a build machine runs a step type ("": it does not; Entry.OnMachine).
func OnMachine(typ string) string { return catalog[typ].OnMachine }

// CheckSpec runs the checks of a decoded spec: the entry's Check, or the spec type's own.
func (e Entry) CheckSpec(spec any, c Checker) {
	if e.Check != nil {
		e.Check(spec, c)
	} else if ck, ok := spec.(Checked); ok {
		ck.Check(c)
	}
}

// checks makes an entry's Check of a function over its spec type.
func checks[S any](check func(*S, Checker)) func(any, Checker) {
	return func(spec any, c Checker) { check(spec.(*S), c) }
}

// Traits returns the traits of a step type; an unknown type has none.
func Traits(typ string) plan.Traits { return catalog[typ].Traits }

// TraitsOf returns a copy of the traits of a step type (nil for an unknown type), for a plan
// node.
func TraitsOf(typ string) *plan.Traits {
	e, ok := catalog[typ]
	if !ok {
		return nil
	}
	t := e.Traits
	t.Deferred = slices.Clone(t.Deferred)
	return &t
}

// Entries lists the step types' entries in catalog order.
func Entries() []Entry { return slices.Clone(entries) }

// Types lists the known step types, sorted.
func Types() []string { return slices.Sorted(maps.Keys(catalog)) }

// Runs reports whether the engine runs a step type (known and not ValidateOnly).
func Runs(typ string) bool {
	e, ok := catalog[typ]
	return ok && !e.ValidateOnly
}

// Runnable lists the step types the engine runs, sorted.
func Runnable() []string {
	var out []string
	for _, t := range Types() {
		if Runs(t) {
			out = append(out, t)
		}
	}
	return out
}
