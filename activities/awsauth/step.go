package awsauth

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.temporal.io/sdk/activity"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Step is an AWS deployment step under way: its context (bounded by the step's timeout), its
// log, the masker of the secrets it resolved, and the connector's configuration.
type Step struct {
	Ctx  context.Context
	Log  *logs.Writer
	Mask *secrets.Masker
	Cfg  aws.Config
	end  []func()
}

// Start begins an AWS deployment step of a Deployment stage whose infrastructure deploys
// with an Aws connector (stage names the deployment type, for the error): it opens the step's
// log, heartbeats while the step runs and signs with the connector. Call End when it ends.
func Start(ctx context.Context, in contract.StepInput, store logs.Store, r secrets.Resolver, stage string) (*Step, error) {
	if in.Deploy == nil || in.Deploy.Aws == nil {
		return nil, contract.Fail(contract.Unknown, "%s step %s needs a Deployment stage with deploymentType %s", in.Type, in.StepPath, stage)
	}
	log, err := store.Open(in.ExecutionID, in.StepPath)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "open step log: %v", err)
	}
	s := &Step{Log: log, Mask: &secrets.Masker{}}
	s.end = append(s.end, func() { log.Close() })
	hctx, stop := context.WithCancel(ctx)
	s.end = append(s.end, stop)
	if activity.IsActivity(ctx) {
		go contract.Heartbeat(hctx, activity.GetInfo(ctx).HeartbeatTimeout)
	}
	if in.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Timeout)
		s.end = append(s.end, cancel)
	}
	s.Ctx = ctx
	if s.Cfg, err = Config(ctx, *in.Deploy.Aws, in.Deploy.Region, r, s.Mask); err != nil {
		s.End()
		return nil, err
	}
	return s, nil
}

// End stops the heartbeats and closes the log.
func (s *Step) End() {
	for i := len(s.end) - 1; i >= 0; i-- {
		s.end[i]()
	}
	s.end = nil
}

// Decode reads a manifest file (JSON or YAML, the API request's fields) into an SDK input;
// field names match case-insensitively, unknown ones (such as the read-only fields of a
// described resource) are ignored.
func Decode(f plan.File, into any) error {
	js, err := yaml.YAMLToJSON([]byte(f.Text))
	if err != nil {
		return contract.Fail(contract.Verification, "%s: %v", f.Path, err)
	}
	if err := json.Unmarshal(js, into); err != nil {
		return contract.Fail(contract.Verification, "%s: %v", f.Path, err)
	}
	return nil
}

// Files returns the files of a deployment's manifests of a type.
func Files(d *contract.DeployInput, typ string) []plan.File {
	var out []plan.File
	for _, m := range d.Manifests {
		if m.Type == typ {
			out = append(out, m.Files...)
		}
	}
	return out
}
