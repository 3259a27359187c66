// Package worker runs a Gantry worker process: Start wires the step activities to their
// dependencies and starts the worker of the pipelines' task queue and its delegate workers;
// Register puts the same workflows and activities on any registry (tests, replayers).
package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/ami"
	asgstep "github.com/gantry-cd/gantry/activities/asg"
	"github.com/gantry-cd/gantry/activities/awshosts"
	"github.com/gantry-cd/gantry/activities/awssecrets"
	"github.com/gantry-cd/gantry/activities/charts"
	"github.com/gantry-cd/gantry/activities/command"
	"github.com/gantry-cd/gantry/activities/commitstatus"
	"github.com/gantry-cd/gantry/activities/container"
	"github.com/gantry-cd/gantry/activities/deployed"
	ecsstep "github.com/gantry-cd/gantry/activities/ecs"
	"github.com/gantry-cd/gantry/activities/freezes"
	"github.com/gantry-cd/gantry/activities/gitstore"
	httpstep "github.com/gantry-cd/gantry/activities/http"
	"github.com/gantry-cd/gantry/activities/instances"
	k8sstep "github.com/gantry-cd/gantry/activities/k8s"
	lambdastep "github.com/gantry-cd/gantry/activities/lambda"
	"github.com/gantry-cd/gantry/activities/locks"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/notify"
	policystep "github.com/gantry-cd/gantry/activities/policy"
	"github.com/gantry-cd/gantry/activities/prometheus"
	"github.com/gantry-cd/gantry/activities/records"
	"github.com/gantry-cd/gantry/activities/registry"
	"github.com/gantry-cd/gantry/activities/s3store"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/shell"
	"github.com/gantry-cd/gantry/activities/terraform"
	"github.com/gantry-cd/gantry/activities/tickets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// The images containerized step groups use when the worker's options name none, for the
// command line's flag defaults (the families are linked by the worker alone).
const (
	DefaultHelperImage   = container.DefaultHelperImage
	DefaultBuildKitImage = container.DefaultBuildKitImage
)

// Options configure a worker.
type Options struct {
	TaskQueue string // "" is workflows.TaskQueue
	// HelperImage is gantry-helper's image for containerized step groups; "" is
	// DefaultHelperImage.
	HelperImage string
	// BuildKitImage is the image BuildAndPush steps run in; "" is
	// DefaultBuildKitImage.
	BuildKitImage string
	// Log receives the activities' own log lines (nil: none).
	Log     *zap.Logger
	Secrets secrets.Resolver
	Logs    logs.Store
	WorkDir string // step workspaces; "" is the system temp directory
	// GitCache holds the files of Git-stored manifests by commit; "" is the user's cache
	// directory (gantry/git).
	GitCache string
	// MaxConcurrentSteps bounds step activities running at once on this worker (0: SDK default).
	MaxConcurrentSteps int
	// WorkflowPollers bounds the pollers that fetch the pipelines' and stages' workflow tasks:
	// they scale between 1 and this with the tasks the server hands out (the SDK's autoscaling
	// poller); 0 is DefaultWorkflowPollers.
	WorkflowPollers int
	// Policies evaluates Policy steps; nil makes them fail closed.
	Policies *policies.Engine
	// StopTimeout is how long Stop lets running steps finish before cancelling them; a
	// cancelled step's activity is retried by another worker.
	StopTimeout time.Duration
	// Tags are this worker's delegate tags: it also runs the steps whose delegate selectors are
	// a subset of them (see Delegates).
	Tags []string
	// NoFastPath starts cron-triggered executions with the fast path off.
	NoFastPath bool
	// Internal is the client of the internal namespace (workflows.InternalNamespace): the
	// worker also runs the sequence and cron workflows there. nil: only the pipelines'
	// namespace.
	Internal client.Client
	// TerraformBin is the tofu or terraform binary of the Terraform steps ("" finds one on
	// PATH); TerraformKeys seal the plans and configurations their provisioners keep (nil:
	// the Terraform steps fail, saying so).
	TerraformBin string
	// SSHKnownHosts is the known_hosts file Command steps check hosts' keys against ("":
	// any key, said in the step's log).
	SSHKnownHosts string
	// TerraformPlugins is a filesystem mirror the Terraform steps install providers from.
	TerraformPlugins string
	TerraformKeys    *codec.Keys
	// LockCheck is how often a lock workflow this worker starts makes sure its holder still
	// runs (0: contract.DefaultLockCheck).
	LockCheck time.Duration
	// InstanceSync is how often each deployed target's instances are read (0: every ten
	// minutes; negative: never).
	InstanceSync time.Duration
	// BuildMachine makes this worker a build machine: it runs the CI stages that name a
	// runtime, their steps without an image on this machine (see BuildMachines), at most
	// MaxStages at once (0: DefaultMaxStages). StepHelper is the gantry-helper command that
	// runs those steps (nil: see StepHelper).
	BuildMachine bool
	MaxStages    int
	StepHelper   []string
	// Containerd is the build machine's containerd socket: its steps that name an image run
	// in containers ("": such stages are not taken).
	Containerd string
	machine    *container.Machine // the build machine's, shared by its workers (Start)
	// Notify configures notification deliveries: SMTP server, PagerDuty endpoint, UI links
	// and the identity file user groups resolve through. Its Secrets default to Secrets.
	Notify notify.Sender
}

// DefaultWorkflowPollers is the most workflow-task pollers a worker scales to by default.
// An execution takes several workflow tasks (pipeline and stage starts, the stage's report,
// each decision, each stage's end); the SDK's fixed two pollers left them queued, and
// spooled to the database, behind a burst of starts: 2,000 waiting approvals were decided at
// 25-33/s with two, at 103/s with up to 100 (docs/testing.md, approvals).
const DefaultWorkflowPollers = 100

// workflowPollers is the autoscaling poller behaviour with at most max pollers (0: the
// default).
func workflowPollers(max int) sdkworker.PollerBehavior {
	if max <= 0 {
		max = DefaultWorkflowPollers
	}
	return sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{
		MaximumNumberOfPollers: max})
}

// MaxTags bounds a worker's tags: it polls one task queue per non-empty subset.
const MaxTags = 6

// Delegates returns activity-only workers for the steps a tagged worker may run: one per
// non-empty subset of its tags, on workflows.SelectorQueue. Steps run there exactly as on the
// main queue; only the routing differs.
func Delegates(c client.Client, o Options) ([]sdkworker.Worker, error) {
	tags, err := tagSet(o.Tags)
	if err != nil {
		return nil, err
	}
	tq := o.TaskQueue
	if tq == "" {
		tq = workflows.TaskQueue
	}
	if o.Secrets == nil {
		o.Secrets = &secrets.Store{}
	}
	var out []sdkworker.Worker
	for _, subset := range subsets(tags)[1:] { // not the empty one: the main worker's queue
		w := sdkworker.New(c, workflows.SelectorQueue(tq, subset), sdkworker.Options{
			MaxConcurrentActivityExecutionSize: o.MaxConcurrentSteps, WorkerStopTimeout: o.StopTimeout, DisableWorkflowWorker: true})
		out = append(out, closing{w, registerActivities(w, o, c)})
	}
	return out, nil
}

// tagSet is a worker's tags, sorted, once each, at most MaxTags.
func tagSet(tags []string) ([]string, error) {
	tags = slices.Compact(slices.Sorted(slices.Values(tags)))
	if len(tags) > MaxTags {
		return nil, fmt.Errorf("a worker takes at most %d tags, got %d", MaxTags, len(tags))
	}
	return tags, nil
}

// subsets are the subsets of tags, the empty one first.
func subsets(tags []string) [][]string {
	var out [][]string
	for mask := 0; mask < 1<<len(tags); mask++ {
		var subset []string
		for i, t := range tags {
			if mask&(1<<i) != 0 {
				subset = append(subset, t)
			}
		}
		out = append(out, subset)
	}
	return out
}

// New returns a worker with every workflow and step activity registered under its name.
func New(c client.Client, o Options) sdkworker.Worker {
	tq := o.TaskQueue
	if tq == "" {
		tq = workflows.TaskQueue
	}
	if o.Secrets == nil {
		o.Secrets = &secrets.Store{}
	}
	// Fast-path steps are local activities: the step limit applies to them too.
	w := sdkworker.New(c, tq, sdkworker.Options{MaxConcurrentActivityExecutionSize: o.MaxConcurrentSteps,
		MaxConcurrentLocalActivityExecutionSize: o.MaxConcurrentSteps, WorkerStopTimeout: o.StopTimeout,
		WorkflowTaskPollerBehavior: workflowPollers(o.WorkflowPollers)})
	RegisterWorkflows(w)
	closeSteps := registerActivities(w, o, c)
	if o.machine != nil {
		// The stages' steps on this machine, as local activities when this worker runs their
		// workflow (workflows.ServeMachine).
		w.RegisterActivityWithOptions(stamped(o.machine.Step), activity.RegisterOptions{Name: contract.MachineStep})
		workflows.ServeMachine(o.machine.Name)
	}
	st := &starter.StartActivity{Starter: &starter.Starter{Client: c, Internal: o.Internal, TaskQueue: tq, NoFastPath: o.NoFastPath}}
	w.RegisterActivityWithOptions(st.Run, activity.RegisterOptions{Name: workflows.StartActivity})
	w.RegisterActivityWithOptions(st.Starter.BindKey, activity.RegisterOptions{Name: workflows.BindActivity})
	w.RegisterActivityWithOptions(st.Starter.ChainNumber, activity.RegisterOptions{Name: workflows.ChainNumberActivity})
	w.RegisterActivityWithOptions(st.Starter.NotifyFreeze, activity.RegisterOptions{Name: workflows.FreezeNotifyActivity})
	// Sequence workflows poll a queue of their own: their tasks must not wait behind the
	// pipelines a burst of webhook deliveries starts. The pipelines' namespace keeps one for
	// the sequence workflows of older Gantry versions until they hand over.
	seq := sdkworker.New(c, workflows.SequenceQueue(tq), sdkworker.Options{WorkerStopTimeout: o.StopTimeout})
	seq.RegisterWorkflowWithOptions(workflows.Sequence, workflow.RegisterOptions{Name: workflows.SequenceName})
	seq.RegisterWorkflowWithOptions(workflows.Refusals, workflow.RegisterOptions{Name: workflows.RefusalsName})
	seq.RegisterWorkflowWithOptions(workflows.Provisioner, workflow.RegisterOptions{Name: contract.ProvisionerName})
	seq.RegisterWorkflowWithOptions(workflows.Ledger, workflow.RegisterOptions{Name: contract.LedgerName})
	seq.RegisterWorkflowWithOptions(workflows.Instances, workflow.RegisterOptions{Name: contract.InstancesName})
	seq.RegisterWorkflowWithOptions(workflows.InstanceSweep, workflow.RegisterOptions{Name: contract.SweepName})
	registerLocks(seq, c)
	// The instance syncs and the sweep read their targets where they run: the internal
	// namespace's queue.
	internal := o.Internal
	if internal == nil {
		internal = c
	}
	readSecrets := secrets.Routed(o.Secrets, secretManagers)
	reader := &deployed.Activity{Kubernetes: &k8sstep.Activity{Secrets: readSecrets, Logs: o.Logs}, Ecs: &ecsstep.Activity{Secrets: readSecrets},
		Asg: &asgstep.Activity{Secrets: readSecrets}, Lambda: &lambdastep.Activity{Secrets: readSecrets},
		Records: &records.Temporal{Client: internal, TaskQueue: workflows.SequenceQueue(tq)}}
	readOn := seq
	side := []sdkworker.Worker{seq}
	if o.Internal != nil && o.Internal != c {
		in := sdkworker.New(o.Internal, workflows.SequenceQueue(tq), sdkworker.Options{WorkerStopTimeout: o.StopTimeout})
		in.RegisterWorkflowWithOptions(workflows.Sequence, workflow.RegisterOptions{Name: workflows.SequenceName})
		in.RegisterWorkflowWithOptions(workflows.Cron, workflow.RegisterOptions{Name: workflows.CronName})
		in.RegisterWorkflowWithOptions(workflows.FreezeNotices, workflow.RegisterOptions{Name: workflows.FreezeNoticesName})
		in.RegisterActivityWithOptions(st.Starter.NotifyFreeze, activity.RegisterOptions{Name: workflows.FreezeNotifyActivity})
		in.RegisterWorkflowWithOptions(workflows.Refusals, workflow.RegisterOptions{Name: workflows.RefusalsName})
		in.RegisterWorkflowWithOptions(workflows.Provisioner, workflow.RegisterOptions{Name: contract.ProvisionerName})
		in.RegisterWorkflowWithOptions(workflows.Ledger, workflow.RegisterOptions{Name: contract.LedgerName})
		in.RegisterWorkflowWithOptions(workflows.Instances, workflow.RegisterOptions{Name: contract.InstancesName})
		in.RegisterWorkflowWithOptions(workflows.InstanceSweep, workflow.RegisterOptions{Name: contract.SweepName})
		registerLocks(in, c)
		readOn = in
		in.RegisterActivityWithOptions(st.Run, activity.RegisterOptions{Name: workflows.StartActivity})
		side = append(side, in)
	}
	readOn.RegisterActivityWithOptions(reader.ReadInstances, activity.RegisterOptions{Name: contract.ReadInstances})
	readOn.RegisterActivityWithOptions(reader.SweepInstances, activity.RegisterOptions{Name: contract.SweepInstances})
	return withSide{closing{w, closeSteps}, side, st.Starter}
}

// withSide runs the main worker together with the sequence queues' workers.
type withSide struct {
	closing
	side    []sdkworker.Worker
	starter *starter.Starter // the cron starts': its numbers taken ahead go back at Stop
}

func (w withSide) Start() error {
	for _, s := range w.side {
		if err := s.Start(); err != nil {
			return err
		}
	}
	return w.closing.Start()
}

func (w withSide) Run(interrupt <-chan any) error {
	for _, s := range w.side {
		if err := s.Start(); err != nil {
			return err
		}
		defer s.Stop()
	}
	return w.closing.Run(interrupt)
}

func (w withSide) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	w.starter.Close(ctx) // while the sequence workflows' worker still runs
	cancel()
	w.closing.Stop()
	for _, s := range w.side {
		s.Stop()
	}
}

// closing releases what the step activities hold (fork servers, workspaces being removed)
// once the SDK worker has stopped.
type closing struct {
	sdkworker.Worker
	release func()
}

func (w closing) Stop() {
	w.Worker.Stop()
	w.release()
}

func (w closing) Run(interrupt <-chan any) error {
	defer w.release()
	return w.Worker.Run(interrupt)
}

// ContextPropagators are what clients and workers of Gantry's workflows must carry: the
// secret routes (where secret manager secrets are read), from workflows to activities.
func ContextPropagators() []workflow.ContextPropagator {
	return []workflow.ContextPropagator{contract.SecretRoutesPropagator{}}
}

// Register adds the workflows and activities to any registry (a worker, a replayer's worker,
// or a test environment).
func Register(r interface {
	WorkflowRegistry
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, o Options, exceptWorkflows ...string) {
	RegisterWorkflows(r, exceptWorkflows...)
	registerActivities(r, o, nil)
}

// secretManagers read the secrets routed to connectors beside Vault.
var secretManagers = map[string]func(secrets.Resolver) secrets.Manager{"AwsSecretManager": awssecrets.New}

// registerActivities registers the step activities and returns what releases their resources.
// c, when set, lets the containerized step groups' activity find the pods of closed runs.
func registerActivities(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, o Options, c client.Client) (release func()) {
	o.Secrets = secrets.Routed(o.Secrets, secretManagers)
	sh := &shell.Activity{Secrets: o.Secrets, Logs: o.Logs, WorkDir: o.WorkDir, KnownHosts: o.SSHKnownHosts}
	r.RegisterActivityWithOptions(stamped(sh.Run), activity.RegisterOptions{Name: contract.ShellScript})
	hs := &httpstep.Activity{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(stamped(hs.Run), activity.RegisterOptions{Name: contract.Http})
	tk := &tickets.Activity{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(stamped(tk.Run), activity.RegisterOptions{Name: contract.Ticket})
	r.RegisterActivityWithOptions(tk.Read, activity.RegisterOptions{Name: contract.TicketRead})
	pq := &prometheus.Activity{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(pq.Query, activity.RegisterOptions{Name: contract.MetricsQuery})
	ps := &policystep.Activity{Engine: o.Policies}
	r.RegisterActivityWithOptions(stamped(ps.Run), activity.RegisterOptions{Name: contract.Policy})
	ks := &k8sstep.Activity{Secrets: o.Secrets, Logs: o.Logs}
	r.RegisterActivityWithOptions(stamped(ks.Run), activity.RegisterOptions{Name: contract.Kubernetes})
	rs := &registry.Resolver{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(rs.Activity, activity.RegisterOptions{Name: contract.ResolveArtifact})
	gs := &gitstore.Fetcher{Secrets: o.Secrets, CacheDir: o.GitCache}
	r.RegisterActivityWithOptions(gs.Activity, activity.RegisterOptions{Name: contract.FetchManifests})
	es := &ecsstep.Activity{Secrets: o.Secrets, Logs: o.Logs}
	r.RegisterActivityWithOptions(stamped(es.Run), activity.RegisterOptions{Name: contract.Ecs})
	as := &asgstep.Activity{Secrets: o.Secrets, Logs: o.Logs}
	r.RegisterActivityWithOptions(stamped(as.Run), activity.RegisterOptions{Name: contract.Asg})
	ls := &lambdastep.Activity{Secrets: o.Secrets, Logs: o.Logs}
	r.RegisterActivityWithOptions(stamped(ls.Run), activity.RegisterOptions{Name: contract.AwsLambda})
	s3r := &s3store.Reader{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(s3r.FetchManifests, activity.RegisterOptions{Name: contract.FetchS3Manifests})
	r.RegisterActivityWithOptions(s3r.ResolveArtifact, activity.RegisterOptions{Name: contract.ResolveS3Artifact})
	amis := &ami.Resolver{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(amis.Resolve, activity.RegisterOptions{Name: contract.ResolveAmiArtifact})
	cs := &charts.Puller{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(cs.Activity, activity.RegisterOptions{Name: contract.FetchChart})
	pods := &container.Activity{Secrets: o.Secrets, Logs: o.Logs, HelperImage: o.HelperImage, BuildKitImage: o.BuildKitImage, Log: o.Log}
	if c != nil {
		pods.Closed = closedFunc(c)
	}
	r.RegisterActivityWithOptions(pods.Start, activity.RegisterOptions{Name: contract.PodStart})
	r.RegisterActivityWithOptions(pods.Stop, activity.RegisterOptions{Name: contract.PodStop})
	r.RegisterActivityWithOptions(stamped(pods.Step), activity.RegisterOptions{Name: contract.ContainerStep})
	cmd := &command.Activity{Secrets: o.Secrets, Logs: o.Logs, KnownHosts: o.SSHKnownHosts}
	r.RegisterActivityWithOptions(stamped(cmd.Run), activity.RegisterOptions{Name: contract.Command})
	hosts := &awshosts.Lister{Secrets: o.Secrets}
	r.RegisterActivityWithOptions(hosts.Describe, activity.RegisterOptions{Name: contract.DescribeHosts})
	fi := &instances.Activity{Secrets: o.Secrets, Logs: o.Logs, WorkDir: o.WorkDir}
	ca := &instances.Artifacts{Secrets: o.Secrets, WorkDir: o.WorkDir}
	r.RegisterActivityWithOptions(ca.Resolve, activity.RegisterOptions{Name: contract.ResolveCustomArtifact})
	r.RegisterActivityWithOptions(stamped(fi.Run), activity.RegisterOptions{Name: contract.FetchInstances})
	tf := &terraform.Activity{Bin: o.TerraformBin, Mirror: o.TerraformPlugins, Keys: o.TerraformKeys, Secrets: o.Secrets, Logs: o.Logs, Git: gs, WorkDir: o.WorkDir}
	dep := &deployed.Activity{InstanceSync: o.InstanceSync}
	if rc := o.Internal; rc != nil || c != nil {
		if rc == nil {
			rc = c
		}
		tq := o.TaskQueue
		if tq == "" {
			tq = workflows.TaskQueue
		}
		// Provisioners' and infrastructures' records live in the internal namespace's
		// long-lived workflows, and so do the locks.
		rec := records.Temporal{Client: rc, TaskQueue: workflows.SequenceQueue(tq)}
		tf.Records, dep.Records = terraform.TemporalRecords{Temporal: rec}, &rec
		lk := &locks.Temporal{Locks: rc, Pipelines: c, TaskQueue: workflows.SequenceQueue(tq), Check: o.LockCheck, Log: o.Log}
		r.RegisterActivityWithOptions(lk.Acquire, activity.RegisterOptions{Name: contract.LockAcquire})
		r.RegisterActivityWithOptions(lk.Release, activity.RegisterOptions{Name: contract.LockRelease})
		gf := &freezes.Global{Client: rc}
		r.RegisterActivityWithOptions(gf.State, activity.RegisterOptions{Name: contract.GlobalFreezeState})
	} else {
		// Without a server there is no global freeze to read: it is off.
		r.RegisterActivityWithOptions(func(context.Context) (contract.GlobalFreeze, error) { return contract.GlobalFreeze{}, nil },
			activity.RegisterOptions{Name: contract.GlobalFreezeState})
		lk := &locks.Local{}
		r.RegisterActivityWithOptions(lk.Acquire, activity.RegisterOptions{Name: contract.LockAcquire})
		r.RegisterActivityWithOptions(lk.Release, activity.RegisterOptions{Name: contract.LockRelease})
	}
	r.RegisterActivityWithOptions(stamped(tf.Run), activity.RegisterOptions{Name: contract.Terraform})
	r.RegisterActivityWithOptions(dep.Last, activity.RegisterOptions{Name: contract.LastDeployed})
	r.RegisterActivityWithOptions(dep.Record, activity.RegisterOptions{Name: contract.RecordDeployed})
	r.RegisterActivityWithOptions(dep.RecordDeployment, activity.RegisterOptions{Name: contract.RecordDeployment})
	r.RegisterActivityWithOptions(dep.LastVerified, activity.RegisterOptions{Name: contract.LastVerified})
	r.RegisterActivityWithOptions(dep.RecordVerified, activity.RegisterOptions{Name: contract.RecordVerified})
	sender := o.Notify
	if sender.Secrets == nil {
		sender.Secrets = o.Secrets
	}
	na := &notify.Activity{Sender: &sender, Log: o.Log}
	r.RegisterActivityWithOptions(na.Run, activity.RegisterOptions{Name: contract.Notify})
	r.RegisterActivityWithOptions(stamped(na.Email), activity.RegisterOptions{Name: contract.EmailStep})
	statuses := &commitstatus.Activity{Secrets: o.Secrets, UIURL: sender.UIURL}
	r.RegisterActivityWithOptions(statuses.Report, activity.RegisterOptions{Name: contract.CommitStatus})
	r.RegisterActivityWithOptions(func(ctx context.Context, executionID string) (bool, error) {
		if c == nil {
			return false, nil
		}
		return closedFunc(c)(ctx, executionID, "")
	}, activity.RegisterOptions{Name: contract.ExecutionClosed})
	return sh.Close
}

// closedFunc tells whether a workflow run has closed ("" run: its latest); a run whose
// history is gone closed long ago.
func closedFunc(c client.Client) func(ctx context.Context, workflowID, runID string) (bool, error) {
	lk := &locks.Temporal{Pipelines: c}
	return func(ctx context.Context, workflowID, runID string) (bool, error) {
		return lk.OwnerClosed(ctx, contract.WorkflowRef{ID: workflowID, RunID: runID})
	}
}

// registerLocks registers the lock workflow and the activities it calls on a worker of the
// sequence queue; c is the pipelines' client, through which it reaches the stages.
func registerLocks(w sdkworker.Worker, c client.Client) {
	w.RegisterWorkflowWithOptions(workflows.Lock, workflow.RegisterOptions{Name: contract.LockWorkflow})
	w.RegisterWorkflowWithOptions(workflows.GlobalFreeze, workflow.RegisterOptions{Name: contract.FreezeWorkflow})
	lk := &locks.Temporal{Pipelines: c}
	w.RegisterActivityWithOptions(lk.Notify, activity.RegisterOptions{Name: contract.LockNotify})
	w.RegisterActivityWithOptions(lk.OwnerClosed, activity.RegisterOptions{Name: contract.LockOwnerClosed})
}

// stamped wraps a step activity so its result says which process ran it and for how long.
func stamped(fn func(context.Context, contract.StepInput) (contract.StepResult, error)) func(context.Context, contract.StepInput) (contract.StepResult, error) {
	return func(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
		start := time.Now()
		res, err := fn(ctx, in)
		res.Worker, res.Started, res.Ended = workerName, start, time.Now()
		// A step failure names the worker too, in the error's details.
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			d := contract.Details(err)
			d.Worker = workerName
			err = temporal.NewNonRetryableApplicationError(app.Message(), app.Type(), app.Unwrap(), d)
		}
		return res, err
	}
}

// workerName names this process in node trees: host/pid.
var workerName = func() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}()

// WorkflowRegistry is where workflows are registered: a worker, a replayer, a test environment.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}

// RegisterWorkflows registers the workflows under their names, but those named in except (a
// test registering its own stand-in).
func RegisterWorkflows(r WorkflowRegistry, except ...string) {
	for _, w := range []struct {
		name string
		fn   any
	}{
		{workflows.PipelineName, workflows.Pipeline}, {workflows.StageName, workflows.Stage}, {workflows.StageBatchName, workflows.StageBatch}, {workflows.SegmentName, workflows.PipelineSegment},
		{workflows.SequenceName, workflows.Sequence}, {workflows.CronName, workflows.Cron}, {workflows.NotifierName, workflows.Notifier},
		{workflows.RefusalsName, workflows.Refusals}, {contract.ProvisionerName, workflows.Provisioner}, {contract.LedgerName, workflows.Ledger},
		{contract.InstancesName, workflows.Instances}, {contract.SweepName, workflows.InstanceSweep}, {contract.LockWorkflow, workflows.Lock}, {contract.FreezeWorkflow, workflows.GlobalFreeze},
		{workflows.FreezeNoticesName, workflows.FreezeNotices}, {workflows.TicketWaitName, workflows.TicketWait},
	} {
		if !slices.Contains(except, w.name) {
			r.RegisterWorkflowWithOptions(w.fn, workflow.RegisterOptions{Name: w.name})
		}
	}
}

// Logger adapts zap to the Temporal SDK's logger, so SDK and Gantry logs share one format.
func Logger(z *zap.Logger) sdklog.Logger { return zapLogger{z.Sugar()} }

type zapLogger struct{ s *zap.SugaredLogger }

func (l zapLogger) Debug(msg string, kv ...any) { l.s.Debugw(msg, kv...) }
func (l zapLogger) Info(msg string, kv ...any)  { l.s.Infow(msg, kv...) }
func (l zapLogger) Warn(msg string, kv ...any)  { l.s.Warnw(msg, kv...) }
func (l zapLogger) Error(msg string, kv ...any) {
	// The SDK reports every failed activity as an error; a failed step is an outcome the
	// engine reports itself (node tree, CLI), not a fault of the worker.
	if msg == "Activity error." {
		l.s.Infow("step failed", kv...)
		return
	}
	l.s.Errorw(msg, kv...)
}

// With implements log.WithLogger.
func (l zapLogger) With(kv ...any) sdklog.Logger { return zapLogger{l.s.With(kv...)} }
