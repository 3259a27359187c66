// Package runner runs one step's command on behalf of gantry-helper: in a step container of
// a pod, and as the worker's child on a build machine. It reads a wire.Request, runs the
// command in a process group of its own, copies its output and ends with the result line. It
// links only the standard library, so the helper stays a small static binary.
package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gantry-cd/gantry/activities/container/wire"
)

// Run reads one request from stdin, runs it, copies its output to out and ends with the
// result line. It returns the command's exit code.
func Run(stdin io.Reader, out io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	var req wire.Request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gantry-helper run: read the request:", err)
		return 2
	}
	res := execute(req, in, out)
	b, _ := json.Marshal(res)
	fmt.Fprintf(out, "%s%s %s\n", wire.ResultPrefix, req.Nonce, b)
	if res.Error != "" && res.ExitCode == 0 {
		return 1
	}
	return res.ExitCode
}

func execute(req wire.Request, stdin *bufio.Reader, out io.Writer) wire.Result {
	dir := filepath.Join(helperDir(), "steps", req.Nonce)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return wire.Result{Error: "create the step's scratch directory: " + err.Error()}
	}
	if !req.Background { // a background program reads its script after the helper returned
		defer os.RemoveAll(dir)
	}
	subst := substituter(req.Secrets)
	argv, err := command(req, dir, subst)
	if err != nil {
		return wire.Result{Error: err.Error()}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = req.Dir
	if cmd.Dir != "" {
		if err := os.MkdirAll(cmd.Dir, 0o777); err != nil {
			cmd.Dir = ""
		}
	}
	cmd.Env = environment(req.Env, subst, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if req.Background {
		return background(cmd, req)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return wire.Result{Error: err.Error()}
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return wire.Result{ExitCode: 127, Error: fmt.Sprintf("start %s: %v", argv[0], err)}
	}
	w.Close()
	if req.GroupFile != "" {
		_ = RecordGroup(req.GroupFile, cmd.Process.Pid)
		defer os.Remove(req.GroupFile)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, r)
	}()
	// A closed stdin means the worker aborted the step or went away: stop the command.
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		select {
		case <-done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	// Processes the command left running may hold the pipe open: do not wait for them.
	select {
	case <-copied:
	case <-time.After(time.Second):
		r.Close()
	}
	res := wire.Result{}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = strings.TrimPrefix(unix(ws.Signal()), "SIG")
		res.ExitCode = 128 + int(ws.Signal())
	} else if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	} else if err != nil {
		res.ExitCode, res.Error = 1, err.Error()
	}
	if len(req.Outputs) > 0 && res.ExitCode == 0 {
		outs, err := readOutputs(filepath.Join(dir, "outputs"), req.Outputs)
		if err != nil {
			res.Error = err.Error()
		}
		res.Outputs = outs
	}
	return res
}

// helperDir is the helper's volume; GANTRY_HELPER_DIR moves it for tests outside a pod.
func helperDir() string {
	if d := os.Getenv("GANTRY_HELPER_DIR"); d != "" {
		return d
	}
	return wire.HelperDir
}

// background starts a step's program detached from the exec session, its output going to
// the request's log file, else the container's own log (the main process's stdout).
func background(cmd *exec.Cmd, req wire.Request) wire.Result {
	var log *os.File
	var err error
	if req.LogFile != "" {
		log, err = os.OpenFile(req.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	} else {
		log, err = os.OpenFile("/proc/1/fd/1", os.O_WRONLY, 0)
	}
	if err != nil {
		log, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return wire.Result{ExitCode: 127, Error: fmt.Sprintf("start %s: %v", cmd.Path, err)}
	}
	pid := cmd.Process.Pid
	if req.GroupFile != "" {
		_ = RecordGroup(req.GroupFile, pid)
	}
	_ = cmd.Process.Release()
	return wire.Result{PID: pid}
}

// command writes the step's script to dir and returns what runs it: the shell with a wrapper
// that records the output variables after the script, or the step's own entrypoint.
func command(req wire.Request, dir string, subst func(string) string) ([]string, error) {
	if req.Command == "" && len(req.Entrypoint) > 0 {
		return append(append([]string{}, req.Entrypoint...), req.Args...), nil
	}
	script := subst(req.Command)
	outputs := filepath.Join(dir, "outputs")
	write := func(name, text string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, []byte(text), 0o600)
	}
	user, err := write("script", script)
	if err != nil {
		return nil, err
	}
	shell := strings.ToLower(req.Shell)
	if len(req.Entrypoint) > 0 { // Background: an entrypoint runs the command
		return append(append([]string{}, req.Entrypoint...), script), nil
	}
	switch shell {
	case "", "sh", "bash":
		interp := "sh"
		if shell == "bash" {
			interp = "bash"
		}
		if len(req.Outputs) == 0 {
			return []string{interp, "-e", user}, nil
		}
		var w strings.Builder
		fmt.Fprintf(&w, "set -e\n. %q\n__gantry_rc=$?\n{ printf '%%s\\0'", user)
		for _, o := range req.Outputs {
			fmt.Fprintf(&w, ` "${%s-}"`, o)
		}
		fmt.Fprintf(&w, "; } > %q\nexit $__gantry_rc\n", outputs)
		wrapper, err := write("run.sh", w.String())
		if err != nil {
			return nil, err
		}
		return []string{interp, wrapper}, nil
	case "python":
		names, _ := json.Marshal(req.Outputs)
		w := fmt.Sprintf(`import os, sys
__g = {"__name__": "__main__"}
__rc = 0
try:
    exec(compile(open(%q).read(), %q, "exec"), __g)
except SystemExit as e:
    __rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
with open(%q, "w") as f:
    f.write("\0".join(str(__g.get(n, os.environ.get(n, ""))) for n in %s) + ("\0" if %s else ""))
sys.exit(__rc)
`, user, user, outputs, names, names)
		wrapper, err := write("run.py", w)
		if err != nil {
			return nil, err
		}
		py := "python3"
		if _, err := exec.LookPath(py); err != nil {
			py = "python"
		}
		return []string{py, wrapper}, nil
	case "pwsh", "powershell":
		var w strings.Builder
		fmt.Fprintf(&w, ". '%s'\n$__gantry_rc = $LASTEXITCODE\n$__gantry_out = @(", user)
		for i, o := range req.Outputs {
			if i > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(&w, "\"$%s\"", o)
		}
		fmt.Fprintf(&w, ")\n[IO.File]::WriteAllText('%s', (($__gantry_out | ForEach-Object { $_ + [char]0 }) -join ''))\nexit $__gantry_rc\n", outputs)
		wrapper, err := write("run.ps1", w.String())
		if err != nil {
			return nil, err
		}
		return []string{"pwsh", "-NoLogo", "-NonInteractive", "-File", wrapper}, nil
	}
	return nil, fmt.Errorf("shell %q is not one of Sh, Bash, Python, Pwsh", req.Shell)
}

// substituter replaces secret placeholders with the values of the environment variables the
// pod's Secret provides.
func substituter(secrets map[string]string) func(string) string {
	if len(secrets) == 0 {
		return func(s string) string { return s }
	}
	var pairs []string
	for placeholder, env := range secrets {
		pairs = append(pairs, placeholder, os.Getenv(env))
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// environment is the container's environment without the pod's secret variables, plus the
// step's own.
func environment(env map[string]string, subst func(string) string, dir string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, wire.SecretPrefix) {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+subst(v))
	}
	return append(out, "GANTRY_STEP_DIR="+dir)
}

func readOutputs(path string, names []string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("the command ended the shell before its output variables were read (an explicit exit?)")
		}
		return nil, err
	}
	values := strings.Split(string(b), "\x00")
	out := make(map[string]string, len(names))
	for i, n := range names {
		if i < len(values) {
			out[n] = values[i]
		}
	}
	return out, nil
}

func unix(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGSEGV:
		return "SEGV"
	case syscall.SIGABRT:
		return "ABRT"
	case syscall.SIGPIPE:
		return "PIPE"
	case syscall.SIGHUP:
		return "HUP"
	}
	return s.String()
}
