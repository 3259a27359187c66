// Package shell runs ShellScript steps (spec 11) with bash or /bin/sh, usually in a subshell
// of the stage's fork server (forkserver.go): environment variables in, output variables
// captured from the script's shell after it ends, output logged line by line with secrets
// masked, heartbeats while it runs, and the whole process group killed on timeout or
// cancellation.
package shell

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/sshexec"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// MaxOutputBytes bounds the captured output variables (spec 11.2.6).
const MaxOutputBytes = 512 * 1024

// Spec is a ShellScript step's spec, the type validation decoded it into; Variable one of its
// variables.
type (
	Spec     = stepspec.ShellScriptSpec
	Variable = stepspec.NameTypeValue
)

// Activity runs ShellScript steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// Bash is the interpreter; "" finds bash on PATH.
	Bash string
	// WorkDir holds one temporary workspace per step run; "" uses the system temp directory.
	WorkDir string
	// KnownHosts is the known_hosts file a target host's key is checked against ("" accepts
	// any key, said in the step's log).
	KnownHosts string

	scripts  Scripts
	removing sync.WaitGroup // workspaces being removed after their step
}

// Close waits until the workspaces of finished steps are removed and ends the idle fork
// servers. Call it after the worker stopped.
func (a *Activity) Close() {
	a.removing.Wait()
	a.scripts.Close()
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run executes one ShellScript step.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	spec, err := parseSpec(in.Spec)
	if err != nil {
		return contract.StepResult{}, err
	}
	mask := &secrets.Masker{}
	script, names, values, err := a.prepare(ctx, spec, mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	info := activity.GetInfo(ctx)
	if spec.OnDelegate == "false" && spec.ExecutionTarget != nil {
		return a.runOnTarget(ctx, in, spec, script, names, values, mask)
	}
	// The log file is created with the step's first output line: a silent step costs no file.
	log, err := a.Logs.OpenLazy(in.ExecutionID, in.StepPath,
		fmt.Sprintf("# gantry: %s attempt %d on %s (pid %d)", in.StepPath, info.Attempt, hostname(), os.Getpid()))
	if err != nil {
		return contract.StepResult{}, err // an engine fault: Temporal retries it
	}
	defer log.Close()

	shell, args := a.interpreter(spec.Shell)
	key := shell + "\x00" + forkKey(in)
	dir := a.scripts.forks.workspace(key)
	if dir == "" {
		if dir, err = newWorkspace(a.WorkDir); err != nil {
			return contract.StepResult{}, err
		}
	}
	defer func() {
		if len(spec.OutputVariables) > 0 {
			_ = os.Remove(filepath.Join(dir, outputFile)) // read by now
		}
		if a.scripts.forks.keepWorkspace(key, dir) {
			return
		}
		// Removed while the workflow moves on to the next step.
		a.removing.Add(1)
		go func() {
			defer a.removing.Done()
			removeWorkspace(dir)
		}()
	}()

	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()

	st := step{key: key, shell: shell, args: args, dir: dir, script: script, names: names, values: values, outs: outputNames(spec.OutputVariables)}
	lastLine, code, runErr := a.scripts.run(runCtx, st, log, mask)
	if err := outcome(ctx, runCtx, in, log.Err(), runErr, code, lastLine); err != nil {
		return contract.StepResult{}, err
	}
	outputs, err := readOutputs(dir, spec.OutputVariables, mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	if outputs == nil {
		return contract.StepResult{}, nil
	}
	return contract.StepResult{Outputs: map[string]any{"outputVariables": outputs}}, nil
}

// parseSpec reads a ShellScript spec and refuses what no worker can run: another shell, an
// output variable that is not a shell variable's name.
func parseSpec(raw json.RawMessage) (Spec, error) {
	spec, err := stepspec.Decode[Spec](raw)
	if err != nil {
		return spec, contract.Fail(contract.Unknown, "ShellScript spec: %v", err)
	}
	if spec.Source == nil || spec.Source.Spec == nil {
		spec.Source = &stepspec.ScriptSource{Spec: &stepspec.ScriptInline{}} // no script: an empty one, as before
	}
	if spec.Shell != "" && !strings.EqualFold(spec.Shell, "Bash") && !strings.EqualFold(spec.Shell, "Sh") {
		return spec, contract.Fail(contract.Unknown, "shell %q is not available on this worker; use Bash", spec.Shell)
	}
	for _, o := range spec.OutputVariables {
		if !shellName.MatchString(string(o.Value)) {
			return spec, contract.Fail(contract.Unknown,
				"output variable %q reads shell variable %q, which is not a valid shell variable name", o.Name, string(o.Value))
		}
	}

	return spec, nil
}

// prepare resolves the secrets of the script and of the environment variables, masking
// their values in the step's log.
func (a *Activity) prepare(ctx context.Context, spec Spec, mask *secrets.Masker) (script string, names, values []string, err error) {
	script, err = secrets.Expand(ctx, a.Secrets, mask, spec.Source.Spec.Script)
	if err != nil {
		return "", nil, nil, contract.Fail(contract.Unknown, "%v", err)
	}
	names = make([]string, len(spec.EnvironmentVariables))
	values = make([]string, len(spec.EnvironmentVariables))
	for i, v := range spec.EnvironmentVariables {
		val, err := a.envValue(ctx, mask, v)
		if err != nil {
			return "", nil, nil, err
		}
		names[i], values[i] = v.Name, val
	}
	return script, names, values, nil
}

// outcome is the step's failure, nil when the script exited 0: lost output and failures of the
// engine are errors Temporal retries, an abort is the workflow's, a timeout and a non-zero
// exit are the step's own.
func outcome(ctx, runCtx context.Context, in contract.StepInput, logErr, runErr error, code int, lastLine string) error {
	switch {
	case logErr != nil:
		return logErr // output was lost: an engine fault, Temporal runs the step again
	case ctx.Err() != nil:
		return ctx.Err() // aborted: the workflow decides
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.Fail(contract.Timeout, "script ran longer than the step timeout %s and was killed", in.Timeout)
	case errors.Is(runErr, errWorkspace):
		return runErr // an engine fault: Temporal retries it
	case runErr != nil:
		return contract.Fail(contract.Unknown, "run the shell: %v", runErr)
	case code != 0:
		msg := fmt.Sprintf("script exited with code %d", code)
		if lastLine != "" {
			msg += "; last output: " + lastLine
		}
		return contract.Fail(contract.Unknown, "%s", msg)
	}
	return nil
}

// envValue resolves one environment variable; a Secret-typed value names a secret.
func (a *Activity) envValue(ctx context.Context, mask *secrets.Masker, v Variable) (string, error) {
	s, err := secrets.Value(ctx, a.Secrets, mask, v.Type, string(v.Value))
	if err != nil {
		return "", contract.Fail(contract.Unknown, "environment variable %s: %v", v.Name, err)
	}
	return s, nil
}

const (
	userScript = "script.sh"
	wrapper    = "run.sh"
	outputFile = "outputs"
)

// writeScripts writes the user's script and returns the file to run. With output variables
// that is a wrapper that sources the script and then records them (outputTail). Without output
// variables the script runs as it is.
func writeScripts(dir, script string, outs []string) (string, error) {
	if len(outs) == 0 {
		script = lifelineWatcher + script // the entry starts the watcher
	}
	if err := os.WriteFile(filepath.Join(dir, userScript), []byte(script), 0o600); err != nil {
		return "", fmt.Errorf("write step script: %w", err)
	}
	if len(outs) == 0 {
		return userScript, nil
	}
	w := lifelineWatcher + ". \"$GANTRY_STEP_DIR/" + userScript + "\"\n" + outputTail(outs)
	if err := os.WriteFile(filepath.Join(dir, wrapper), []byte(w), 0o600); err != nil {
		return "", fmt.Errorf("write step script: %w", err)
	}
	return wrapper, nil
}

// lifelineWatcher starts, on the first line of a step that runs in a shell of its own (so the
// script's line numbers do not move), a watcher in the step's process group that kills the
// group when the worker dies: it waits on the lifeline (fd 3), where a line means the step
// ended and end of file means the worker is gone. Pdeathsig ends only the shell itself, and a
// script's children (a migration, a sleep) must not go on running unwatched while the stage
// that held their lock moves on. It is started from a subshell that exits at once, so it is no
// job of the script's shell (a bare `wait` would wait for it). Signals the step sends its own
// group (`kill 0`) do not end it: a trapped signal interrupts read, which is read again.
const lifelineWatcher = `( ( trap 's=1' HUP INT TERM USR1 USR2 ALRM; while :; do s=; read -r l <&3 && exit 0; [ -n "$s" ] || kill -9 0; done ) </dev/null >/dev/null 2>&1 & ); exec 3<&-; `

// outputTail records the output variables from the shell that ran the script, so they need no
// export. An explicit `exit` in the script ends the shell before that: outputs are then not
// captured (spec 11.2.5 Decision).
func outputTail(outs []string) string {
	if len(outs) == 0 {
		return ""
	}
	var w strings.Builder
	w.WriteString("__gantry_rc=$?\n{ printf '%s\\0'")
	for _, o := range outs {
		fmt.Fprintf(&w, ` "${%s-}"`, o)
	}
	w.WriteString("; } > \"$GANTRY_STEP_DIR/" + outputFile + "\"\nexit $__gantry_rc\n")
	return w.String()
}

// removeWorkspace removes a step's workspace: the directory when it is empty (a forked step
// without output variables leaves nothing), else the files Gantry wrote and the directory, or,
// when the script left files there, everything.
func removeWorkspace(dir string) {
	if syscall.Rmdir(dir) == nil {
		return
	}
	for _, f := range []string{userScript, wrapper, outputFile} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	if os.Remove(dir) != nil {
		_ = os.RemoveAll(dir)
	}
}

// hostname names this worker's host in step logs.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// devNull is /dev/null opened once, the scripts' standard input.
var devNull = sync.OnceValue(func() *os.File {
	f, _ := os.Open(os.DevNull)
	return f
})

// bashPath is bash's location, looked up once rather than on every step.
var bashPath = sync.OnceValue(func() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "bash"
})

// outputNames are the shell variables a ShellScript step's output variables read.
func outputNames(outs []Variable) []string {
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = string(o.Value)
	}
	return names
}

// step is what run needs of a step's command.
type step struct {
	key, shell, script string
	// dir holds Gantry's files for the step (GANTRY_STEP_DIR); work is the command's working
	// directory, dir when "".
	dir, work           string
	args, names, values []string
	outs                []string // shell variables recorded after the script (outputTail)
	errexit             bool     // set -e, as a container step's command runs
}

// workDir is where the step's command runs.
func (st step) workDir() string {
	if st.work != "" {
		return st.work
	}
	return st.dir
}

// newWorkspace creates an empty, private step workspace and returns its absolute path.
func newWorkspace(base string) (string, error) {
	dir, err := os.MkdirTemp(base, "gantry-step-")
	if err != nil {
		return "", fmt.Errorf("create step workspace: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	return abs, nil
}

// forkKey names the fork server a step may use: one per stage of an execution.
func forkKey(in contract.StepInput) string {
	stage, _, _ := strings.Cut(in.StepPath, ".")
	return in.ExecutionID + "/" + stage
}

// interpreter returns the shell to run and its arguments before a script: bash unless the
// step says Sh.
func (a *Activity) interpreter(shell string) (string, []string) {
	if strings.EqualFold(shell, "Sh") {
		sh, args, _ := Interpreter(shell)
		return sh, args
	}
	bash, args, _ := Interpreter("Bash")
	if a.Bash != "" {
		bash = a.Bash
	}
	return bash, args
}

// run runs the script, in a subshell of the stage's fork server where it can, else in a shell
// of its own, and logs its merged output. It returns the last output line for the failure
// message and the exit code.
func (s *Scripts) run(ctx context.Context, st step, log *logs.Writer, mask *secrets.Masker) (string, int, error) {
	// An OS pipe the script writes to directly: no copying goroutine in between.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", 0, err
	}
	defer pr.Close()
	var last string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := mask.Apply(sc.Text())
			log.Line(line)
			if strings.TrimSpace(line) != "" {
				last = line
			}
		}
	}()
	code, err := s.forked(ctx, st, pw)
	if errors.Is(err, errNoFork) {
		code, err = s.execute(ctx, st, pw)
	}
	_ = pw.Close()
	// Background children the script left may hold the pipe open: read what they write for
	// a moment more, then stop.
	_ = pr.SetReadDeadline(time.Now().Add(outputGrace))
	<-done
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return last, code, err
}

// outputGrace is how long a step's output is read after its shell ended.
const outputGrace = 2 * time.Second

var (
	errNoFork = errors.New("no fork server for this step")
	// errBodyTooBig: the step's body did not fit in the pipe it is handed over in.
	errBodyTooBig = errors.New("the step's body does not fit in a pipe")
	errWorkspace  = errors.New("step workspace")
)

// forked runs the step in a subshell of the stage's fork server; errNoFork means it did not run.
func (s *Scripts) forked(ctx context.Context, st step, out *os.File) (int, error) {
	if !forkable(st.script, st.names, st.values) {
		return 0, errNoFork
	}
	body := forkBody(st)
	if len(body) > maxForkBody {
		return 0, errNoFork
	}
	f := s.forks.take(st.key, st.shell, st.args, s.Env)
	if f == nil {
		return 0, errNoFork
	}
	code, ran, err := f.run(ctx, body, out)
	s.forks.give(st.key, f)
	if errors.Is(err, errBodyTooBig) {
		return 0, errNoFork
	}
	if err != nil || (!ran && ctx.Err() == nil) {
		// The step did not start: this worker's steps start their own shells from now on.
		s.forks.disable(fmt.Errorf("%w: %v", errForkDidNotRun, err))
		return 0, errNoFork
	}
	return code, nil
}

// execute starts the shell on the script in its own process group.
func (s *Scripts) execute(ctx context.Context, st step, out *os.File) (int, error) {
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return 0, fmt.Errorf("%w: %v", errWorkspace, err)
	}
	entry, err := writeScripts(st.dir, st.script, st.outs)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errWorkspace, err)
	}
	args := slices.Clone(st.args)
	if st.errexit {
		args = append(args, "-e")
	}
	cmd := exec.CommandContext(ctx, st.shell, append(args, filepath.Join(st.dir, entry))...)
	cmd.Dir = st.workDir()
	cmd.Env = slices.Clone(s.Env)
	if s.Env == nil {
		cmd.Env = os.Environ()
	}
	for i, n := range st.names {
		cmd.Env = append(cmd.Env, n+"="+st.values[i])
	}
	cmd.Env = append(cmd.Env, "GANTRY_STEP_DIR="+st.dir)
	lifeline, keep, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("%w: lifeline: %v", errWorkspace, err)
	}
	defer func() {
		_, _ = keep.WriteString("q\n") // the step ended: its watcher leaves quietly
		_ = keep.Close()
	}()
	defer lifeline.Close()
	cmd.ExtraFiles = []*os.File{lifeline}
	cmd.SysProcAttr = procAttr()
	// Kill the whole group: a script's children (sleep, curl, ...) must not outlive the step.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = outputGrace
	cmd.Stdout, cmd.Stderr = out, out
	if null := devNull(); null != nil {
		cmd.Stdin = null // saves opening /dev/null for every step
	}
	err = cmd.Run()
	if ctx.Err() != nil && cmd.Process != nil {
		awaitStopped(out, cmd.Process.Pid)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// readOutputs reads the values the wrapper recorded.
func readOutputs(dir string, outs []Variable, mask *secrets.Masker) (map[string]any, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, outputFile))
	if err != nil {
		return nil, contract.Fail(contract.Unknown,
			"output variables could not be captured: the script ended with an explicit exit before they were recorded")
	}
	if len(b) > MaxOutputBytes {
		return nil, contract.Fail(contract.Unknown, "output variables total %d bytes, more than the %d byte limit", len(b), MaxOutputBytes)
	}
	vals := bytes.Split(b, []byte{0})
	out := make(map[string]any, len(outs))
	for i, o := range outs {
		v := ""
		if i < len(vals) {
			v = string(vals[i])
		}
		if strings.EqualFold(o.Type, "Secret") {
			if v == "" {
				return nil, contract.Fail(contract.Unknown, "secret output variable %s is empty", o.Name)
			}
			mask.Add(v)
		}
		out[o.Name] = mask.Apply(v)
	}
	return out, nil
}

// runOnTarget runs the script on the executionTarget's host over SSH, as the SSH credential
// resolved before the run (docs/traditional.md), in its working directory.
func (a *Activity) runOnTarget(ctx context.Context, in contract.StepInput, spec Spec, script string, names, values []string, mask *secrets.Masker) (contract.StepResult, error) {
	et := spec.ExecutionTarget
	cr, ok := plan.SSHCredential{}, false
	if in.Refs != nil {
		cr, ok = in.Refs.SSH[et.ConnectorRef]
	}
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the SSH credential %q of the target host was not resolved before the run: define it as a `secret:` of type SSHKey beside the pipeline", et.ConnectorRef)
	}
	target, err := sshexec.TargetFor(ctx, a.Secrets, mask, cr, et.Host, a.KnownHosts)
	if err != nil {
		return contract.StepResult{}, err
	}
	sess, err := sshexec.Open(ctx, a.Logs, in, target)
	if err != nil {
		return contract.StepResult{}, err
	}
	defer sess.Close()
	log, c, runCtx := sess.Log, sess.Client, sess.Ctx
	env := make(map[string]string, len(names))
	for i, n := range names {
		env[n] = values[i]
	}
	var outs []string
	for _, o := range spec.OutputVariables {
		outs = append(outs, string(o.Value))
	}
	out := &logs.Lines{Log: log, Mask: mask}
	code, got, err := c.RunOutputs(runCtx, script, et.WorkingDirectory, env, out, outs)
	out.Flush()
	switch {
	case ctx.Err() != nil:
		return contract.StepResult{}, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.StepResult{}, contract.Fail(contract.Timeout, "script ran longer than the step timeout %s on host %s", in.Timeout, target.Addr())
	case err != nil:
		return contract.StepResult{}, err
	case code != 0:
		msg := fmt.Sprintf("script exited with code %d on host %s", code, target.Addr())
		if last := out.Last(); last != "" {
			msg += "; last output: " + last
		}
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s", msg)
	}
	if log.Err() != nil || len(spec.OutputVariables) == 0 {
		return contract.StepResult{}, log.Err()
	}
	vars := map[string]any{}
	for _, o := range spec.OutputVariables {
		v := got[string(o.Value)]
		if strings.EqualFold(o.Type, "Secret") && v != "" {
			mask.Add(v)
		}
		vars[o.Name] = mask.Apply(v)
	}
	return contract.StepResult{Outputs: map[string]any{"outputVariables": vars}}, nil
}
