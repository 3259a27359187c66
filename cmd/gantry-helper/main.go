// Command gantry-helper runs inside the pod of a containerized step group. An init container
// copies it into a volume every step container mounts; each step container's main process is
// `gantry-helper wait`, and the worker runs each step with `gantry-helper run` through the
// Kubernetes exec API, sending the step on stdin and reading its output, exit code and output
// variables back (package activities/container/wire). It stays small and static: it links
// only the standard library.
package main

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"syscall"
	"time"

	"github.com/gantry-cd/gantry/activities/container/wire"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gantry-helper install DIR | wait | run | untar DIR | tar DIR PATH... | reports DIR PATTERN... | build BUILDCTL-ARG...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "install":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper install DIR")
			os.Exit(2)
		}
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper install:", err)
			os.Exit(1)
		}
	case "wait":
		wait()
	case "run":
		os.Exit(run(os.Stdin, os.Stdout))
	case "untar":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper untar DIR")
			os.Exit(2)
		}
		n, err := untar(os.Stdin, os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper untar:", err)
			os.Exit(1)
		}
		fmt.Printf("%d files written to %s\n", n, os.Args[2])
	case "tar":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper tar DIR PATH...")
			os.Exit(2)
		}
		if err := tarPaths(os.Stdout, os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper tar:", err)
			os.Exit(1)
		}
	case "build":
		os.Exit(build(os.Args[2:]))
	case "reports":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: gantry-helper reports DIR PATTERN...")
			os.Exit(2)
		}
		if err := reports(os.Stdout, os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "gantry-helper reports:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "gantry-helper: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// install copies this binary to DIR/bin and makes DIR/steps, writable by any user the step
// containers run as.
func install(dir string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(dir, "steps")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "steps"), 0o1777); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "bin", ".gantry-helper")
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, self); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "bin", "gantry-helper"))
}

// untar writes a tar stream's files under dir (created), refusing paths that leave it.
func untar(r io.Reader, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return n, fmt.Errorf("%s leaves %s", h.Name, dir)
		}
		target := filepath.Join(dir, name)
		mode := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return n, err
			}
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return n, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return n, err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return n, err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return n, err
			}
			if err := f.Close(); err != nil {
				return n, err
			}
			n++
		}
	}
}

// wait is a step container's main process: it keeps the container alive for the group's
// steps, reaps the processes they leave behind, and ends on SIGTERM.
func wait() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				var ws syscall.WaitStatus
				if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}

// run reads one request from stdin, runs it, copies its output to out and ends with the
// result line. It returns the command's exit code.
func run(stdin io.Reader, out io.Writer) int {
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
		return background(cmd)
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
// the container's own log (the main process's stdout).
func background(cmd *exec.Cmd) wire.Result {
	log, err := os.OpenFile("/proc/1/fd/1", os.O_WRONLY, 0)
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
