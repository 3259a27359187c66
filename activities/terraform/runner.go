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
	"sync"
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
func (r *Runner) runAs(ctx context.Context, commandType string, stdout io.Writer, args ...string) error {
	if commandType != "" {
		args = append(args, strings.Fields(r.Flags[commandType])...)
	}
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Dir = r.Dir
	rc := filepath.Join(r.Dir, ".gantry-tf.rc")
	if _, err := os.Stat(rc); err != nil {
		if err := os.WriteFile(rc, nil, 0o600); err != nil {
			return err
		}
	}
	cmd.Env = append(append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_CLI_CONFIG_FILE="+rc), r.Env...)
	var errs bytes.Buffer
	var log io.Writer = io.Discard
	if r.Log != nil {
		// The command's stdout and stderr are copied by two goroutines.
		log = &lockedWriter{w: r.Log}
	}
	if stdout == nil {
		stdout = log
	}
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(log, &errs)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errs.String())
		if len(msg) > 2000 {
			msg = msg[len(msg)-2000:]
		}
		return &CommandError{Command: filepath.Base(r.Bin) + " " + args[0], Dir: r.Dir, Err: err, Stderr: msg}
	}
	return nil
}

// CommandError is a command that failed: a step failure, not a fault of the worker.
type CommandError struct {
	Command, Dir string
	Err          error
	Stderr       string // its last 2,000 bytes
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s in %s: %v: %s", e.Command, e.Dir, e.Err, e.Stderr)
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
	args := []string{"plan", "-input=false", "-no-color", "-out=" + out}
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
	args := append([]string{"apply", "-input=false", "-no-color", "-auto-approve"}, strings.Fields(r.Flags["APPLY"])...)
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

// lockedWriter serialises writes from a command's two output streams.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
