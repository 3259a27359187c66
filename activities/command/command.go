// Package command runs a Command step (issue 56) on one host of an Ssh stage's Pdc
// infrastructure: it logs in over SSH with the infrastructure's credential (checked against
// the worker's known hosts), then runs the step's units in order: Copy puts the service's
// artifact or config files in a folder, DownloadArtifact has the host fetch the artifact
// itself, Script runs Bash in a working directory with the step's environment variables,
// following tailed files until their patterns appear. Output streams to the step's log,
// masked; output variables are read back from the shell that ran the scripts.
package command

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/sshexec"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// Activity runs Command steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// KnownHosts is a known_hosts file hosts' keys are checked against, read at each step;
	// "" accepts any key (and the step's log says so).
	KnownHosts string
}

// The Command step's spec, the type validation decoded it into.
type (
	spec = stepspec.CommandSpec
	unit = stepspec.CommandUnit
)

// run is one Command step on its host.
type run struct {
	a      *Activity
	in     contract.StepInput
	host   string
	c      *sshexec.Client
	log    *logs.Writer
	mask   *secrets.Masker
	env    map[string]string
	values map[string]string // output variables' shell values, by shell variable
}

// Run runs one Command step on its host.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	sp, host, err := commandSpec(in)
	if err != nil {
		return contract.StepResult{}, err
	}
	r := &run{a: a, in: in, host: host, mask: &secrets.Masker{}, env: map[string]string{}, values: map[string]string{}}
	target, err := sshexec.TargetFor(ctx, a.Secrets, r.mask, in.Deploy.Ssh.Credential, host, a.KnownHosts)
	if err != nil {
		return contract.StepResult{}, err
	}
	for _, v := range sp.EnvironmentVariables {
		val, err := secrets.Value(ctx, a.Secrets, r.mask, v.Type, string(v.Value))
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "environment variable %s: %v", v.Name, err)
		}
		r.env[v.Name] = val
	}
	sess, err := sshexec.Open(ctx, a.Logs, in, target)
	if err != nil {
		return contract.StepResult{}, err
	}
	defer sess.Close()
	r.log, r.c = sess.Log, sess.Client
	runCtx := sess.Ctx
	var names []string
	for _, o := range sp.OutputVariables {
		names = append(names, string(o.Value))
	}
	for _, u := range sp.CommandUnits {
		r.log.Line(fmt.Sprintf("# unit %s (%s)", u.Name, u.Type))
		if err := r.runUnit(runCtx, u, names); err != nil {
			return contract.StepResult{}, stopped(ctx, runCtx, in, u.Name, err)
		}
	}
	if r.log.Err() != nil {
		return contract.StepResult{}, r.log.Err()
	}
	out := map[string]any{"host": host}
	if len(sp.OutputVariables) > 0 {
		vars := map[string]any{}
		for _, o := range sp.OutputVariables {
			v := r.values[string(o.Value)]
			if strings.EqualFold(o.Type, "Secret") && v != "" {
				r.mask.Add(v)
			}
			vars[o.Name] = r.mask.Apply(v)
		}
		out["outputVariables"] = vars
	}
	return contract.StepResult{Outputs: out}, nil
}

// commandSpec reads a Command step's spec and the host it runs on (its own, or its loop's).
func commandSpec(in contract.StepInput) (sp spec, host string, err error) {
	if sp, err = stepspec.Decode[spec](in.Spec); err != nil {
		return sp, "", contract.Fail(contract.Unknown, "Command spec: %v", err)
	}
	for _, u := range sp.CommandUnits {
		if u.Spec == nil {
			return sp, "", contract.Fail(contract.Unknown, "command unit %s has no spec", u.Name)
		}
	}
	if in.Deploy == nil || in.Deploy.Ssh == nil {
		return sp, "", contract.Fail(contract.Unknown, "a Command step runs in a Deployment stage whose infrastructure is a Pdc one")
	}
	host = strings.TrimSpace(sp.Host)
	if host == "" {
		host = in.Deploy.Host
	}
	if host == "" {
		return sp, "", contract.Fail(contract.Unknown,
			"the Command step names no host: run it in a loop over the hosts (strategy: {repeat: {items: <+stage.output.hosts>}}), "+
				"or over <+repeat.partition> inside a step group looping over partitions of them")
	}
	for _, o := range sp.OutputVariables {
		if !sshexec.ShellName(string(o.Value)) {
			return sp, "", contract.Fail(contract.Unknown,
				"output variable %q reads shell variable %q, which is not a valid shell variable name", o.Name, string(o.Value))
		}
	}
	return sp, host, nil
}

// runUnit runs one command unit.
func (r *run) runUnit(ctx context.Context, u unit, names []string) error {
	switch u.Type {
	case "Copy":
		if u.Spec.SourceType == "Artifact" {
			return r.copyArtifact(ctx, u.Spec.DestinationPath)
		}
		return r.copyConfig(ctx, u.Spec.DestinationPath)
	case "DownloadArtifact":
		return r.download(ctx, u.Spec.DestinationPath)
	case "Script":
		return r.script(ctx, u, names)
	default:
		return contract.Fail(contract.Unknown, "%s units are not run", u.Type)
	}
}

// copyConfig writes each of the service's config files into dir.
func (r *run) copyConfig(ctx context.Context, dir string) error {
	for _, f := range r.in.Deploy.ConfigFiles {
		dest := path.Join(dir, path.Base(f.Path))
		if err := r.c.Copy(ctx, dest, strings.NewReader(f.Text), 0o644); err != nil {
			return err
		}
		r.log.Line(fmt.Sprintf("copied %s to %s:%s", f.Path, r.host, dest))
	}
	return nil
}

// script runs a Script unit, following its tailed files, and reads back the output
// variables its shell left set.
func (r *run) script(ctx context.Context, u unit, names []string) error {
	script, err := secrets.Expand(ctx, r.a.Secrets, r.mask, u.Spec.Script())
	if err != nil {
		return contract.Fail(contract.Unknown, "%v", err)
	}
	tails, err := r.startTails(ctx, u)
	if err != nil {
		return err
	}
	defer tails.stop()
	out := &logs.Lines{Log: r.log, Mask: r.mask}
	code, values, err := r.c.RunOutputs(ctx, script, u.Spec.WorkingDirectory, r.env, out, names)
	out.Flush()
	if err != nil {
		return err
	}
	if code != 0 {
		msg := fmt.Sprintf("exited with code %d on host %s", code, r.host)
		if last := out.Last(); last != "" {
			msg += "; last output: " + last
		}
		return contract.Fail(contract.Unknown, "%s", msg)
	}
	for k, v := range values {
		r.values[k] = v
	}
	return tails.wait(ctx)
}

// stopped is an error as the step reports it: the step's timeout, an abort, or the error,
// naming the unit.
func stopped(ctx, runCtx context.Context, in contract.StepInput, unit string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return contract.Fail(contract.Timeout, "unit %s: the Command step ran longer than its timeout %s", unit, in.Timeout)
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return contract.Fail(contract.Category(app.Type()), "unit %s: %s", unit, app.Message())
	}
	return err
}

// compilePattern compiles a tail pattern: a regular expression.
func compilePattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "tail pattern %q is not a regular expression: %v", p, err)
	}
	return re, nil
}
