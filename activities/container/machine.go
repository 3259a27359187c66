package container

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/container/runner"
	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/shell"
	"github.com/gantry-cd/gantry/contract"
)

// Machine runs the CI stages that name a runtime on this worker's own machine (a build
// machine): each stage gets a workspace folder, and its container steps run there without a
// container, as the worker's user: Sh and Bash commands in subshells of the stage's fork
// servers (runScript), the others through gantry-helper's `run` (the program that runs them in
// pods). Either way a step whose worker dies is killed with its whole process group: the fork
// server's watcher or the helper sees the worker's end of a pipe close.
//
// A workspace is ROOT/NAME with work/ (the steps' workspace, HARNESS_WORKSPACE), gantry/ (the
// helper's scratch files, the process groups running in it, background steps' output) and
// lock, flock-ed by the worker using it: a workspace whose lock is free was left by a worker
// that died, and is cleaned (its recorded process groups killed) by the next that looks.
type Machine struct {
	Root    string
	Secrets secrets.Resolver
	Logs    logs.Store
	// Helper is the command that is gantry-helper (its `run` argument added), HelperEnv what
	// it needs in its environment besides the step's.
	Helper    []string
	HelperEnv []string
	// MaxStages bounds the workspaces this process keeps at once (0: no bound); a stage
	// beyond waits in WorkspaceStart.
	MaxStages int
	// Name names this worker in what it reports (host/pid).
	Name string
	// Closed reports whether a workflow run has closed: the workspaces of closed runs are
	// removed when another stage starts. nil: only WorkspaceStop removes them.
	Closed func(ctx context.Context, workflowID, runID string) (bool, error)
	Log    *zap.Logger
	// Containers, when set, runs the steps that name an image in containers on this machine.
	Containers *Containers

	mu   sync.Mutex
	live map[string]*workspace // by folder name
	// scripts runs the Sh and Bash commands of steps without an image (runScript).
	scripts     shell.Scripts
	scriptsOnce sync.Once
}

type workspace struct {
	lock       *os.File
	workflowID string
	runID      string
	// The supervisor runs the workspace's steps; without one, each step starts a helper.
	supervisor *exec.Cmd
	superIn    io.WriteCloser
	sock       string
	// The stage's network and Background containers, once a step ran in a container.
	netMu      sync.Mutex
	net        *stageNet
	background []backgroundContainer
	proxies    []*portProxy   // Background containers' portBindings
	removals   sync.WaitGroup // of step containers being removed
}

// groupGrace is how long a process group has between SIGTERM and SIGKILL.
const groupGrace = 5 * time.Second

func (m *Machine) log() *zap.Logger {
	if m.Log == nil {
		return zap.NewNop()
	}
	return m.Log
}

// dirs are a workspace's folders.
func (m *Machine) dirs(name string) (top, work, scratch string) {
	top = filepath.Join(m.Root, name)
	return top, filepath.Join(top, "work"), filepath.Join(top, "gantry")
}

// WorkspaceStart makes a stage's workspace, once this machine has room for another stage.
func (m *Machine) WorkspaceStart(ctx context.Context, in contract.PodInput) (contract.Workspace, error) {
	if err := os.MkdirAll(m.Root, 0o700); err != nil {
		return contract.Workspace{}, contract.Fail(contract.Unknown, "build machine %s: workspace root %s: %v", m.Name, m.Root, err)
	}
	m.Sweep()
	name := in.Name
	m.mu.Lock()
	if ws := m.live[name]; ws != nil { // a retried start: the folder is ours already
		m.mu.Unlock()
		_, work, _ := m.dirs(name)
		return contract.Workspace{Dir: work, Machine: m.Name}, nil
	}
	m.mu.Unlock()
	for !m.reserve(name) {
		activity.RecordHeartbeat(ctx, "waiting for a free stage slot")
		m.reapClosed(ctx)
		select {
		case <-ctx.Done():
			return contract.Workspace{}, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	top, work, scratch := m.dirs(name)
	fail := func(err error) (contract.Workspace, error) {
		m.release(name)
		os.RemoveAll(top)
		return contract.Workspace{}, contract.Fail(contract.Unknown, "build machine %s: make workspace %s: %v", m.Name, top, err)
	}
	for _, d := range []string{work, filepath.Join(scratch, "groups"), filepath.Join(scratch, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fail(err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(top, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fail(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return fail(err)
	}
	ws := &workspace{lock: lock, workflowID: in.WorkflowID, runID: in.RunID}
	if ws.supervisor, ws.superIn, ws.sock, err = m.supervise(top); err != nil {
		m.log().Warn("the workspace's steps start a helper each", zap.String("workspace", work), zap.Error(err))
	}
	m.mu.Lock()
	m.live[name] = ws
	m.mu.Unlock()
	m.log().Info("stage workspace made", zap.String("workspace", work), zap.String("stage", in.Group), zap.String("execution", in.ExecutionID))
	return contract.Workspace{Dir: work, Machine: m.Name}, nil
}

// reserve takes a stage slot for name unless MaxStages are taken.
func (m *Machine) reserve(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live == nil {
		m.live = map[string]*workspace{}
	}
	if m.MaxStages > 0 && len(m.live) >= m.MaxStages {
		return false
	}
	m.live[name] = &workspace{} // its lock follows
	return true
}

func (m *Machine) release(name string) *workspace {
	m.mu.Lock()
	defer m.mu.Unlock()
	ws := m.live[name]
	delete(m.live, name)
	return ws
}

// WorkspaceStop ends what the stage's steps left running (its background steps) and removes
// its workspace.
func (m *Machine) WorkspaceStop(ctx context.Context, in contract.PodInput) error {
	top, _, _ := m.dirs(in.Name)
	m.scripts.EndStage(in.Name)
	m.mu.Lock()
	ws := m.live[in.Name]
	m.mu.Unlock()
	if ws != nil && ws.supervisor != nil {
		ws.superIn.Close() // it ends the groups it knows, then exits
		done := make(chan struct{})
		go func() { _ = ws.supervisor.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(groupGrace + 5*time.Second):
			_ = ws.supervisor.Process.Kill()
		}
		ws.supervisor = nil
	}
	if ws != nil {
		ws.removals.Wait()
		for _, p := range ws.proxies {
			p.Close()
		}
		ws.proxies = nil
		for _, b := range ws.background {
			b.feed.Close() // the helper ends the service's process group
			b.out.Close()
		}
		ws.background = nil
	}
	if err := m.clean(top); err != nil {
		return contract.Fail(contract.Unknown, "build machine %s: remove workspace %s: %v", m.Name, top, err)
	}
	if ws := m.release(in.Name); ws != nil && ws.lock != nil {
		ws.lock.Close()
	}
	return nil
}

// clean kills the process groups recorded in a workspace, removes its containers and network,
// and removes it.
func (m *Machine) clean(top string) error {
	m.removeContainers(top)
	groups, _ := filepath.Glob(filepath.Join(top, "gantry", "groups", "*"))
	for _, g := range groups {
		if killed, err := runner.KillGroup(g, groupGrace); killed {
			m.log().Info("ended a process group a stage left running", zap.String("record", g))
		} else if err != nil {
			m.log().Warn("read a process group record", zap.String("record", g), zap.Error(err))
		}
	}
	return os.RemoveAll(top)
}

// Sweep cleans the workspaces that workers which died left under Root (their locks are free).
func (m *Machine) Sweep() {
	entries, err := os.ReadDir(m.Root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m.mu.Lock()
		_, mine := m.live[e.Name()]
		m.mu.Unlock()
		if mine {
			continue
		}
		top := filepath.Join(m.Root, e.Name())
		lock, err := os.OpenFile(filepath.Join(top, "lock"), os.O_RDWR, 0)
		if err != nil {
			continue // being made, or not a workspace
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			m.log().Warn("removing the workspace of a stage whose worker died", zap.String("workspace", top))
			if err := m.clean(top); err != nil {
				m.log().Warn("remove a dead worker's workspace", zap.String("workspace", top), zap.Error(err))
			}
		}
		lock.Close()
	}
}

// reapClosed removes this worker's workspaces whose stage workflows have closed without
// removing them (terminated from the Temporal UI or CLI).
func (m *Machine) reapClosed(ctx context.Context) {
	if m.Closed == nil {
		return
	}
	m.mu.Lock()
	var names []string
	for name, ws := range m.live {
		if ws.workflowID != "" {
			names = append(names, name)
		}
	}
	m.mu.Unlock()
	for _, name := range names {
		m.mu.Lock()
		ws := m.live[name]
		m.mu.Unlock()
		if ws == nil {
			continue
		}
		if closed, err := m.Closed(ctx, ws.workflowID, ws.runID); err == nil && closed {
			m.log().Info("removing the workspace of a stage that ended without removing it", zap.String("workflow", ws.workflowID))
			_ = m.WorkspaceStop(ctx, contract.PodInput{Name: name})
		}
	}
}

// Step runs a container step of a stage on this machine: Run, RunTests and Background without
// a container, GitClone into the workspace.
func (m *Machine) Step(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	if in.Pod == nil || in.Pod.Pod.Workspace == "" {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s has no build machine workspace", in.Type, in.StepPath)
	}
	if in.Pod.Pod.Machine != "" && in.Pod.Pod.Machine != m.Name {
		return contract.StepResult{}, contract.Fail(contract.DelegateRestart, "the stage runs on build machine %s, and this is %s: its workspace is not here; re-run the stage", in.Pod.Pod.Machine, m.Name)
	}
	work := in.Pod.Pod.Workspace
	top := filepath.Dir(work)
	if _, err := os.Stat(work); err != nil {
		return contract.StepResult{}, contract.Fail(contract.DelegateRestart, "build machine %s: the stage's workspace %s is gone (%v); re-run the stage", m.Name, work, err)
	}
	info := activity.GetInfo(ctx)
	log, err := m.Logs.OpenLazy(in.ExecutionID, in.StepPath,
		fmt.Sprintf("# gantry: %s attempt %d on build machine %s in %s", in.StepPath, info.Attempt, m.Name, work))
	if err != nil {
		return contract.StepResult{}, err
	}
	defer log.Close()
	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()
	mask := &secrets.Masker{}
	where := "build machine " + m.Name
	ended := func(err error) error {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(runCtx.Err(), context.DeadlineExceeded):
			return contract.Fail(contract.Timeout, "%s: the step ran longer than its timeout %s and was stopped", where, in.Timeout)
		}
		return err
	}
	kd, err := kindOf(in)
	if err != nil {
		return contract.StepResult{}, err
	}
	if kd.clones {
		res, err := cloneAndPut(runCtx, m.Secrets, in, filepath.Join(top, "gantry"), log, func(tmp, dest string) error {
			return moveInto(tmp, inWorkspace(dest, work))
		})
		if err != nil {
			return res, ended(err)
		}
		return res, log.Err()
	}
	var spec stepSpec
	var img imageSpec
	switch {
	case kd.builds(): // in the BuildKit image, as in a pod
		img.Privileged = "true"
		if m.Containers != nil {
			img.Image = cmp.Or(m.Containers.BuildKitImage, DefaultBuildKitImage)
		}
	case !kd.machine:
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s steps do not run on build machines (build machine %s)", in.Type, m.Name)
	default:
		if spec, err = kd.decode(in); err != nil {
			return contract.StepResult{}, err
		}
		img = spec.image
	}
	if img.Image != "" || kd.builds() {
		res, err := m.containerStep(ctx, runCtx, kd, in, spec, img, top, work, log, mask)
		if err != nil {
			return res, ended(err)
		}
		return res, log.Err()
	}
	req, err := m.request(ctx, kd, in, spec, work, mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	req.Nonce = nonce()
	var res wire.Result
	var last string
	if m.forkable(req) {
		res, last, err = m.runScript(runCtx, in.Pod.Pod.Name, top, req, log, mask)
	} else {
		req.GroupFile = filepath.Join(top, "gantry", "groups", req.Nonce)
		if req.Background {
			req.LogFile = filepath.Join(top, "gantry", "logs", req.Nonce+".log")
		}
		res, last, err = m.run(runCtx, in.Pod.Pod.Name, top, req, log, mask)
	}
	if err != nil {
		return contract.StepResult{}, ended(err)
	}
	if log.Err() != nil {
		return contract.StepResult{}, log.Err()
	}
	tests := machineReports(work, spec, log)
	if err := commandFailure(where, res, last, tests, mask); err != nil {
		return contract.StepResult{}, err
	}
	if kd.background {
		log.Line(fmt.Sprintf("# gantry: started (pid %d); it runs until the stage ends, its output in %s", res.PID, req.LogFile))
		return contract.StepResult{}, nil
	}
	return contract.StepResult{Outputs: outputVariables(spec, res, mask), Tests: tests}, nil
}

// request is what the helper runs: secrets resolved (masked in the log), the workspace as
// the working directory and HARNESS_WORKSPACE.
func (m *Machine) request(ctx context.Context, kd kind, in contract.StepInput, spec stepSpec, work string, mask *secrets.Masker) (wire.Request, error) {
	req, err := m.workspaceRequest(ctx, in, spec, work, mask)
	if err != nil {
		return req, err
	}
	if kd.background {
		req.Background = true
		if len(spec.Entrypoint) > 0 {
			req.Entrypoint = append(slices.Clone(spec.Entrypoint), spec.Args...)
		}
	}
	if req.Command == "" && len(req.Entrypoint) == 0 {
		return req, contract.Fail(contract.Unknown, "%s step %s has no command: without an image, a build machine has nothing else to run", in.Type, in.StepPath)
	}
	return req, nil
}

// workspaceRequest is a command step's request with its secrets resolved (masked in the
// log), dir (the workspace, as the command sees it) its working directory and
// HARNESS_WORKSPACE, and its output variables.
func (m *Machine) workspaceRequest(ctx context.Context, in contract.StepInput, spec stepSpec, dir string, mask *secrets.Masker) (wire.Request, error) {
	noStandIn := func(string) (string, bool) { return "", false }
	req, _, err := commandRequest(ctx, m.Secrets, mask, noStandIn, withWorkspace(in, dir), spec, dir)
	for _, o := range spec.OutputVariables {
		req.Outputs = append(req.Outputs, variable(o))
	}
	return req, err
}

// withWorkspace is in with HARNESS_WORKSPACE set to dir.
func withWorkspace(in contract.StepInput, dir string) contract.StepInput {
	in.Env = maps.Clone(in.Env)
	if in.Env == nil {
		in.Env = map[string]string{}
	}
	in.Env["HARNESS_WORKSPACE"] = dir
	return in
}

// forkable says a request runs as a ShellScript step's script does (runScript): an Sh or Bash
// command that is not a Background step's.
func (m *Machine) forkable(req wire.Request) bool {
	if req.Background || len(req.Entrypoint) > 0 {
		return false
	}
	_, _, ok := shell.Interpreter(cmp.Or(req.Shell, "Sh"))
	return ok
}

// runScript runs an Sh or Bash command as ShellScript steps run theirs (shell.Scripts): in a
// subshell of the stage's fork server, forked ahead, instead of a new shell through
// gantry-helper, whose exec costs more than the rest of the step. The fork server's process
// group, the step's included, dies with this worker, as the helper's would.
func (m *Machine) runScript(ctx context.Context, name, top string, req wire.Request, log *logs.Writer, mask *secrets.Masker) (wire.Result, string, error) {
	m.scriptsOnce.Do(func() { m.scripts.Env = stepEnviron() })
	res, err := m.scripts.Run(ctx, shell.Command{Stage: name, Shell: cmp.Or(req.Shell, "Sh"), Dir: req.Dir,
		Scratch: filepath.Join(top, "gantry", "steps", req.Nonce), Env: req.Env, Script: req.Command,
		Errexit: true, Outputs: req.Outputs}, log, mask)
	if err != nil {
		if ctx.Err() != nil {
			return wire.Result{}, "", ctx.Err()
		}
		return wire.Result{}, "", contract.Fail(contract.Unknown, "build machine %s: run the step's %s command: %v", m.Name, cmp.Or(req.Shell, "Sh"), err)
	}
	out := wire.Result{ExitCode: res.Code, Outputs: res.Outputs}
	if res.Code == 0 && len(req.Outputs) > 0 && res.Outputs == nil {
		out.Error = "the command ended the shell before its output variables were read (an explicit exit?)"
	}
	return out, res.Last, nil
}

// run runs one request through the workspace's supervisor (gantry-helper supervise), or
// through a gantry-helper of its own when the workspace has none, and returns its result and
// the last line of output. Cancelling ctx closes the step's connection (or the helper's
// stdin), which ends the step's process group.
func (m *Machine) run(ctx context.Context, name, top string, req wire.Request, log *logs.Writer, mask *secrets.Masker) (wire.Result, string, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return wire.Result{}, "", err
	}
	line = append(line, '\n')
	out := &output{nonce: req.Nonce, log: log, mask: mask}
	m.mu.Lock()
	sock := ""
	if ws := m.live[name]; ws != nil {
		sock = ws.sock
	}
	m.mu.Unlock()
	var errLast string
	dialed := false
	if sock != "" {
		dialed, err = m.runVia(ctx, sock, line, out)
	}
	if !dialed && ctx.Err() == nil { // no supervisor, or it is gone
		errLast, err = m.runHelper(ctx, top, line, out)
	}
	result, last := out.flush()
	if ctx.Err() != nil { // stopped: its result says only that it was killed
		return wire.Result{}, "", ctx.Err()
	}
	if result != nil {
		return *result, last, nil
	}
	return wire.Result{}, "", contract.Fail(contract.Unknown, "build machine %s: gantry-helper ended without a result (%v)%s", m.Name, err, lastLine(errLast))
}

// runVia sends a request to the workspace's supervisor and copies the step's output to out;
// dialed says whether the supervisor answered.
func (m *Machine) runVia(ctx context.Context, sock string, line []byte, out io.Writer) (dialed bool, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		m.log().Warn("the workspace's supervisor does not answer; the step starts a helper of its own", zap.String("socket", sock), zap.Error(err))
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() }) // the supervisor ends the step's group
	defer stop()
	defer c.Close()
	if _, err := c.Write(line); err != nil {
		return true, err
	}
	_, err = io.Copy(out, c)
	return true, err
}

// runHelper runs a request with a gantry-helper of its own, copying the step's output to out;
// it returns the helper's last line of errors.
func (m *Machine) runHelper(ctx context.Context, top string, line []byte, out *output) (string, error) {
	cmd, err := m.helper(top, "run")
	if err != nil {
		return "", err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	errOut := &output{log: out.log, mask: out.mask}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		return "", contract.Fail(contract.Unknown, "build machine %s: start gantry-helper %s: %v", m.Name, m.Helper[0], err)
	}
	if _, err := stdin.Write(line); err != nil {
		stdin.Close()
		_ = cmd.Wait()
		return "", contract.Fail(contract.Unknown, "build machine %s: send the step to gantry-helper: %v", m.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done(): // the helper ends the step's process group
		case <-exited:
		}
		stdin.Close()
	}()
	err = cmd.Wait()
	close(exited)
	_, errLast := errOut.flush()
	return errLast, err
}

// helper is gantry-helper with arg, in a process group of its own (a terminal's Ctrl-C to the
// worker must not kill it before it ends its steps), its scratch folder in the workspace.
func (m *Machine) helper(top, arg string) (*exec.Cmd, error) {
	if len(m.Helper) == 0 {
		return nil, contract.Fail(contract.Unknown, "build machine %s has no gantry-helper to run steps with", m.Name)
	}
	cmd := exec.Command(m.Helper[0], append(slices.Clone(m.Helper[1:]), arg)...)
	cmd.Env = append(stepEnviron(), m.HelperEnv...)
	cmd.Env = append(cmd.Env, "GANTRY_HELPER_DIR="+filepath.Join(top, "gantry"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// supervise starts the workspace's supervisor and returns it with its stdin (closing it ends
// the supervisor and what it runs) and its socket.
func (m *Machine) supervise(top string) (*exec.Cmd, io.WriteCloser, string, error) {
	cmd, err := m.helper(top, "supervise")
	if err != nil {
		return nil, nil, "", err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, "", err
	}
	var errs strings.Builder
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		return nil, nil, "", err
	}
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case sock := <-first:
		if sock != "" {
			return cmd, stdin, sock, nil
		}
	case <-time.After(10 * time.Second):
	}
	stdin.Close()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, nil, "", fmt.Errorf("gantry-helper supervise did not start: %s", strings.TrimSpace(errs.String()))
}

// stepEnviron is the worker's environment as the steps see it: without Gantry's own settings,
// which may name its secrets (GANTRY_SECRET_*, keys) and its server.
func stepEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GANTRY_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			out = append(out, kv)
		}
	}
	return out
}

// inWorkspace is where a path of the pod's workspace (/harness/...) or one relative to it
// lies in a build machine's workspace.
func inWorkspace(p, work string) string {
	switch {
	case p == wire.Workspace:
		return work
	case strings.HasPrefix(p, wire.Workspace+"/"):
		return filepath.Join(work, strings.TrimPrefix(p, wire.Workspace+"/"))
	case path.IsAbs(p):
		return p
	}
	return filepath.Join(work, p)
}

// moveInto moves the files of dir into dest (made if needed; what it holds stays, unless a
// file of dir takes its name). Both lie on the same filesystem.
func moveInto(dir, dest string) error {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		target := filepath.Join(dest, e.Name())
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), target); err != nil {
			return err
		}
	}
	return nil
}

// machineReports reads the JUnit reports a step names from the workspace; nil when it names
// none.
func machineReports(work string, spec stepSpec, log *logs.Writer) *contract.TestSummary {
	paths := junitPaths(spec.Reports)
	if len(paths) == 0 {
		return nil
	}
	patterns := make([]string, len(paths))
	for i, p := range paths {
		patterns[i] = inWorkspace(p, work)
	}
	var out bytes.Buffer
	if err := runner.Reports(&out, work, patterns); err != nil {
		log.Line(fmt.Sprintf("# gantry: test reports %v could not be read: %v", paths, err))
		return nil
	}
	return summarizeReports(&out, paths, log)
}
