// Package shell runs ShellScript steps (spec 11) with bash: environment variables in, output
// variables captured from the script's shell after it ends, output logged line by line with
// secrets masked, heartbeats while it runs, and the whole process group killed on timeout or
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
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
)

// MaxOutputBytes bounds the captured output variables (spec 11.2.6).
const MaxOutputBytes = 512 * 1024

// Spec is the ShellScript spec as the activity reads it.
type Spec struct {
	Shell  string `json:"shell"`
	Source struct {
		Type string `json:"type"`
		Spec struct {
			Script string `json:"script"`
		} `json:"spec"`
	} `json:"source"`
	EnvironmentVariables []Variable `json:"environmentVariables"`
	OutputVariables      []Variable `json:"outputVariables"`
}

// Variable is one name/type/value entry.
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Activity runs ShellScript steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// Bash is the interpreter; "" finds bash on PATH.
	Bash string
	// WorkDir holds one temporary workspace per step run; "" uses the system temp directory.
	WorkDir string
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run executes one ShellScript step.
func (a *Activity) Run(ctx context.Context, in activities.StepInput) (activities.StepResult, error) {
	var spec Spec
	if err := json.Unmarshal(in.Spec, &spec); err != nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "ShellScript spec: %v", err)
	}
	if spec.Shell != "" && !strings.EqualFold(spec.Shell, "Bash") && !strings.EqualFold(spec.Shell, "Sh") {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "shell %q is not available on this worker; use Bash", spec.Shell)
	}
	for _, o := range spec.OutputVariables {
		if !shellName.MatchString(str(o.Value)) {
			return activities.StepResult{}, activities.Fail(activities.Unknown,
				"output variable %q reads shell variable %q, which is not a valid shell variable name", o.Name, str(o.Value))
		}
	}

	mask := &secrets.Masker{}
	script, err := secrets.Expand(ctx, a.Secrets, mask, spec.Source.Spec.Script)
	if err != nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "%v", err)
	}
	env := os.Environ()
	for _, v := range spec.EnvironmentVariables {
		val, err := a.envValue(ctx, mask, v)
		if err != nil {
			return activities.StepResult{}, err
		}
		env = append(env, v.Name+"="+val)
	}

	log, err := a.Logs.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return activities.StepResult{}, err // an engine fault: Temporal retries it
	}
	defer log.Close()
	info := activity.GetInfo(ctx)
	log.Line(fmt.Sprintf("# gantry: %s attempt %d on %s (pid %d)", in.StepPath, info.Attempt, hostname(), os.Getpid()))

	dir, err := os.MkdirTemp(a.WorkDir, "gantry-step-")
	if err != nil {
		return activities.StepResult{}, fmt.Errorf("create step workspace: %w", err)
	}
	defer removeWorkspace(dir)
	if dir, err = filepath.Abs(dir); err != nil {
		return activities.StepResult{}, err
	}
	entry, err := writeScripts(dir, script, spec.OutputVariables)
	if err != nil {
		return activities.StepResult{}, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(runCtx, in.Timeout)
		defer cancel()
	}
	go heartbeat(runCtx, info.HeartbeatTimeout)

	lastLine, runErr := a.run(runCtx, spec, dir, entry, env, log, mask)
	switch {
	case ctx.Err() != nil:
		return activities.StepResult{}, ctx.Err() // aborted: the workflow decides
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return activities.StepResult{}, activities.Fail(activities.Timeout, "script ran longer than the step timeout %s and was killed", in.Timeout)
	case runErr != nil:
		var exit *exec.ExitError
		if errors.As(runErr, &exit) {
			msg := fmt.Sprintf("script exited with code %d", exit.ExitCode())
			if lastLine != "" {
				msg += "; last output: " + lastLine
			}
			return activities.StepResult{}, activities.Fail(activities.Unknown, "%s", msg)
		}
		return activities.StepResult{}, activities.Fail(activities.Unknown, "run bash: %v", runErr)
	}
	outputs, err := readOutputs(dir, spec.OutputVariables, mask)
	if err != nil {
		return activities.StepResult{}, err
	}
	if outputs == nil {
		return activities.StepResult{}, nil
	}
	return activities.StepResult{Outputs: map[string]any{"outputVariables": outputs}}, nil
}

// envValue resolves one environment variable; a Secret-typed value names a secret.
func (a *Activity) envValue(ctx context.Context, mask *secrets.Masker, v Variable) (string, error) {
	val := str(v.Value)
	if strings.EqualFold(v.Type, "Secret") && !strings.Contains(val, "<+secrets.") {
		s, err := a.Secrets.Resolve(ctx, val)
		if err != nil {
			return "", activities.Fail(activities.Unknown, "environment variable %s: %v", v.Name, err)
		}
		mask.Add(s)
		return s, nil
	}
	s, err := secrets.Expand(ctx, a.Secrets, mask, val)
	if err != nil {
		return "", activities.Fail(activities.Unknown, "environment variable %s: %v", v.Name, err)
	}
	if strings.EqualFold(v.Type, "Secret") {
		mask.Add(s)
	}
	return s, nil
}

const (
	userScript = "script.sh"
	wrapper    = "run.sh"
	outputFile = "outputs"
)

// writeScripts writes the user's script and returns the file to run. With output variables
// that is a wrapper that sources the script and then records them from the same shell, so they
// need no export. An explicit `exit` in the script ends the shell before that: outputs are then
// not captured (spec 11.2.5 Decision). Without output variables the script runs as it is.
func writeScripts(dir, script string, outs []Variable) (string, error) {
	if err := os.WriteFile(filepath.Join(dir, userScript), []byte(script), 0o600); err != nil {
		return "", fmt.Errorf("write step script: %w", err)
	}
	if len(outs) == 0 {
		return userScript, nil
	}
	var w strings.Builder
	w.WriteString(". \"$GANTRY_STEP_DIR/" + userScript + "\"\n__gantry_rc=$?\n{ printf '%s\\0'")
	for _, o := range outs {
		fmt.Fprintf(&w, ` "${%s-}"`, str(o.Value))
	}
	w.WriteString("; } > \"$GANTRY_STEP_DIR/" + outputFile + "\"\nexit $__gantry_rc\n")
	if err := os.WriteFile(filepath.Join(dir, wrapper), []byte(w.String()), 0o600); err != nil {
		return "", fmt.Errorf("write step script: %w", err)
	}
	return wrapper, nil
}

// removeWorkspace removes a step's workspace: the files Gantry wrote and the directory, or,
// when the script left files there, everything.
func removeWorkspace(dir string) {
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

// run starts bash in its own process group and logs its merged output; it returns the last
// output line for the failure message.
func (a *Activity) run(ctx context.Context, spec Spec, dir, entry string, env []string, log *logs.Writer, mask *secrets.Masker) (string, error) {
	args := []string{"--noprofile", "--norc", filepath.Join(dir, entry)}
	shell := a.Bash
	if shell == "" {
		shell = bashPath()
	}
	if strings.EqualFold(spec.Shell, "Sh") {
		// POSIX sh (dash on Debian) starts in less than half bash's time.
		shell, args = "/bin/sh", args[2:]
	}
	cmd := exec.CommandContext(ctx, shell, args...)
	cmd.Dir = dir
	cmd.Env = append(env, "GANTRY_STEP_DIR="+dir)
	cmd.SysProcAttr = procAttr()
	// Kill the whole group: a script's children (sleep, curl, ...) must not outlive the step.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	// An OS pipe the script writes to directly: no copying goroutine in between.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	if null := devNull(); null != nil {
		cmd.Stdin = null // saves opening /dev/null for every step
	}
	err = cmd.Start()
	_ = pw.Close() // the child holds its own copy; EOF comes when the script and its children exit
	if err != nil {
		return "", err
	}
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
	err = cmd.Wait()
	// Background children the script left may hold the pipe open: read what they write for
	// a moment more, then stop.
	_ = pr.SetReadDeadline(time.Now().Add(cmd.WaitDelay))
	<-done
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return last, err
}

// readOutputs reads the values the wrapper recorded.
func readOutputs(dir string, outs []Variable, mask *secrets.Masker) (map[string]any, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, outputFile))
	if err != nil {
		return nil, activities.Fail(activities.Unknown,
			"output variables could not be captured: the script ended with an explicit exit before they were recorded")
	}
	if len(b) > MaxOutputBytes {
		return nil, activities.Fail(activities.Unknown, "output variables total %d bytes, more than the %d byte limit", len(b), MaxOutputBytes)
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
				return nil, activities.Fail(activities.Unknown, "secret output variable %s is empty", o.Name)
			}
			mask.Add(v)
		}
		out[o.Name] = mask.Apply(v)
	}
	return out, nil
}

// heartbeat reports liveness so a lost worker is noticed within the heartbeat timeout.
func heartbeat(ctx context.Context, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	t := time.NewTicker(timeout / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			activity.RecordHeartbeat(ctx)
		}
	}
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}
