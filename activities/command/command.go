// Package command runs a Command step (issue 56) on one host of an Ssh stage's Pdc
// infrastructure: it logs in over SSH with the infrastructure's credential (checked against
// the worker's known hosts), then runs the step's units in order: Copy puts the service's
// config files in a folder, Script runs Bash in a working directory with the step's
// environment variables. Output streams to the step's log, masked.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/sshexec"
)

// Activity runs Command steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// KnownHosts is a known_hosts file hosts' keys are checked against, read at each step;
	// "" accepts any key (and the step's log says so).
	KnownHosts string
}

type spec struct {
	Host                 string `json:"host"`
	EnvironmentVariables []struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"environmentVariables"`
	CommandUnits []struct {
		Identifier string `json:"identifier"`
		Name       string `json:"name"`
		Type       string `json:"type"`
		Spec       struct {
			DestinationPath  string `json:"destinationPath"`
			SourceType       string `json:"sourceType"`
			WorkingDirectory string `json:"workingDirectory"`
			Source           struct {
				Spec struct {
					Script string `json:"script"`
				} `json:"spec"`
			} `json:"source"`
		} `json:"spec"`
	} `json:"commandUnits"`
}

// Run runs one Command step on its host.
func (a *Activity) Run(ctx context.Context, in activities.StepInput) (activities.StepResult, error) {
	var sp spec
	if err := json.Unmarshal(in.Spec, &sp); err != nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "Command spec: %v", err)
	}
	if in.Deploy == nil || in.Deploy.Ssh == nil {
		return activities.StepResult{}, activities.Fail(activities.Unknown, "a Command step runs in a Deployment stage whose infrastructure is a Pdc one")
	}
	host := strings.TrimSpace(sp.Host)
	if host == "" {
		host = in.Deploy.Host
	}
	if host == "" {
		return activities.StepResult{}, activities.Fail(activities.Unknown,
			"the Command step names no host: run it in a loop over the hosts (strategy: {repeat: {items: <+stage.output.hosts>}})")
	}
	mask := &secrets.Masker{}
	target, err := sshexec.TargetFor(ctx, a.Secrets, mask, in.Deploy.Ssh.Credential, host, a.KnownHosts)
	if err != nil {
		return activities.StepResult{}, err
	}
	env := map[string]string{}
	for _, v := range sp.EnvironmentVariables {
		val, err := secrets.Value(ctx, a.Secrets, mask, v.Type, scalar(v.Value))
		if err != nil {
			return activities.StepResult{}, activities.Fail(activities.Unknown, "environment variable %s: %v", v.Name, err)
		}
		env[v.Name] = val
	}
	info := activity.GetInfo(ctx)
	log, err := a.Logs.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return activities.StepResult{}, err
	}
	defer log.Close()
	log.Line(fmt.Sprintf("# gantry: %s attempt %d on host %s as %s", in.StepPath, info.Attempt, target.Addr(), target.User))
	if target.KnownHosts == "" {
		log.Line("# the host's key is not checked: start the worker with --ssh-known-hosts")
	}
	runCtx, cancel := activities.RunContext(ctx, in.Timeout, info.HeartbeatTimeout)
	defer cancel()
	c, err := sshexec.Dial(runCtx, target)
	if err != nil {
		return activities.StepResult{}, err
	}
	defer c.Close()
	for _, u := range sp.CommandUnits {
		log.Line(fmt.Sprintf("# unit %s (%s)", u.Name, u.Type))
		switch u.Type {
		case "Copy":
			for _, f := range in.Deploy.ConfigFiles {
				dest := path.Join(u.Spec.DestinationPath, path.Base(f.Path))
				if err := c.Copy(runCtx, dest, strings.NewReader(f.Text), 0o644); err != nil {
					return activities.StepResult{}, stopped(ctx, runCtx, in, err)
				}
				log.Line(fmt.Sprintf("copied %s to %s:%s", f.Path, host, dest))
			}
		case "Script":
			script, err := secrets.Expand(ctx, a.Secrets, mask, u.Spec.Source.Spec.Script)
			if err != nil {
				return activities.StepResult{}, activities.Fail(activities.Unknown, "unit %s: %v", u.Name, err)
			}
			out := &logs.Lines{Log: log, Mask: mask}
			code, err := c.Run(runCtx, script, u.Spec.WorkingDirectory, env, out)
			out.Flush()
			if err != nil {
				return activities.StepResult{}, stopped(ctx, runCtx, in, err)
			}
			if code != 0 {
				msg := fmt.Sprintf("unit %s exited with code %d on host %s", u.Name, code, host)
				if last := out.Last(); last != "" {
					msg += "; last output: " + last
				}
				return activities.StepResult{}, activities.Fail(activities.Unknown, "%s", msg)
			}
		default:
			return activities.StepResult{}, activities.Fail(activities.Unknown, "unit %s: %s units are not run yet", u.Name, u.Type)
		}
	}
	if log.Err() != nil {
		return activities.StepResult{}, log.Err()
	}
	return activities.StepResult{Outputs: map[string]any{"host": host}}, nil
}

// stopped is an error as the step reports it: the step's timeout, an abort, or the error.
func stopped(ctx, runCtx context.Context, in activities.StepInput, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return activities.Fail(activities.Timeout, "the Command step ran longer than its timeout %s", in.Timeout)
	}
	return err
}

func scalar(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
