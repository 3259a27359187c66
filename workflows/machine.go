package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// buildMachine is a CI stage's session on a build machine.
type buildMachine struct {
	*stageRun
	session workflow.Context // the session on the machine
	host    string           // that machine's worker
}

// A CI stage that names a runtime runs on a build machine (issue: runtime Cloud and Docker
// without a cluster): a worker started with --build-machine. The stage holds a Temporal
// session on one machine from its workspace's creation to its removal, so that all its steps
// share the workspace, and a machine takes at most as many sessions as its --max-stages.
// Plans without Pod.Machine never come here: older histories replay unchanged.

const (
	// LockMachine is the resource kind a stage waiting for a build machine shows.
	LockMachine = "build machine"
	// machineHeartbeat is how soon a stage learns its machine is gone.
	machineHeartbeat = 10 * time.Second
	// machineWait bounds the wait for a machine; the stage's and pipeline's timeouts bound it
	// first when they are set.
	machineWait = 30 * 24 * time.Hour
	// machineCleanupWait bounds the wait for a machine to take its workspace's removal.
	machineCleanupWait = 30 * time.Second
)

// MachineQueue is the task queue on which the build machines of a platform and delegate
// tags take stages: "" os is Linux, "" arch any machine's; containers: only the machines
// that run containers (--containerd).
func MachineQueue(base, os, arch string, selectors []string, containers bool) string {
	q := base + "/build-machine/" + strings.ToLower(cmp.Or(os, "linux"))
	if arch != "" {
		q += "-" + strings.ToLower(arch)
	}
	if containers {
		q += "+containers"
	}
	if len(selectors) > 0 {
		q = SelectorQueue(q, selectors)
	}
	return q
}

// machineKey says which machine a stage waits for, as people read it.
func machineKey(m plan.Machine) string {
	key := strings.ToLower(cmp.Or(m.OS, "linux"))
	if m.Arch != "" {
		key += "/" + strings.ToLower(m.Arch)
	}
	if len(m.Selectors) > 0 {
		key += " with tags " + strings.Join(m.Selectors, ", ")
	}
	if m.Containers {
		key += ", running containers"
	}
	return key
}

// startMachine waits, RESOURCE_WAITING, until a build machine of the stage's platform and tags
// takes the stage, and makes its workspace there.
func (s *buildMachine) startMachine(ctx workflow.Context, n *plan.Node, t *Node, fqn string, fr *frame) (*contract.PodInput, *contract.Failure) {
	scope := expressions.NewScope(s.rootFor(fr), fqn)
	opts := expressions.Options{Unresolved: expressions.UnresolvedFail}
	m := *n.Pod.Machine
	for _, f := range []*string{&m.OS, &m.Arch} {
		if !expressions.Has(*f) {
			continue
		}
		v, err := expressions.RenderString(*f, scope, opts)
		if err != nil {
			return nil, &contract.Failure{Category: contract.Unknown, Message: "platform: " + err.Error()}
		}
		*f = v
	}
	if m.OS != "" && !strings.EqualFold(m.OS, "Linux") {
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("platform os %s: Gantry's build machines are Linux machines", m.OS)}
	}
	shared, err := renderSpec(n.Pod.SharedPaths, scope, opts, "", func(string) bool { return false })
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "sharedPaths: " + err.Error()}
	}
	queue := MachineQueue(workflow.GetInfo(ctx).TaskQueueName, m.OS, m.Arch, m.Selectors, m.Containers)
	prev, since := t.Status, workflow.Now(ctx)
	t.Status, t.Resource = status.ResourceWaiting, &ResourceView{Kind: LockMachine, Key: machineKey(m)}
	s.publish(ctx)
	sctx, err := workflow.CreateSession(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue}),
		&workflow.SessionOptions{CreationTimeout: machineWait, ExecutionTimeout: machineWait, HeartbeatTimeout: machineHeartbeat})
	if err != nil {
		t.Status, t.Resource = prev, nil
		if ctx.Err() != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted while waiting for a build machine"}
		}
		return nil, &contract.Failure{Category: contract.DelegateProvisioning,
			Message: fmt.Sprintf("no build machine (%s) took the stage: %v; start one with `gantry worker --build-machine%s`", machineKey(m), err, map[bool]string{true: " --containerd SOCKET"}[m.Containers])}
	}
	info := workflow.GetInfo(ctx)
	in := &contract.PodInput{ExecutionID: s.in.ExecutionID, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Group: t.Path, Name: podName(s.in.ExecutionID, t.Path, n.ID),
		Pod: plan.Pod{Machine: &m, SharedPaths: shared, Git: n.Pod.Git, Registries: n.Pod.Registries, Aws: n.Pod.Aws}}
	// The machine may still wait for one of its stages to end (a stage slot, --max-stages):
	// the stage shows waiting until its workspace is made.
	ao := s.pods.podOptions(t.Path + " (workspace)")
	ao.StartToCloseTimeout, ao.HeartbeatTimeout = machineWait, machineHeartbeat
	var ws contract.Workspace
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(sctx, ao), contract.WorkspaceStart, in).Get(ctx, &ws)
	t.Status, t.Resource = prev, nil
	if err != nil {
		workflow.CompleteSession(sctx)
		if f := s.machineLost(); f != nil {
			return nil, f
		}
		if ctx.Err() != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted while waiting for a build machine"}
		}
		return nil, contract.Classify(err)
	}
	if waited := workflow.Now(ctx).Sub(since); waited >= time.Second {
		t.Notes = append(t.Notes, fmt.Sprintf("waited %s for a build machine (%s)", waited.Round(time.Second), machineKey(m)))
	}
	in.Workspace, in.Machine = ws.Dir, ws.Machine
	t.Notes = append(t.Notes, fmt.Sprintf("on build machine %s, workspace %s", ws.Machine, ws.Dir))
	s.session, s.host = sctx, ws.Machine
	s.publish(ctx)
	return in, nil
}

// stopMachine removes the stage's workspace, and what its steps left running, whatever ended
// the stage, then frees the machine for another stage.
func (s *buildMachine) stopMachine(ctx workflow.Context, pod *contract.PodInput) {
	if s.session == nil {
		return
	}
	sctx, lost := s.session, s.machineLost()
	s.session = nil
	if lost == nil {
		// A machine that went away meanwhile never takes it (its session fails later): the
		// next worker on the machine removes the workspace then.
		dctx, _ := workflow.NewDisconnectedContext(sctx)
		ao := s.pods.podOptions(pod.Group + " (workspace cleanup)")
		ao.ScheduleToStartTimeout = machineCleanupWait
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, ao), contract.WorkspaceStop, pod).Get(dctx, nil)
		if err != nil {
			workflow.GetLogger(ctx).Warn("remove the stage's workspace", "machine", pod.Machine, "workspace", pod.Workspace, "error", err)
		}
	}
	workflow.CompleteSession(sctx)
}

// onMachine is a context whose activities run on the stage's build machine, cancelled when
// ctx is (an abort, a timeout) or the machine is lost; release ends the link.
func (s *buildMachine) onMachine(ctx workflow.Context) (workflow.Context, func()) {
	mctx, cancel := workflow.WithCancel(s.session)
	done := workflow.NewChannel(ctx)
	workflow.Go(ctx, func(g workflow.Context) {
		sel := workflow.NewSelector(g)
		sel.AddReceive(g.Done(), func(workflow.ReceiveChannel, bool) { cancel() })
		sel.AddReceive(done, func(workflow.ReceiveChannel, bool) {})
		sel.Select(g)
	})
	return mctx, func() { done.Close() }
}

// machineLost is the failure of a step whose build machine went away (its worker stopped
// heartbeating the session): its workspace went with it.
func (s *buildMachine) machineLost() *contract.Failure {
	if s.session == nil {
		return nil
	}
	if info := workflow.GetSessionInfo(s.session); info == nil || info.SessionState != workflow.SessionStateFailed {
		return nil
	}
	return &contract.Failure{Category: contract.DelegateRestart,
		Message: fmt.Sprintf("build machine %s stopped running the stage (its worker is gone); the stage's workspace is lost with it: re-run the stage", s.host)}
}

// localMachines are the build machines this process serves, by name: a step of a stage whose
// machine is this process may run as a local activity (machineFastPath). Written at worker
// start, copied on write.
var localMachines atomic.Pointer[[]string]

// ServeMachine tells the workflows of this process that it is the build machine name.
func ServeMachine(name string) {
	for {
		old := localMachines.Load()
		var names []string
		if old != nil {
			names = slices.Clone(*old)
		}
		if slices.Contains(names, name) {
			return
		}
		names = append(names, name)
		if localMachines.CompareAndSwap(old, &names) {
			return
		}
	}
}

// servesMachine reports whether this process is the build machine name.
func servesMachine(name string) bool {
	names := localMachines.Load()
	return names != nil && slices.Contains(*names, name)
}

// machineFastPath decides whether a step of a stage on a build machine runs as a local
// activity: when the worker running the stage's workflow is the machine itself (the embedded
// worker of gantry run and gantry server, a single worker), with the limits of the ShellScript
// fast path (a timeout up to FastPathMaxTimeout, no concurrent siblings, the fast path on).
// Where the workflow runs is not deterministic: the answer is recorded, per step, in history.
func (s *buildMachine) machineFastPath(ctx workflow.Context, timeout time.Duration) bool {
	set := s.in.Settings
	if set.NoFastPath || timeout > set.FastPathMaxTimeout || isConcurrent(ctx) || s.host == "" {
		return false
	}
	host := s.host
	var here bool
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return servesMachine(host) }).Get(&here); err != nil {
		return false
	}
	return here
}
