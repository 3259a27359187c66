package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/pipeline/duration"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// DefaultStepTimeout is the engine default of spec 1.10.
const DefaultStepTimeout = 10 * time.Hour

// infraGrace is added to a step's timeout for Temporal's start-to-close timeout: the activity
// enforces the step timeout itself (category Timeout); Temporal's only catches hung workers.
const infraGrace = time.Minute

// runStep resolves a step's parameters, runs it and records status, outputs and context data.
func (s *stageRun) runStep(ctx workflow.Context, n *plan.Node, t *Node, fqn string, container map[string]any) {
	data := map[string]any{"identifier": n.ID, "name": n.Name, "type": n.Type, "status": string(status.Running), "retryCount": 0}
	container[n.ID] = data
	t.Attempts = 1
	fail := func(st status.Status, f *activities.Failure) {
		data["status"] = string(st)
		s.end(ctx, t, st, f)
	}
	scope := expressions.NewScope(s.root, fqn)
	opts := unresolvedMode(n.Unresolved)
	timeout, err := stepTimeout(n, scope)
	if err != nil {
		fail(status.Failed, &activities.Failure{Category: activities.Unknown, Message: err.Error()})
		return
	}
	spec, err := renderSpec(n.Spec, scope, opts, "", deferredField(n.Type))
	if err != nil {
		fail(status.Failed, &activities.Failure{Category: activities.Unknown, Message: "resolve spec: " + err.Error()})
		return
	}
	data["spec"] = specView(spec)

	var outputs map[string]any
	var failure *activities.Failure
	if n.Type == "Wait" {
		failure = s.wait(ctx, t, spec)
	} else {
		outputs, failure = s.callActivity(ctx, n, t, spec, timeout)
		if failure == nil && n.Type == "Http" {
			outputs, failure = httpOutcome(n, spec, outputs, s.root, fqn)
		}
	}
	if outputs != nil {
		data["output"] = outputs
		t.Outputs = outputs
	}
	switch {
	case failure == nil:
		data["status"] = string(status.Succeeded)
		s.end(ctx, t, status.Succeeded, nil)
	case failure.Category == "aborted":
		fail(status.Aborted, nil)
	case failure.Category == activities.Timeout:
		fail(status.Expired, failure)
	default:
		fail(status.Failed, failure)
	}
}

func stepTimeout(n *plan.Node, scope *expressions.Scope) (time.Duration, error) {
	if n.Timeout == "" {
		return DefaultStepTimeout, nil
	}
	text, err := expressions.RenderString(n.Timeout, scope, expressions.Options{})
	if err != nil {
		return 0, fmt.Errorf("timeout: %v", err)
	}
	d, err := duration.Parse(text)
	if err != nil {
		return 0, fmt.Errorf("timeout %q: %v", text, err)
	}
	return d, nil
}

// deferredField reports the spec fields a step type renders after it ran.
func deferredField(stepType string) func(string) bool {
	if stepType != "Http" {
		return func(string) bool { return false }
	}
	return func(path string) bool {
		return path == ".assertion" || path == ".outputVariables[].value"
	}
}

// callActivity runs a step activity; the returned failure's category "aborted" means cancelled.
func (s *stageRun) callActivity(ctx workflow.Context, n *plan.Node, t *Node, spec any, timeout time.Duration) (map[string]any, *activities.Failure) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, &activities.Failure{Category: activities.Unknown, Message: "encode spec: " + err.Error()}
	}
	set := s.in.Settings
	ao := workflow.ActivityOptions{
		TaskQueue:           workflow.GetInfo(ctx).TaskQueueName,
		StartToCloseTimeout: timeout + infraGrace,
		Summary:             fmt.Sprintf("%s (%s)", t.Path, n.Type),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    set.InfraAttempts,
		},
	}
	if n.Type == "ShellScript" {
		ao.HeartbeatTimeout = set.HeartbeatTimeout
	}
	actx := workflow.WithActivityOptions(ctx, ao)
	in := activities.StepInput{ExecutionID: s.in.ExecutionID, StepPath: t.Path, Type: n.Type, Spec: raw, Timeout: timeout}
	var res activities.StepResult
	err = workflow.ExecuteActivity(actx, activities.ForStepType(n.Type), in).Get(ctx, &res)
	if err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
			return nil, &activities.Failure{Category: "aborted", Message: "aborted"}
		}
		return nil, activities.Classify(err)
	}
	return res.Outputs, nil
}

// wait runs a Wait step as a durable timer (spec 15.5).
func (s *stageRun) wait(ctx workflow.Context, t *Node, spec any) *activities.Failure {
	m, _ := spec.(map[string]any)
	text := expressions.ToString(m["duration"])
	d, err := duration.Parse(text)
	if err != nil {
		return &activities.Failure{Category: activities.Unknown, Message: fmt.Sprintf("Wait duration %q: %v", text, err)}
	}
	t.Status = status.WaitStepRunning
	if err := workflow.Sleep(ctx, d); err != nil {
		return &activities.Failure{Category: "aborted", Message: "aborted"}
	}
	return nil
}

// httpOutcome evaluates an Http step's output variables and then its assertion over the
// response (spec 15.3).
func httpOutcome(n *plan.Node, spec any, resp map[string]any, root map[string]any, fqn string) (map[string]any, *activities.Failure) {
	data := make(map[string]any, len(root)+4)
	for k, v := range root {
		data[k] = v
	}
	for _, k := range []string{"httpUrl", "httpMethod", "httpResponseCode", "httpResponseBody"} {
		data[k] = resp[k]
	}
	scope := expressions.NewScope(data, fqn)
	opts := unresolvedMode(n.Unresolved)
	m, _ := spec.(map[string]any)
	outVars := map[string]any{}
	if list, ok := m["outputVariables"].([]any); ok {
		for _, e := range list {
			ov, _ := e.(map[string]any)
			name := expressions.ToString(ov["name"])
			src, _ := ov["value"].(string)
			v, err := expressions.Render(src, expressions.Text, scope, opts)
			if err != nil {
				return resp, &activities.Failure{Category: activities.Unknown, Message: fmt.Sprintf("output variable %s: %v", name, err)}
			}
			outVars[name] = v
		}
	}
	out := map[string]any{}
	for k, v := range resp {
		out[k] = v
	}
	out["outputVariables"] = outVars
	out["status"] = "SUCCESS"
	assertion, _ := m["assertion"].(string)
	if strings.TrimSpace(assertion) == "" {
		return out, nil
	}
	v, err := expressions.Render(assertion, expressions.Condition, scope, opts)
	if err != nil {
		out["status"], out["errorMsg"] = "FAILURE", "assertion error: "+err.Error()
		return out, &activities.Failure{Category: activities.Unknown, Message: fmt.Sprintf("assertion %q could not be evaluated: %v", assertion, err)}
	}
	if ok, _ := v.(bool); !ok {
		out["status"], out["errorMsg"] = "FAILURE", "assertion failed"
		return out, &activities.Failure{Category: activities.Unknown, Message: fmt.Sprintf("assertion failed: %s (response code %v)", assertion, resp["httpResponseCode"])}
	}
	return out, nil
}
