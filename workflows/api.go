// Package workflows is Gantry's deterministic engine: the pipeline workflow, one child workflow
// per stage, and the interpreter that walks steps, groups and parallel blocks, evaluates `when`,
// renders expressions and rolls statuses up. It never performs I/O: steps run as activities
// called by name.
package workflows

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// Workflow, query and update names.
const (
	PipelineName = "gantry.Pipeline"
	StageName    = "gantry.Stage"
	SequenceName = "gantry.Sequence"
	// QueryTree returns the live node tree (*Node).
	QueryTree = "tree"
	// UpdateNext hands out the next sequence number of a pipeline.
	UpdateNext = "next"
	// UpdateNextBatch hands out one sequence number per key of its argument ([]string, in
	// order; "" is a number for no key), so concurrent starts of a pipeline share one update.
	UpdateNextBatch = "nextBatch"
	// UpdateBind records the number an idempotency key started ([]KeyedNumber: a start that
	// took a number taken ahead, without its key) unless the key started another number
	// before; it answers each key's number ([]int64). A differing answer means the start was a
	// repeat of that key's.
	UpdateBind = "bind"
	// UpdateGiveBack returns numbers taken ahead that no start used ([]int64): the sequence
	// carries on below them when nothing above them was handed out since.
	UpdateGiveBack = "giveBack"
	// UpdateHandover ends a sequence workflow of a pipelines' namespace, returning its state
	// (SequenceState) for the internal namespace's.
	UpdateHandover = "handover"
	// TaskQueue is the default task queue of workflows and step activities.
	TaskQueue = "gantry"
	// UpdateIntervene resolves a node waiting for manual intervention, or marks a running
	// step (InterventionRequest); sent to the stage workflow that owns the node.
	UpdateIntervene = "intervene"
	// UpdateAbort aborts a pipeline execution (AbortRequest).
	UpdateAbort = "abort"
	// UpdatePause pauses a pipeline execution and UpdateResume resumes it (PauseRequest): while
	// paused, running steps finish but no stage or step starts (spec 3.4).
	UpdatePause  = "pause"
	UpdateResume = "resume"
	// signalPause tells stages and batches the execution was paused (true) or resumed (false).
	signalPause = "pause"
	// signalExpire tells a stage that its pipeline's timeout fired.
	signalExpire = "expire"
	// signalWaiting tells the pipeline how many nodes of a stage wait for intervention.
	signalWaiting = "waiting"
	// signalBarrier tells the pipeline a stage reached or gave up on a barrier (BarrierSignal);
	// signalBarrierResult tells a stage how a barrier ended (BarrierResult).
	signalBarrier       = "barrier"
	signalBarrierResult = "barrier-result"
)

// Change IDs for workflow.GetVersion: behaviour added after executions could be in flight.
const (
	// changeLedger: a Deployment stage that ends records its deployment in its target's
	// ledger (contract.RecordDeployment).
	changeLedger   = "ledger"
	changeTimeouts = "timeouts"  // pipeline and stage timeouts enforced
	changeFastPath = "fast-path" // short steps run as local activities
	// changeSettleSignals: a stage completes only once its signals are delivered.
	changeSettleSignals = "settle-signals"
	// changeStageBatches: stage loops of more than BatchSize iterations run in batch workflows.
	changeStageBatches = "stage-batches"
	// changeBatchBarriers: Barrier steps report to the pipeline itself (not the parent, which
	// for a loop batch is not the pipeline), and stages forward barrier outcomes to batches.
	changeBatchBarriers = "batch-barriers"
	// changeSequenceQueue: a sequence workflow on the pipelines' queue moves to its own.
	changeSequenceQueue = "sequence-queue"
	// changeOutcomeStatus: pipeline and stage workflows that end failed or aborted close Failed
	// or Canceled for Temporal, with their result as the failure's details.
	changeOutcomeStatus = "outcome-status"
	// changeGitManifests: a Deployment stage fetches its Git-stored manifests at the service
	// phase (only stages with such manifests, which no earlier version could run, record it).
	changeGitManifests = "git-manifests"
	// changeArtifactDigest: a Deployment stage whose artifact has a registry connector resolves
	// its tag to a digest at the service phase (no earlier version could run such a stage).
	changeArtifactDigest = "artifact-digest"
	// changeStepManifests: K8sApply steps apply their own manifestSource (accepted and ignored
	// with a warning before), its Git-stored files fetched at the service phase.
	changeStepManifests = "step-manifests"
	// changeNotifications: events a notification rule selects start the execution's notifier
	// and signal their deliveries (only executions with rules, which no earlier version ran,
	// record it).
	changeNotifications = "notifications"
	// changeBindKey: an execution started with a number taken ahead records its trigger's
	// idempotency key with the sequence workflow before anything runs, and ends SKIPPED when
	// the key had started another execution.
	changeBindKey = "bind-key"
	// changeQuietWaiting: a stage whose nodes stopped waiting for users says so when it next
	// waits for anything, or, when it ends first, in its result (StageResult.WaitingCleared),
	// instead of a signal of its own.
	changeQuietWaiting = "quiet-waiting"
	// changePendingMemo: the pipeline keeps the nodes that wait for users in its memo
	// (MemoWaiting), so listing waiting decisions reads visibility only.
	changePendingMemo = "pending-memo"
	// changeNotifyOrder: the pipeline takes stages' notification batches only from the signal
	// channel's buffer, so a stage's step events always precede its end event.
	changeNotifyOrder = "notify-order"
	// changeDeployedArtifact: an Ssh stage finds what the infrastructure was last deployed
	// with (`<+rollbackArtifact.*>`, what its rollback restores) and records its own artifact
	// when it succeeds.
	changeDeployedArtifact = "deployed-artifact"
	// changeLockTick: a lock workflow keeps one check timer across messages and reads every
	// release before it continues as new.
	changeLockTick = "lock-tick"
	// changeConfigFiles: a Deployment stage fetches its service's Git config files in the
	// service phase (Ssh stages did in the infrastructure phase) and publishes them for
	// <+configFile.getAsString()>.
	changeConfigFiles = "config-files"
	// changeTicketLocalRead: a TicketWait whose reads no delegate selectors route reads its
	// ticket as a local activity, and every TicketWait paces its reads from when each was due.
	changeTicketLocalRead = "ticket-local-read"
	// changeStopConfirmed: an aborted or expired step that heartbeats ends only once its
	// activity reports its processes dead, or its worker is known gone (heartbeat timeout),
	// so the locks its stage holds are released after the step stopped, never before.
	changeStopConfirmed = "stop-confirmed"
	// changeSegments: a pipeline of more than SegmentSize stages, or of more than segmentBytes
	// of plan, runs them in segment workflows (only such pipelines record it).
	changeSegments = "segments"
	// changeConcurrency: an execution started with a concurrency limit takes a place under it
	// before anything runs (only such executions, which no earlier version started, record it).
	changeConcurrency = "concurrency"
	// changeOutputLimit: a stage keeps at most its share of ExecutionOutputLimit of output
	// variables, and a step over it fails (only stages whose outputs grow that large record it).
	changeOutputLimit = "output-limit"
	// changeResolvedKeys: a Queue key whose expression does not resolve fails its step rather
	// than naming a lock "null" (only such steps record it).
	changeResolvedKeys = "resolved-keys"
	// changeReportQueued: a step or stage waiting for a lock (QUEUED, RESOURCE_WAITING) tells
	// the pipeline, whose status in lists then says so (only runs that waited record it).
	changeReportQueued = "report-queued"
)

// Kinds of refusals by update validators, carried as the ApplicationError type so clients
// (the HTTP API) can answer 403, 409 or 422 without reading messages.
const (
	ErrForbidden  = "Forbidden"  // the user may not do this
	ErrConflict   = "Conflict"   // already done (a second vote, a second abort)
	ErrNotWaiting = "NotWaiting" // the node does not wait for this decision
	ErrInvalid    = "Invalid"    // the request itself is wrong
)

// refuse is a validator's refusal of a kind.
func refuse(kind, format string, args ...any) error {
	return temporal.NewApplicationError(fmt.Sprintf(format, args...), kind)
}

// Execution modes (<+pipeline.executionMode>, <+ambiance.metadata.executionMode>).
const (
	ModeNormal           = "NORMAL"
	ModePipelineRollback = "PIPELINE_ROLLBACK"
)

// InterventionRequest is a user's decision on a node (spec 3.4, 5.8).
type InterventionRequest struct {
	Path   string `json:"path"`   // node path, e.g. deploy.canary.probe
	Action string `json:"action"` // Retry, Ignore, MarkAsSuccess, MarkAsFailure, Abort, StageRollback, StepGroupRollback, PipelineRollback
	User   string `json:"user"`
}

// AbortRequest asks a pipeline execution to stop.
type AbortRequest struct {
	User   string `json:"user"`
	Reason string `json:"reason,omitempty"`
}

// PauseRequest asks a pipeline execution to pause or resume.
type PauseRequest struct {
	User string `json:"user"`
}

// Abort records who stopped an execution.
type Abort struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// MemoWaiting is the pipeline memo key that lists the steps waiting for users
// ([]WaitingNode; empty when none), so a listing reads them from visibility.
const MemoWaiting = "gantryWaiting"

// Search attributes set on every pipeline execution (all Keyword).
var (
	AttrPipeline = temporal.NewSearchAttributeKeyKeyword("GantryPipeline")
	AttrStatus   = temporal.NewSearchAttributeKeyKeyword("GantryStatus")
	AttrTrigger  = temporal.NewSearchAttributeKeyKeyword("GantryTrigger")
	AttrStage    = temporal.NewSearchAttributeKeyKeyword("GantryStage")
	// AttrUser is who started an execution by hand (a manual run, a re-run), for the
	// executions page's filter; executions a trigger started have none.
	AttrUser = temporal.NewSearchAttributeKeyKeyword("GantryUser")
)

// SearchAttributes lists the custom search attributes to register on a namespace.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{}
	for _, k := range []temporal.SearchAttributeKeyKeyword{AttrPipeline, AttrStatus, AttrTrigger, AttrStage, AttrUser} {
		out[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return out
}

// Settings are engine knobs fixed at start and recorded with the run.
type Settings struct {
	// HeartbeatTimeout is how long a step activity may go without a heartbeat before Temporal
	// treats its worker as lost and runs the step again elsewhere.
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout"`
	// InfraAttempts bounds how often Temporal runs a step whose worker was lost.
	InfraAttempts int32 `json:"infraAttempts"`
	// DelegateWait is how long a step with delegate selectors waits for a worker with those
	// tags to pick it up before it fails with DelegateProvisioning.
	DelegateWait time.Duration `json:"delegateWait,omitempty"`
	// NoFastPath runs every step as a regular activity (see FastPathMaxTimeout).
	NoFastPath bool `json:"noFastPath,omitempty"`
	// FastPathMaxTimeout is the longest step timeout that still runs as a local activity on
	// the stage's own worker (ShellScript and Http steps without delegate selectors).
	FastPathMaxTimeout time.Duration `json:"fastPathMaxTimeout,omitempty"`
	// VerifyMinute is the length of a Verify step's analysis minute (0: a real minute). Tests
	// shorten it so an analysis of two minutes takes seconds; the analysis is the same, its
	// windows and the resolution of the values read scaled with it.
	VerifyMinute time.Duration `json:"verifyMinute,omitempty"`
	// LoopBatchSize is the most iterations of a loop one workflow runs (0: BatchSize); bigger
	// loops run in batch workflows. Smaller batches trade more workflows for shorter histories.
	LoopBatchSize int `json:"loopBatchSize,omitempty"`
	// MaxRunning bounds the executions that run at once on the server (0: no limit), and
	// MaxRunningPerPipeline those of each pipeline; further executions wait QUEUED, in the
	// order they started, for a place.
	MaxRunning            int `json:"maxRunning,omitempty"`
	MaxRunningPerPipeline int `json:"maxRunningPerPipeline,omitempty"`
	// SegmentSize is the most stages one workflow runs (0: SegmentSize); a longer pipeline
	// runs its stages in segment workflows.
	SegmentSize int `json:"segmentSize,omitempty"`
	// OutputLimit is the most bytes of output variables one execution keeps (0 and above
	// ExecutionOutputLimit: ExecutionOutputLimit); tests lower it.
	OutputLimit int `json:"outputLimit,omitempty"`
	// Notify is the notification delivery retry schedule (zero: DefaultNotifySettings).
	Notify NotifySettings `json:"notify,omitempty"`
	// OverrideFreeze is the user whose override-freeze permission lets this execution deploy
	// while a deployment freeze holds ("": freezes refuse its deployments).
	OverrideFreeze string `json:"overrideFreeze,omitempty"`
	// CommitStatus is where the CI stages report their build's status: the codebase's
	// repository, set by the pipeline from its plan (nil: nowhere).
	CommitStatus *plan.GitStore `json:"commitStatus,omitempty"`
}

// verifyMinute is the length of a Verify step's analysis minute.
func (s Settings) verifyMinute() time.Duration {
	if s.VerifyMinute > 0 {
		return s.VerifyMinute
	}
	return time.Minute
}

// batchSize is the loop batch size these settings ask for.
func (s Settings) batchSize() int {
	if s.LoopBatchSize > 0 {
		return s.LoopBatchSize
	}
	return BatchSize
}

// segmentSize is the pipeline segment size these settings ask for.
func (s Settings) segmentSize() int {
	if s.SegmentSize > 0 {
		return s.SegmentSize
	}
	return SegmentSize
}

// parallelBatches is how many batches of a loop without maxConcurrency run at once: together
// they run at most MaxRunningSteps iterations.
func (s Settings) parallelBatches() int {
	return max(1, MaxRunningSteps/s.batchSize())
}

// DefaultSettings are used for zero fields. A step's cancellation (abort) reaches its worker
// with the next heartbeat, which the SDK sends at most every 80% of the heartbeat timeout: 4 s
// keeps an abort under about 3 s.
var DefaultSettings = Settings{HeartbeatTimeout: 4 * time.Second, InfraAttempts: 5, DelegateWait: 2 * time.Minute, FastPathMaxTimeout: time.Minute}

// InternalNamespace is the namespace of Gantry's own workflows for the pipelines of namespace
// ns: sequence counters, cron schedules and the workflows they start. Kept apart, they do not
// crowd the list of pipeline runs in the Temporal UI.
func InternalNamespace(ns string) string { return ns + "-internal" }

// SequenceQueue is the task queue of the sequence workflows of workers on queue base.
func SequenceQueue(base string) string { return base + "-sequence" }

// SelectorQueue is the task queue of steps with delegate selectors: the base queue and the
// sorted, distinct selectors, e.g. "gantry@gpu,linux". Workers started with tags poll the
// queue of every subset of their tags.
func SelectorQueue(base string, selectors []string) string {
	s := append([]string(nil), selectors...)
	sort.Strings(s)
	s = slices.Compact(s)
	return base + "@" + strings.Join(s, ",")
}

// Trigger says who or what started an execution.
type Trigger struct {
	Type string `json:"type"` // MANUAL, WEBHOOK, WEBHOOK_CUSTOM, SCHEDULER_CRON
	User string `json:"user,omitempty"`
	// Data is what <+trigger.*> reads (spec 13.9): branch, commitSha, payload, header, ...
	Data map[string]any `json:"data,omitempty"`
}

// PipelineInput is the pipeline workflow's input.
type PipelineInput struct {
	Plan       *plan.Plan `json:"plan"`
	SequenceID int64      `json:"sequenceId"`
	Trigger    Trigger    `json:"trigger"`
	Settings   Settings   `json:"settings"`
	// Resume makes this execution a retry of an earlier one (spec 14).
	Resume *Resume `json:"resume,omitempty"`
	// Key is the idempotency key (a trigger delivery) of an execution whose number was taken
	// ahead, before the key was known: the execution records it before anything runs (see
	// BindActivity).
	Key string `json:"key,omitempty"`
	// Parent is the execution and Pipeline stage that runs this one as a chained pipeline.
	Parent *ChainLink `json:"parent,omitempty"`
	// Outputs are read in this execution's context as it ends and returned to the parent.
	Outputs []plan.Output `json:"outputs,omitempty"`
	// RollbackOf makes this execution a post-deployment rollback: it runs only the rollback
	// section of one stage, undoing what an earlier execution's run of it deployed.
	RollbackOf *DeploymentRollback `json:"rollbackOf,omitempty"`
}

// DeploymentRollback names the deployment a post-deployment rollback undoes: the execution
// and the Deployment stage that made it.
type DeploymentRollback struct {
	Execution string `json:"execution"`
	Stage     string `json:"stage"`
}

// Resume carries the stages a retried execution does not run again.
type Resume struct {
	// RootExecutionID is the first execution of the retry chain (<+pipeline.resumedExecutionId>).
	RootExecutionID string `json:"rootExecutionId"`
	// FromStage is the stage the retry starts from; the stage elements before it are copied.
	FromStage string `json:"fromStage"`
	// Stages holds the copied stages' trees and expression data, by stage identifier.
	Stages map[string]StageCopy `json:"stages"`
}

// StageCopy is one stage carried over from an earlier execution.
type StageCopy struct {
	Tree *Node          `json:"tree"`
	Data map[string]any `json:"data"`
}

// PipelineResult is the pipeline workflow's result.
type PipelineResult struct {
	Status status.Status `json:"status"`
	Tree   *Node         `json:"tree"`
	// Stages is the stages' expression data (statuses, variables, outputs), for retries.
	Stages map[string]any `json:"stages,omitempty"`
	// Outputs are a chained execution's outputs (PipelineInput.Outputs), by name.
	Outputs map[string]any `json:"outputs,omitempty"`
}

// StageInput is the stage child workflow's input: the stage's plan and the execution context
// as it stood when the stage started.
type StageInput struct {
	ExecutionID string `json:"executionId"`
	// Mode is ModePipelineRollback when the stage runs only its rollback section as part of a
	// pipeline rollback; PathPrefix then places its nodes under the pipeline's rollback node.
	Mode       string `json:"mode,omitempty"`
	PathPrefix string `json:"pathPrefix,omitempty"`
	// RollbackOf is, in rollback mode, the earlier execution whose deployment by this stage
	// is rolled back (a post-deployment rollback); "" for this execution's own.
	RollbackOf string         `json:"rollbackOf,omitempty"`
	Stage      *plan.Node     `json:"stage"`
	Context    map[string]any `json:"context"`
	Settings   Settings       `json:"settings"`
	// Batch makes the workflow run a slice of a big loop's iterations for its stage.
	Batch *BatchInput `json:"batch,omitempty"`
	// Notify lets the stage raise step events (nil: the pipeline has no notification rule).
	Notify *Notifications `json:"notify,omitempty"`
	// OutputLimit is the most bytes of output variables the stage may keep, its share of
	// ExecutionOutputLimit (0: all of it).
	OutputLimit int `json:"outputLimit,omitempty"`
}

// BatchInput is one slice of a loop's iterations, run in a child workflow so that no single
// history grows with the size of the loop (see BatchSize).
type BatchInput struct {
	Node        *plan.Node     `json:"node"` // the looped node
	Iterations  []iteration    `json:"iterations"`
	Total       int            `json:"total"`       // iterations of the whole loop
	Concurrency int            `json:"concurrency"` // 0: up to BatchSize at once
	SkipQueued  bool           `json:"skipQueued,omitempty"`
	Prefix      string         `json:"prefix"`     // FQN of the loop's container
	ParentPath  string         `json:"parentPath"` // tree path of the loop's parent
	Root        map[string]any `json:"root"`       // expression roots where the loop starts
}

// StageResult is the stage child workflow's result.
type StageResult struct {
	Tree *Node `json:"tree"`
	// Data is the stage's subtree of the expression context (statuses, outputs, variables).
	Data map[string]any `json:"data"`
	// PipelineRollback is set when a PipelineRollback action fired in the stage.
	PipelineRollback bool `json:"pipelineRollback,omitempty"`
	// StageRollback is set when a StageRollback action fired (reported by batches).
	StageRollback bool `json:"stageRollback,omitempty"`
	// Aborted is set when the stage stopped the execution (Abort action or abort request).
	Aborted bool `json:"aborted,omitempty"`
	// Ran lists the iterations a stage batch started, in start order (for a pipeline rollback).
	Ran []string `json:"ran,omitempty"`
	// WaitingCleared says the stage's nodes stopped waiting for users and the stage ended
	// before it signalled so (changeQuietWaiting): the pipeline clears what the stage waited for.
	WaitingCleared bool `json:"waitingCleared,omitempty"`
	// Locks are the lock tickets whose scope outlives the workflow (see HeldLock).
	Locks []HeldLock `json:"locks,omitempty"`
	// OutputBytes are the bytes of output variables the workflow kept (see outputBudget).
	OutputBytes int `json:"outputBytes,omitempty"`
}

// Node is one node of the live execution tree returned by QueryTree.
type Node struct {
	// Path is the dot-joined identifier path below the pipeline ("" for the pipeline itself,
	// "build", "build.version", "deploy.canary.probe"); parallel blocks share their parent's.
	Path      string        `json:"path"`
	ID        string        `json:"id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Kind      string        `json:"kind"` // pipeline, stage, parallel, group, step
	Type      string        `json:"type,omitempty"`
	Status    status.Status `json:"status"`
	StartedAt *time.Time    `json:"startedAt,omitempty"`
	EndedAt   *time.Time    `json:"endedAt,omitempty"`
	Attempts  int           `json:"attempts,omitempty"`
	// Worker is the process (host/pid) that ran the step's last attempt.
	Worker  string            `json:"worker,omitempty"`
	Failure *contract.Failure `json:"failure,omitempty"`
	Outputs map[string]any    `json:"outputs,omitempty"`
	// Tests summarises the test reports of the step's last attempt (spec 22.2).
	Tests *contract.TestSummary `json:"tests,omitempty"`
	// Actions lists what a user may do now (intervention choices while waiting).
	Actions []string `json:"actions,omitempty"`
	// Approval describes a HarnessApproval step while it waits.
	Approval *ApprovalView `json:"approval,omitempty"`
	// Ticket describes a JiraApproval, ServiceNowApproval or CustomApproval step while it
	// waits: the ticket, the criteria and which are not met yet.
	Ticket *TicketView `json:"ticket,omitempty"`
	// Resource says what a RESOURCE_WAITING stage or QUEUED step waits for.
	Resource *ResourceView `json:"resource,omitempty"`
	// Inputs names the execution-time inputs a step waits for (INPUT_WAITING).
	Inputs []string `json:"inputs,omitempty"`
	// Notes records decisions taken on the node: failure-strategy actions, retries, user
	// interventions, in order.
	Notes []string `json:"notes,omitempty"`
	// Strategy is the last failure-strategy action applied to the node's failure.
	Strategy *StrategyAction `json:"failureStrategy,omitempty"`
	// Policy is the on-run policy decision (pipeline node only).
	Policy *plan.PolicyRecord `json:"policy,omitempty"`
	// Abort says who aborted the execution (pipeline node only).
	Abort *Abort `json:"abort,omitempty"`
	// Manifests records, on a Deployment stage, the commit each Git-stored manifest was
	// fetched at (manifest identifier → commit); a rerun deploys the same commits.
	Manifests map[string]string `json:"manifests,omitempty"`
	// Artifact records, on a Deployment stage, the digest its primary artifact resolved to
	// (through a registry connector); a rerun deploys the same digest.
	Artifact string `json:"artifact,omitempty"`
	// Template is the template and version the node was expanded from (spec 19.8).
	Template *plan.TemplateRef `json:"template,omitempty"`
	// Sources are the files read from Git and their commits (pipeline node of a remote
	// pipeline only).
	Sources []plan.Source `json:"sources,omitempty"`
	// Source names the batch workflow that holds this placeholder's iterations (big loops, see
	// BatchSize); the starter replaces the placeholder by them.
	Source string `json:"source,omitempty"`
	// Chained names, on the step of a Pipeline stage, the chained execution it runs; Parent
	// names, on a chained execution's pipeline node, the execution and stage that run it.
	// Freeze names, on a stage that ended FREEZE_FAILED, the freeze that refused it
	// ("global" for the global freeze).
	Freeze   string     `json:"freeze,omitempty"`
	Chained  *ChainLink `json:"chained,omitempty"`
	Parent   *ChainLink `json:"parent,omitempty"`
	Children []*Node    `json:"children,omitempty"`
}

// StrategyAction is a failure-strategy action applied to a failed node (spec 5.5-5.10).
type StrategyAction struct {
	// Action is the action's type: Ignore, MarkAsSuccess, MarkAsFailure, Abort, Retry,
	// RetryStepGroup, StageRollback, StepGroupRollback, PipelineRollback, ManualIntervention
	// (still waiting) or, after an intervention, the action chosen.
	Action string `json:"action"`
	// By names who chose it: a user, "timeout" for a manual intervention's onTimeout action,
	// or "" for the strategy itself.
	By string `json:"by,omitempty"`
}

// Walk calls fn for n and every node below it, depth first.
func (n *Node) Walk(fn func(*Node)) {
	if n == nil {
		return
	}
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Find returns the node with a path and kind other than parallel, or nil.
func (n *Node) Find(path string) *Node {
	var found *Node
	n.Walk(func(x *Node) {
		if found == nil && x.Path == path && x.Kind != "parallel" {
			found = x
		}
	})
	return found
}

// newTree builds the not-yet-started tree of plan nodes below a parent path.
func newTree(nodes []*plan.Node, parent string) []*Node {
	var out []*Node
	for _, n := range nodes {
		path := parent
		if n.ID != "" {
			path = join(parent, n.ID)
		}
		t := &Node{Path: path, ID: n.ID, Name: n.Name, Kind: string(n.Kind), Type: n.Type, Status: status.NotStarted, Template: n.Template}
		if n.Strategy != nil {
			t.Kind = "strategy" // its children are the iterations, known when it starts
		} else {
			t.Children = childTree(n, path)
		}
		out = append(out, t)
	}
	return out
}

// rollbackID names the node that holds a stage's or group's rollback steps, so their paths
// follow the FQN (deploy.rollbackSteps.undo).
const rollbackID = "rollbackSteps"

// childTree is a node's children plus, when it has rollback steps, its rollback section.
func childTree(n *plan.Node, path string) []*Node {
	out := newTree(n.Children, path)
	if len(n.Rollback) > 0 {
		rp := join(path, rollbackID)
		out = append(out, &Node{Path: rp, ID: rollbackID, Name: "Rollback", Kind: "rollback", Status: status.NotStarted,
			Children: newTree(n.Rollback, rp)})
	}
	return out
}

func join(parent, id string) string {
	if parent == "" {
		return id
	}
	return parent + "." + id
}

// rollupChildren rolls up the statuses of the children that ran (spec 3.3).
func rollupChildren(children []*Node) status.Status {
	var ss []status.Status
	for _, c := range children {
		if c.Status != status.NotStarted {
			ss = append(ss, c.Status)
		}
	}
	return status.Rollup(ss)
}

// Gantry's own metrics, emitted through the SDK's metrics handler (not counted again on
// replay). Step durations are the SDK's activity_execution_latency (by activity type); queue
// latency is its workflow_task_schedule_to_start_latency (and activity_schedule_to_start_latency
// for activities not dispatched eagerly).
const (
	MetricExecutionsStarted  = "gantry_executions_started"  // tags pipeline, trigger
	MetricExecutionsFinished = "gantry_executions_finished" // tags pipeline, status
	MetricStepsFinished      = "gantry_steps_finished"      // tags step_type, status
	// MetricStepDuration is a step's time from start to its final outcome, retries and waits
	// included (workflow time). Queue latency is the SDK's temporal_workflow_task_ and
	// temporal_activity_schedule_to_start_latency (the latter only for steps that waited in a
	// queue: a worker runs the steps its own workflow schedules at once, eagerly).
	MetricStepDuration = "gantry_step_duration" // tags step_type, status
)
