package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// Activity runs the TerraformPlan, TerraformApply, TerraformDestroy and TerraformRollback
// steps with the worker's binary.
type Activity struct {
	// Bin is the tofu or terraform binary; "" finds tofu, then terraform, on PATH.
	Bin string
	// Mirror is the folder providers install from (--terraform-plugins); "" their registries.
	Mirror string
	// Keys seal plans and configurations kept with their provisioner.
	Keys    *codec.Keys
	Records Records
	Secrets secrets.Resolver
	Logs    logs.Store
	Git     *gitstore.Fetcher
	// WorkDir holds one folder per step attempt, removed after it; "" is the system temp
	// directory.
	WorkDir string
}

// sealed is what a record keeps: the configuration, and for a plan the plan file.
type sealed struct {
	Config *Config `json:"config"`
	Plan   []byte  `json:"plan,omitempty"`
}

// maxPlanJSON bounds the plan JSON a TerraformPlan exports as an output.
const maxPlanJSON = 256 << 10

// Run runs one step.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "step type %s is not a Terraform step", in.Type)
	}
	spec, err := h.read(in.Spec)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s spec: %v", in.Type, err)
	}
	if spec.ProvisionerIdentifier == "" {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: provisionerIdentifier is empty", in.Type)
	}
	if a.Keys == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: this worker has no keys to seal plans with", in.Type)
	}
	if in.Refs == nil || a.Records == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: this worker keeps no provisioner records (no Temporal client)", in.Type)
	}
	if spec.needsConfiguration && spec.plan == nil && spec.apply == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s needs configuration", in.Type)
	}
	bin, err := a.binary()
	if err != nil {
		return contract.StepResult{}, err
	}
	info := activity.GetInfo(ctx)
	log, err := a.Logs.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return contract.StepResult{}, err // an engine fault: Temporal retries it
	}
	defer log.Close()
	mask := &secrets.Masker{}
	out := &logs.Lines{Log: log, Mask: mask}
	defer out.Flush()
	out.Line(fmt.Sprintf("# gantry: %s (%s, provisioner %s) attempt %d with %s", in.StepPath, in.Type, spec.ProvisionerIdentifier, info.Attempt, filepath.Base(bin)))

	runCtx, cancel := contract.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()

	s := &run{a: a, in: in, spec: spec, bin: bin, log: out, mask: mask, attempt: info.Attempt}
	res, err := h.run(s, runCtx)
	switch {
	case log.Err() != nil:
		return contract.StepResult{}, log.Err()
	case ctx.Err() != nil:
		return contract.StepResult{}, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.StepResult{}, contract.Fail(contract.Timeout, "%s ran longer than the step timeout %s", in.Type, in.Timeout)
	case err != nil:
		var app *temporal.ApplicationError
		var cmd *CommandError
		switch {
		case errors.As(err, &app):
			return contract.StepResult{}, err
		case errors.As(err, &cmd):
			return contract.StepResult{}, contract.Fail(contract.Unknown, "%s: %s", cmd.Command, mask.Apply(cmd.Output))
		}
		// Anything else (the records unreachable, a full disk) is the worker's: Temporal
		// retries the step, which never applies a plan twice.
		return contract.StepResult{}, errors.New(mask.Apply(err.Error()))
	}
	return res, nil
}

func (a *Activity) binary() (string, error) {
	if a.Bin != "" {
		return a.Bin, nil
	}
	for _, name := range []string{"tofu", "terraform"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", contract.Fail(contract.Unknown, "this worker has no OpenTofu or Terraform binary: start it with --terraform-bin (hack/tofu/build.sh builds OpenTofu)")
}

// run is one step attempt.
type run struct {
	a       *Activity
	in      contract.StepInput
	spec    step
	bin     string
	log     *logs.Lines
	mask    *secrets.Masker
	attempt int32
}

// step is what the family's code reads of a step, from the spec type of its step type
// (stepspec's, the one validation decoded).
type step struct {
	ProvisionerIdentifier string
	needsConfiguration    bool
	plan                  *stepspec.TerraformPlanConfig // TerraformPlan's configuration
	apply                 *stepspec.TerraformStepConfig // TerraformApply's or TerraformDestroy's
	commandFlags          []stepspec.TerraformFlag
	skipRefresh           stepspec.Text
}

// handler reads one step type's spec and runs it.
type handler struct {
	read func(raw []byte) (step, error)
	run  func(*run, context.Context) (contract.StepResult, error)
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.TerraformPlan: {readPlan, (*run).plan},
	stepspec.TerraformApply: {readApply, func(s *run, ctx context.Context) (contract.StepResult, error) {
		return s.applyOrDestroy(ctx, false)
	}},
	stepspec.TerraformDestroy: {readApply, func(s *run, ctx context.Context) (contract.StepResult, error) {
		return s.applyOrDestroy(ctx, true)
	}},
	stepspec.TerraformRollback: {readRollback, (*run).rollback},
}

func readPlan(raw []byte) (step, error) {
	sp, err := stepspec.Decode[stepspec.TerraformPlanSpec](raw)
	st := step{ProvisionerIdentifier: sp.ProvisionerIdentifier, needsConfiguration: true, plan: sp.Configuration}
	if c := sp.Configuration; c != nil {
		st.commandFlags, st.skipRefresh = c.CommandFlags, c.SkipRefreshCommand
	}
	return st, err
}

func readApply(raw []byte) (step, error) {
	sp, err := stepspec.Decode[stepspec.TerraformApplySpec](raw)
	st := step{ProvisionerIdentifier: sp.ProvisionerIdentifier, needsConfiguration: true, apply: sp.Configuration}
	if c := sp.Configuration; c != nil {
		st.commandFlags, st.skipRefresh = c.CommandFlags, c.SkipRefreshCommand
	}
	return st, err
}

func readRollback(raw []byte) (step, error) {
	sp, err := stepspec.Decode[stepspec.TerraformRollbackSpec](raw)
	return step{ProvisionerIdentifier: sp.ProvisionerIdentifier, commandFlags: sp.CommandFlags, skipRefresh: sp.SkipRefreshCommand}, err
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

// flags are the step's commandFlags by command type.
func (s *run) flags() map[string]string {
	out := map[string]string{}
	for _, f := range s.spec.commandFlags {
		out[f.CommandType] = strings.TrimSpace(out[f.CommandType] + " " + f.Flag)
	}
	return out
}

func (s *run) skipRefresh() bool { return s.spec.skipRefresh == "true" }

// prepared is a configuration laid out and initialised in a folder of its own.
type prepared struct {
	runner   *Runner
	varFiles []string
	dir      string
}

// prepare writes the configuration into a new folder, expands its secrets, and runs init and
// the workspace selection.
func (s *run) prepare(ctx context.Context, c *Config) (*prepared, func(), error) {
	dir, err := os.MkdirTemp(s.a.WorkDir, "tf-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	expand := func(text string) (string, error) { return secrets.Expand(ctx, s.a.Secrets, s.mask, text) }
	varFiles, backend, err := c.write(dir, expand)
	if err != nil {
		cleanup()
		return nil, nil, contract.Fail(contract.Unknown, "%v", err)
	}
	env := []string{}
	for _, e := range c.Env {
		v, err := s.envValue(ctx, e)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		env = append(env, e.Name+"="+v)
	}
	r := &Runner{Bin: s.bin, Dir: dir, Env: env, Log: s.log, Flags: s.flags(), LockTimeout: s.in.Timeout, Mirror: s.a.Mirror}
	s.log.Line(fmt.Sprintf("# configuration: %s", c.Source))
	if err := r.Init(ctx, backend); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := r.Workspace(ctx, c.Workspace); err != nil {
		cleanup()
		return nil, nil, err
	}
	return &prepared{runner: r, varFiles: varFiles, dir: dir}, cleanup, nil
}

// envValue resolves one environment variable; a Secret's value names a secret (or holds a
// secret reference) and is masked in the log.
func (s *run) envValue(ctx context.Context, e EnvVar) (string, error) {
	v, err := secrets.Value(ctx, s.a.Secrets, s.mask, e.Type, e.Value)
	if err != nil {
		return "", contract.Fail(contract.Unknown, "environment variable %s: %v", e.Name, err)
	}
	return v, nil
}

func (s *run) config(ctx context.Context, f *stepspec.TerraformFiles) (*Config, error) {
	return fetchConfig(ctx, s.a.Git, s.in.Refs, f)
}

func (s *run) project() string { return s.in.Refs.Project }

func (s *run) record(ctx context.Context, kind string, sl sealed) error {
	b, err := json.Marshal(sl)
	if err != nil {
		return err
	}
	box, err := Seal(s.a.Keys, b)
	if err != nil {
		return err
	}
	return s.a.Records.Record(ctx, s.project(), s.spec.ProvisionerIdentifier, contract.ProvisionerRecord{
		Kind: kind, Execution: s.in.ExecutionID, Step: s.in.StepPath, Time: time.Now().UTC(), Sealed: box})
}

// find returns the newest record matching q, opened; nil when there is none.
func (s *run) find(ctx context.Context, q contract.ProvisionerQuery) (*contract.ProvisionerRecord, *sealed, error) {
	r, err := s.a.Records.Find(ctx, s.project(), s.spec.ProvisionerIdentifier, q)
	if err != nil || r == nil {
		return nil, nil, err
	}
	plain, err := Open(s.a.Keys, r.Sealed)
	if err != nil {
		return nil, nil, contract.Fail(contract.Verification, "provisioner %s: the %s kept by %s: %v", s.spec.ProvisionerIdentifier, r.Kind, r.Step, err)
	}
	var sl sealed
	if err := json.Unmarshal(plain, &sl); err != nil {
		return nil, nil, err
	}
	return r, &sl, nil
}

// plan makes and keeps a plan.
func (s *run) plan(ctx context.Context) (contract.StepResult, error) {
	cf := s.spec.plan
	destroy := cf.Command == "Destroy"
	c, err := s.config(ctx, &cf.TerraformFiles)
	if err != nil {
		return contract.StepResult{}, err
	}
	p, cleanup, err := s.prepare(ctx, c)
	if err != nil {
		return contract.StepResult{}, err
	}
	defer cleanup()
	pl, err := p.runner.Plan(ctx, PlanOptions{Destroy: destroy, VarFiles: p.varFiles, Targets: c.Targets, SkipRefresh: s.skipRefresh()})
	if err != nil {
		return contract.StepResult{}, err
	}
	file, err := os.ReadFile(pl.File)
	if err != nil {
		return contract.StepResult{}, err
	}
	if len(file)+c.size() > maxConfigBytes*2 {
		return contract.StepResult{}, contract.Fail(contract.Verification, "the saved plan is %d KiB; Gantry keeps plans of at most %d KiB between the steps", len(file)>>10, maxConfigBytes*2>>10)
	}
	kind := contract.RecordKindPlan
	if destroy {
		kind = contract.RecordKindDestroyPlan
	}
	if err := s.record(ctx, kind, sealed{Config: c, Plan: file}); err != nil {
		return contract.StepResult{}, err
	}
	s.log.Line(fmt.Sprintf("# plan kept sealed with provisioner %s: %d to add, %d to change, %d to destroy", s.spec.ProvisionerIdentifier, pl.Add, pl.Change, pl.Destroy))
	out := map[string]any{"add": pl.Add, "change": pl.Change, "destroy": pl.Destroy, "hasChanges": pl.Add+pl.Change+pl.Destroy > 0,
		"provisionerIdentifier": s.spec.ProvisionerIdentifier}
	if cf.ExportTerraformPlanJson == "true" {
		js, err := Redact(pl.JSON, s.mask.Values()...)
		if err != nil {
			return contract.StepResult{}, err
		}
		if len(js) > maxPlanJSON {
			s.log.Line(fmt.Sprintf("# the plan's JSON is %d KiB, more than the %d KiB an output holds: not exported", len(js)>>10, maxPlanJSON>>10))
		} else {
			out["tfPlanJson"] = string(js)
		}
	}
	return contract.StepResult{Outputs: out}, nil
}

// applyOrDestroy applies (or destroys with) an inherited plan, the last applied configuration
// (a destroy's InheritFromApply) or an inline configuration.
func (s *run) applyOrDestroy(ctx context.Context, destroy bool) (contract.StepResult, error) {
	cf := s.spec.apply
	var c *Config
	var planFile []byte
	switch cf.Type {
	case "InheritFromPlan":
		kind := contract.RecordKindPlan
		if destroy {
			kind = contract.RecordKindDestroyPlan
		}
		_, sl, err := s.find(ctx, contract.ProvisionerQuery{Kinds: []string{kind}, Execution: s.in.ExecutionID})
		if err != nil {
			return contract.StepResult{}, err
		}
		if sl == nil {
			cmd := "Apply"
			if destroy {
				cmd = "Destroy"
			}
			return contract.StepResult{}, contract.Fail(contract.Verification,
				"provisioner %s has no plan of this execution to inherit: run a TerraformPlan with command %s and provisionerIdentifier %s before this step",
				s.spec.ProvisionerIdentifier, cmd, s.spec.ProvisionerIdentifier)
		}
		c, planFile = sl.Config, sl.Plan
	case "InheritFromApply":
		_, sl, err := s.find(ctx, contract.ProvisionerQuery{Kinds: []string{contract.RecordKindApplied, contract.RecordKindRollback}})
		if err != nil {
			return contract.StepResult{}, err
		}
		if sl == nil {
			return contract.StepResult{}, contract.Fail(contract.Verification, "provisioner %s has applied nothing to inherit", s.spec.ProvisionerIdentifier)
		}
		c = sl.Config
	default:
		if cf.Spec == nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "an Inline configuration needs spec")
		}
		var err error
		if c, err = s.config(ctx, cf.Spec); err != nil {
			return contract.StepResult{}, err
		}
	}
	if destroy {
		if err := s.destroy(ctx, c, planFile); err != nil {
			return contract.StepResult{}, err
		}
		return contract.StepResult{Outputs: map[string]any{"provisionerIdentifier": s.spec.ProvisionerIdentifier}}, nil
	}
	outputs, err := s.apply(ctx, c, planFile, contract.RecordKindApplied)
	if err != nil {
		return contract.StepResult{}, err
	}
	return contract.StepResult{Outputs: outputs}, nil
}

// apply applies a configuration: its saved plan when given (exactly that plan), otherwise a
// plan made now. It records the configuration before (applying) and after (kind).
func (s *run) apply(ctx context.Context, c *Config, planFile []byte, kind string) (map[string]any, error) {
	p, cleanup, err := s.prepare(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := s.record(ctx, contract.RecordKindApplying, sealed{Config: c}); err != nil {
		return nil, err
	}
	if planFile != nil {
		file := filepath.Join(p.dir, ".gantry-inherited.tfplan")
		if err := os.WriteFile(file, planFile, 0o600); err != nil {
			return nil, err
		}
		if err := p.runner.Apply(ctx, file); err != nil {
			if !isStale(err) {
				return nil, err
			}
			// The state moved on since the plan: by this step's earlier attempt (a worker lost
			// mid-apply) or by someone else. A fresh plan with nothing to do says the plan is
			// applied; anything else is a change nobody approved.
			fresh, perr := p.runner.Plan(ctx, PlanOptions{VarFiles: p.varFiles, Targets: c.Targets, Out: filepath.Join(p.dir, ".gantry-check.tfplan")})
			if perr != nil {
				return nil, perr
			}
			if fresh.Add+fresh.Change+fresh.Destroy > 0 || s.attempt == 1 {
				return nil, contract.Fail(contract.Verification,
					"provisioner %s: the state changed since the plan was made (%d to add, %d to change, %d to destroy now); the inherited plan was not applied: plan again",
					s.spec.ProvisionerIdentifier, fresh.Add, fresh.Change, fresh.Destroy)
			}
			s.log.Line("# the plan was applied by an earlier attempt of this step: the state already matches it")
		}
	} else {
		pl, err := p.runner.Plan(ctx, PlanOptions{VarFiles: p.varFiles, Targets: c.Targets, SkipRefresh: s.skipRefresh(), Unread: true})
		if err != nil {
			return nil, err
		}
		if err := p.runner.Apply(ctx, pl.File); err != nil {
			return nil, err
		}
	}
	outs, err := p.runner.Outputs(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.record(ctx, kind, sealed{Config: c}); err != nil {
		return nil, err
	}
	result := map[string]any{"provisionerIdentifier": s.spec.ProvisionerIdentifier}
	names := make([]string, 0, len(outs))
	for name, o := range outs {
		names = append(names, name)
		if o.Sensitive {
			result[name] = Masked
			continue
		}
		result[name] = o.Value
	}
	sort.Strings(names)
	s.log.Line(fmt.Sprintf("# applied; outputs: %s", strings.Join(names, ", ")))
	return result, nil
}

// destroy destroys what a configuration manages, with its saved destroy plan when given.
func (s *run) destroy(ctx context.Context, c *Config, planFile []byte) error {
	p, cleanup, err := s.prepare(ctx, c)
	if err != nil {
		return err
	}
	defer cleanup()
	file := filepath.Join(p.dir, ".gantry-inherited.tfplan")
	if planFile != nil {
		if err := os.WriteFile(file, planFile, 0o600); err != nil {
			return err
		}
	} else {
		pl, err := p.runner.Plan(ctx, PlanOptions{Destroy: true, VarFiles: p.varFiles, Targets: c.Targets, SkipRefresh: s.skipRefresh(), Unread: true})
		if err != nil {
			return err
		}
		file = pl.File
	}
	if err := p.runner.Apply(ctx, file); err != nil {
		if !isStale(err) || s.attempt == 1 {
			return err
		}
		s.log.Line("# the destroy plan was applied by an earlier attempt of this step")
	}
	return s.record(ctx, contract.RecordKindDestroyed, sealed{Config: c})
}

// rollback re-applies the provisioner's configuration from before this execution; when this
// execution applied its first configuration, it destroys what that created.
func (s *run) rollback(ctx context.Context) (contract.StepResult, error) {
	exec := s.in.ExecutionID
	out := map[string]any{"provisionerIdentifier": s.spec.ProvisionerIdentifier}
	prev, sl, err := s.find(ctx, contract.ProvisionerQuery{Kinds: []string{contract.RecordKindApplied, contract.RecordKindRollback, contract.RecordKindDestroyed}, Execution: exec, Other: true})
	if err != nil {
		return contract.StepResult{}, err
	}
	if prev != nil && prev.Kind != contract.RecordKindDestroyed {
		s.log.Line(fmt.Sprintf("# rolling back to the configuration %s applied by %s of execution %s", sl.Config.Source, prev.Step, prev.Execution))
		outs, err := s.apply(ctx, sl.Config, nil, contract.RecordKindRollback)
		if err != nil {
			return contract.StepResult{}, err
		}
		outs["rollback"] = "reapplied"
		return contract.StepResult{Outputs: outs}, nil
	}
	_, mine, err := s.find(ctx, contract.ProvisionerQuery{Kinds: []string{contract.RecordKindApplying, contract.RecordKindApplied}, Execution: exec})
	if err != nil {
		return contract.StepResult{}, err
	}
	if mine == nil {
		s.log.Line(fmt.Sprintf("# provisioner %s applied nothing in this execution or before it: nothing to roll back", s.spec.ProvisionerIdentifier))
		out["rollback"] = "none"
		return contract.StepResult{Outputs: out}, nil
	}
	s.log.Line("# this execution applied the provisioner's first configuration: destroying what it created")
	if err := s.destroy(ctx, mine.Config, nil); err != nil {
		return contract.StepResult{}, err
	}
	out["rollback"] = "destroyed"
	return contract.StepResult{Outputs: out}, nil
}

// isStale says the binary refused a saved plan because the state changed since it was made.
func isStale(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "saved plan is stale")
}
