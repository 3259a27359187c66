// Package policy runs Policy steps (spec 15.6): the step's policy sets are evaluated against
// its payload with OPA; a deny by an error-severity set fails the step with the
// PolicyEvaluationFailure category.
package policy

import (
	"context"
	"encoding/json"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/stepspec"
)

// Activity evaluates Policy steps with the worker's policy engine.
type Activity struct {
	Engine *policies.Engine
}

// Run evaluates the step's sets and returns status and per-set details as outputs.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	spec, err := stepspec.Decode[stepspec.PolicySpec](in.Spec)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "Policy spec: %v", err)
	}
	if a.Engine == nil {
		return contract.StepResult{}, contract.Fail(contract.PolicyEvaluation, "this worker has no policies loaded (start it with --policies DIR); failing closed")
	}
	if spec.Type != "" && spec.Type != "Custom" {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "Policy step type %q is not supported; use Custom", spec.Type)
	}
	if len(spec.Sets) == 0 {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "policySets is empty")
	}
	for _, name := range spec.Sets {
		ok := false
		for _, s := range a.Engine.Sets {
			if s.Identifier == name && s.Action == policies.Custom {
				ok = true
			}
		}
		if !ok {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "policy set %q is not a custom policy set of this worker's policies", name)
		}
	}
	var payload any
	if spec.PolicySpec != nil {
		payload = spec.PolicySpec.Rendered
	}
	if text, ok := payload.(string); ok {
		if err := json.Unmarshal([]byte(text), &payload); err != nil || strings.TrimSpace(text) == "" {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "policySpec.payload must be non-empty JSON: %v", err)
		}
	}
	if payload == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "policySpec.payload is empty")
	}
	d, err := a.Engine.Evaluate(ctx, spec.Sets, payload)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.PolicyEvaluation, "%v", err)
	}
	details := map[string]any{}
	for _, s := range d.Sets {
		pols := map[string]any{}
		for _, p := range s.Policies {
			st := "pass"
			switch {
			case p.Error != "" || len(p.Deny) > 0:
				st = map[string]string{policies.SeverityError: "error", policies.SeverityWarning: "warning"}[s.Severity]
			case len(p.Warn) > 0:
				st = "warning"
			}
			pols[p.Policy] = map[string]any{"status": st, "deny": p.Deny, "warn": p.Warn, "error": p.Error}
		}
		details[s.Set] = map[string]any{"status": s.Status, "policies": pols, "durationMicros": s.Duration.Microseconds()}
	}
	out := map[string]any{"status": d.Status, "policySetDetails": details}
	activity.GetLogger(ctx).Info("policy step evaluated", "step", in.StepPath, "execution", in.ExecutionID,
		"sets", spec.Sets, "decision", d.Status, "messages", d.Messages())
	if d.Denied() {
		return contract.StepResult{}, contract.FailWithOutputs(contract.PolicyEvaluation, out, "denied by policy: %s", strings.Join(d.Messages(), "; "))
	}
	return contract.StepResult{Outputs: out}, nil
}
