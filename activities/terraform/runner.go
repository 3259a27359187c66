// Package terraform runs an OpenTofu or Terraform binary on a configuration folder for the
// Terraform steps (issue 55): init with a backend configuration, a workspace, a plan saved to a
// file with its change counts and JSON, an apply of exactly that plan, a destroy, and the
// outputs. The binary is the worker's (`--terraform-bin`, hack/tofu/build.sh builds OpenTofu);
// nothing here talks to a registry: providers come from the folder's own lock and mirror.
package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Runner runs one binary in one configuration folder.
type Runner struct {
	// Bin is the tofu or terraform binary.
	Bin string
	// Dir is the configuration folder (the root module).
	Dir string
	// Env are extra NAME=VALUE variables (the step's environmentVariables, credentials).
	Env []string
	// Log receives the commands' output as they run (the step's log, masked by its writer).
	Log io.Writer
	// Flags are extra arguments by command (the step's commandFlags: INIT, WORKSPACE, PLAN,
	// APPLY, DESTROY), each a string of whitespace-separated flags.
	Flags map[string]string
	// Mirror is a filesystem mirror of providers (registry host/namespace/type/version/os_arch
	// folders): the only place providers install from. "" installs from their registries.
	Mirror string
	// LockTimeout is how long a plan or an apply waits for the state lock another process
	// holds (a lost worker's command finishing its apply); 0 fails at once.
	LockTimeout time.Duration
}

// lockWait is the -lock-timeout argument, if any.
func (r *Runner) lockWait() []string {
	if r.LockTimeout <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("-lock-timeout=%ds", int(r.LockTimeout.Seconds()))}
}

// PlanOptions are what a plan (or a destroy) is made of.
type PlanOptions struct {
	// Destroy plans the removal of everything the state holds.
	Destroy bool
	// VarFiles are paths of .tfvars files, in order (later ones win).
	VarFiles []string
	// Targets limit the plan to these resource addresses.
	Targets []string
	// Out is where the saved plan goes (a file in the folder when empty).
	Out string
	// SkipRefresh plans without refreshing the state first (skipRefreshCommand).
	SkipRefresh bool
	// Unread skips reading the saved plan back (`show -json`): no counts, no JSON. An apply
	// of a plan just made needs neither, and saves a run of the binary.
	Unread bool
}

// Plan is a saved plan and what it changes.
type Plan struct {
	File string
	// Add, Change and Destroy count resources as the plan's summary does (a replacement
	// counts once in Add and once in Destroy).
	Add, Change, Destroy int
	// JSON is `show -json` of the plan (for exportTerraformPlanJson). It holds the values of
	// sensitive variables and attributes in plain text: never log or export it unmasked.
	JSON []byte
}

// Output is one root module output.
type Output struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive"`
}

// run runs the binary with args in the folder; its output goes to the log. The CLI
// configuration file is an empty one of the folder's, so a user's ~/.terraformrc never
// changes what a step does.
func (r *Runner) run(ctx context.Context, stdout io.Writer, args ...string) error {
	return r.runAs(ctx, "", stdout, args...)
}

// runAs is run with the step's commandFlags of a command type appended.
//
// A streamed command writes into a file of the folder, which is copied to the log as it
// grows, never into a pipe to this process: a worker that dies mid-apply leaves the command
// running to its end (writing the state and releasing its lock), where a broken pipe would
// kill it halfway. Cancelling (an abort) interrupts it as Ctrl-C does, so it stops cleanly.
func (r *Runner) runAs(ctx context.Context, commandType string, stdout io.Writer, args ...string) error {
	if commandType != "" {
		args = append(args, strings.Fields(r.Flags[commandType])...)
	}
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Dir = r.Dir
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = interruptGrace
	rc := filepath.Join(r.Dir, ".gantry-tf.rc")
	if _, err := os.Stat(rc); err != nil {
		if err := os.WriteFile(rc, []byte(r.cliConfig()), 0o600); err != nil {
			return err
		}
	}
	cmd.Env = append(append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_CLI_CONFIG_FILE="+rc), r.Env...)
	out, err := os.CreateTemp(r.Dir, ".gantry-out-*.log")
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stderr = out
	if stdout != nil {
		cmd.Stdout = stdout
	} else {
		cmd.Stdout = out
	}
	done := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		follow(out.Name(), r.Log, done)
	}()
	err = cmd.Run()
	close(done)
	<-copied
	if err != nil {
		msg := strings.TrimSpace(tail(out.Name(), 2000))
		return &CommandError{Command: filepath.Base(r.Bin) + " " + args[0], Dir: r.Dir, Err: err, Output: msg}
	}
	return nil
}

// cliConfig is the CLI configuration the commands run with: nothing from the user's
// ~/.terraformrc, and the provider mirror when there is one.
func (r *Runner) cliConfig() string {
	if r.Mirror == "" {
		return ""
	}
	return fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", r.Mirror)
}

// interruptGrace is how long an interrupted command may take to stop before it is killed.
var interruptGrace = 5 * time.Minute

// follow copies a growing file to w until done is closed, then the rest.
func follow(name string, w io.Writer, done <-chan struct{}) {
	f, err := os.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err == nil {
			continue
		}
		select {
		case <-done:
			_, _ = io.CopyBuffer(w, f, buf)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail returns the last n bytes of a file.
func tail(name string, n int64) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// CommandError is a command that failed: a step failure, not a fault of the worker.
type CommandError struct {
	Command, Dir string
	Err          error
	Output       string // the last 2,000 bytes of its output
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s in %s: %v: %s", e.Command, e.Dir, e.Err, e.Output)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Init initialises the folder: the backend (with backendConfig, a file of key = value lines,
// when given) and the providers.
func (r *Runner) Init(ctx context.Context, backendConfig string) error {
	args := []string{"init", "-input=false", "-no-color"}
	if backendConfig != "" {
		args = append(args, "-backend-config="+backendConfig)
	}
	return r.runAs(ctx, "INIT", nil, args...)
}

// Workspace selects a workspace, creating it the first time ("" and "default" keep the
// default one).
func (r *Runner) Workspace(ctx context.Context, name string) error {
	if name == "" || name == "default" {
		return nil
	}
	args := append([]string{"workspace", "select", "-or-create=true", "-no-color"}, strings.Fields(r.Flags["WORKSPACE"])...)
	return r.run(ctx, nil, append(args, name)...)
}

// Plan makes a plan and saves it.
func (r *Runner) Plan(ctx context.Context, o PlanOptions) (*Plan, error) {
	out := o.Out
	if out == "" {
		out = filepath.Join(r.Dir, "gantry.tfplan")
	}
	args := append([]string{"plan", "-input=false", "-no-color", "-out=" + out}, r.lockWait()...)
	if o.Destroy {
		args = append(args, "-destroy")
	}
	if o.SkipRefresh {
		args = append(args, "-refresh=false")
	}
	for _, f := range o.VarFiles {
		args = append(args, "-var-file="+f)
	}
	for _, t := range o.Targets {
		args = append(args, "-target="+t)
	}
	command := "PLAN"
	if o.Destroy {
		command = "DESTROY"
	}
	if err := r.runAs(ctx, command, nil, args...); err != nil {
		return nil, err
	}
	if o.Unread {
		return &Plan{File: out}, nil
	}
	var js bytes.Buffer
	if err := r.run(ctx, &js, "show", "-json", "-no-color", out); err != nil {
		return nil, err
	}
	p := &Plan{File: out, JSON: js.Bytes()}
	var shown struct {
		ResourceChanges []struct {
			Change struct {
				Actions []string `json:"actions"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(p.JSON, &shown); err != nil {
		return nil, fmt.Errorf("read the plan of %s: %w", r.Dir, err)
	}
	for _, rc := range shown.ResourceChanges {
		a := rc.Change.Actions
		if slices.Contains(a, "create") {
			p.Add++
		}
		if slices.Contains(a, "delete") {
			p.Destroy++
		}
		if slices.Contains(a, "update") {
			p.Change++
		}
	}
	return p, nil
}

// Apply applies exactly a saved plan. A plan whose state changed since it was made (applied
// already, by this step's earlier attempt or by anyone) is refused by the binary as stale, so
// a retried step never applies twice.
func (r *Runner) Apply(ctx context.Context, planFile string) error {
	// A saved plan takes no planning flags: only APPLY's (e.g. -parallelism=n) go before it.
	args := append(append([]string{"apply", "-input=false", "-no-color", "-auto-approve"}, r.lockWait()...), strings.Fields(r.Flags["APPLY"])...)
	return r.run(ctx, nil, append(args, planFile)...)
}

// Outputs reads the root module's outputs from the state.
func (r *Runner) Outputs(ctx context.Context) (map[string]Output, error) {
	var js bytes.Buffer
	if err := r.run(ctx, &js, "output", "-json", "-no-color"); err != nil {
		return nil, err
	}
	out := map[string]Output{}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("read the outputs of %s: %w", r.Dir, err)
	}
	return out, nil
}
