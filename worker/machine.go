package worker

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gantry-cd/gantry/activities/container"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/workflows"
)

// DefaultMaxStages is how many CI stages a build machine runs at once by default.
const DefaultMaxStages = 2

// StepHelperArg makes the gantry binary act as gantry-helper (see StepHelper).
const StepHelperArg = "__step-helper"

// BuildMachines returns the workers of a build machine: one per task queue on which its
// stages are asked for (workflows.MachineQueue: Linux, and Linux on this architecture, each
// for every subset of its tags, none included, and with containerd each again for the stages
// that run containers), each taking Temporal sessions, the stage's
// hold on this machine, up to MaxStages. They share one workspace root and one bound on the
// stages running at once.
func BuildMachines(c client.Client, o Options) ([]sdkworker.Worker, error) {
	tags, err := tagSet(o.Tags)
	if err != nil {
		return nil, err
	}
	tq := o.TaskQueue
	if tq == "" {
		tq = workflows.TaskQueue
	}
	m := o.machine
	if m == nil {
		if m, err = newMachine(o, c); err != nil {
			return nil, err
		}
	}
	m.Sweep()
	max := o.MaxStages
	if max <= 0 {
		max = DefaultMaxStages
	}
	m.MaxStages = max
	kinds := []bool{false}
	if m.Containers != nil {
		kinds = append(kinds, true)
	}
	var out []sdkworker.Worker
	for _, subset := range subsets(tags) {
		for _, arch := range []string{"", runtime.GOARCH} {
			for _, containers := range kinds {
				w := sdkworker.New(c, workflows.MachineQueue(tq, "linux", arch, subset, containers), sdkworker.Options{
					EnableSessionWorker: true, MaxConcurrentSessionExecutionSize: max,
					MaxConcurrentActivityExecutionSize: o.MaxConcurrentSteps, WorkerStopTimeout: o.StopTimeout, DisableWorkflowWorker: true})
				RegisterMachine(w, m)
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// RegisterMachine registers a build machine's activities.
func RegisterMachine(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, m *container.Machine) {
	r.RegisterActivityWithOptions(m.WorkspaceStart, activity.RegisterOptions{Name: contract.WorkspaceStart})
	r.RegisterActivityWithOptions(m.WorkspaceStop, activity.RegisterOptions{Name: contract.WorkspaceStop})
	r.RegisterActivityWithOptions(stamped(m.Step), activity.RegisterOptions{Name: contract.MachineStep})
}

// newMachine is a build machine's step runner: workspaces under WORKDIR/build, steps run by
// the gantry-helper StepHelper finds.
func newMachine(o Options, c client.Client) (*container.Machine, error) {
	helper, err := StepHelper(o.StepHelper)
	if err != nil {
		return nil, err
	}
	root := o.WorkDir
	if root == "" {
		root = os.TempDir()
	}
	if o.Secrets == nil {
		o.Secrets = &secrets.Store{}
	}
	o.Secrets = secrets.Routed(o.Secrets, secretManagers)
	m := &container.Machine{Root: filepath.Join(root, "build"), Secrets: o.Secrets, Logs: o.Logs, Helper: helper,
		Name: workerName, Log: o.Log}
	if c != nil {
		m.Closed = closedFunc(c)
	}
	if o.Containerd != "" {
		static, err := staticHelper(helper)
		if err != nil {
			return nil, err
		}
		m.Containers = &container.Containers{Address: o.Containerd, Helper: static, BuildKitImage: o.BuildKitImage}
	}
	return m, nil
}

// staticHelper is the gantry-helper program bind-mounted into a build machine's containers:
// it must run in any image, so it must be statically linked.
func staticHelper(helper []string) (string, error) {
	const fix = "--containerd needs a statically linked gantry-helper beside gantry or on PATH: `make build` makes bin/gantry-helper, or CGO_ENABLED=0 go build ./cmd/gantry-helper"
	if len(helper) != 1 {
		return "", fmt.Errorf("%s (found only %s)", fix, strings.Join(helper, " "))
	}
	f, err := elf.Open(helper[0])
	if err != nil {
		return "", fmt.Errorf("%s: %s: %v", fix, helper[0], err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s: %s is dynamically linked", fix, helper[0])
		}
	}
	return helper[0], nil
}

// StepHelper is the command that runs gantry-helper on a build machine: the one given, else
// gantry-helper beside this program or on PATH (a small program, quick to start), else this
// program itself when it is gantry (which serves StepHelperArg).
func StepHelper(given []string) ([]string, error) {
	if len(given) > 0 {
		return given, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("build machine: find this program: %w", err)
	}
	if p := filepath.Join(filepath.Dir(self), "gantry-helper"); isExecutable(p) {
		return []string{p}, nil
	}
	if p, err := exec.LookPath("gantry-helper"); err == nil {
		return []string{p}, nil
	}
	return []string{self, StepHelperArg}, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
