package steps

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/stepspec"
)

// NameTypeValue is an input, output or environment variable of a step.
type NameTypeValue = stepspec.NameTypeValue

// ShellScript and its parts are the ShellScript step's spec, shared with the shell family.
type (
	ShellScript     = stepspec.ShellScriptSpec
	ExecutionTarget = stepspec.ExecutionTarget
	ScriptSource    = stepspec.ScriptSource
	ScriptInline    = stepspec.ScriptInline
	OutputAlias     = stepspec.OutputAlias
)

// The builtin steps' specs, shared with the workflows that run them (stepspec).
type (
	Wait            = stepspec.WaitSpec
	HarnessApproval = stepspec.HarnessApprovalSpec
	Approvers       = stepspec.Approvers
	ApproverInput   = stepspec.ApproverInput
	AutoApproval    = stepspec.AutoApproval
	Deadline        = stepspec.Deadline
	Barrier         = stepspec.BarrierSpec
	Queue           = stepspec.QueueSpec
)

// checkQueue checks the scope.
func checkQueue(q *Queue, c Checker) {
	c.Enum(q.Node, "scope", string(q.Scope), []string{"Pipeline", "Stage"}, "Queue scope")
}

// checkShellScript checks the shell, the script source and the variables.
func checkShellScript(sp *ShellScript, c Checker) {
	c.Enum(sp.Node, "shell", sp.Shell, []string{"Bash", "PowerShell", "Sh"}, "shell")
	c.Boolean(sp.Node, "onDelegate", string(sp.OnDelegate))
	switch {
	case sp.OnDelegate == "false":
		// On a target host over SSH (docs/traditional.md).
		et := sp.ExecutionTarget
		// The reference's schema requires neither; without them no host can be reached, so
		// Gantry cannot run the step (unsupported, not broken).
		if et == nil {
			c.Unsupported(pipeline.ValueAt(sp.Node, "onDelegate"), "unsupported-field", "a ShellScript with onDelegate: false and no `executionTarget`: Gantry cannot tell which host to run it on").
				SetHint("executionTarget: {host: web-1.example.com, connectorRef: deploy_key, workingDirectory: /opt/app}")
			break
		}
		if et.Host == "" {
			c.Unsupported(et.Node, "unsupported-field", "executionTarget without `host`: Gantry cannot tell which host to run the script on")
		}
		if et.ConnectorRef == "" {
			c.Unsupported(et.Node, "unsupported-field", "executionTarget without `connectorRef`: Gantry logs in with an SSH credential (a secret of type SSHKey)")
		} else if strings.Contains(et.ConnectorRef, "<+") {
			c.Unsupported(pipeline.ValueAt(et.Node, "connectorRef"), "unsupported-expression", "the target's credential is an expression; Gantry resolves credentials before the run").
				SetHint("name the SSH credential")
		}
		if sp.Shell == "PowerShell" {
			c.Unsupported(pipeline.ValueAt(sp.Node, "shell"), "unsupported-field", "PowerShell on a target host runs over WinRM, which Gantry does not reach")
		}
	case strings.Contains(string(sp.OnDelegate), "<+") && sp.ExecutionTarget != nil:
		c.Unsupported(pipeline.ValueAt(sp.Node, "onDelegate"), "unsupported-expression",
			"onDelegate is an expression: whether the script runs on the worker or on the target must be known before the run").
			SetHint("onDelegate: false runs it on executionTarget.host")
	case sp.ExecutionTarget != nil:
		c.Ignored(pipeline.ValueAt(sp.Node, "executionTarget"), "executionTarget", "it applies with onDelegate: false only")
	}
	if sp.Source != nil {
		c.Enum(sp.Source.Node, "type", sp.Source.Type, []string{"Inline", "Harness"}, "script source type")
		if sp.Source.Type == "Inline" {
			checkInlineScript(sp.Source, c)
		}
	}
	c.Variables(sp.EnvironmentVariables, "environment variable", []string{"String", "Number", "Secret"})
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Secret"})
	if sp.OutputAlias != nil {
		c.Enum(sp.OutputAlias.Node, "scope", sp.OutputAlias.Scope, []string{"Pipeline", "Stage", "StepGroup"}, "outputAlias.scope")
	}
}

// checkHttp checks an Http step's method and variables.
func checkHttp(sp *stepspec.HttpSpec, c Checker) {
	c.Enum(sp.Node, "method", sp.Method, []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}, "HTTP method")
	c.Variables(sp.InputVariables, "input variable", []string{"String", "Number", "Secret"})
	c.Variables(sp.OutputVariables, "output variable", []string{"String", "Number", "Secret"})
}

// checkWait checks the duration.
func checkWait(sp *Wait, c Checker) {
	c.Duration(sp.Node, "duration", string(sp.Duration), "Wait duration")
}

// checkHarnessApproval checks the message, who approves and the approver inputs.
func checkHarnessApproval(sp *HarnessApproval, c Checker) {
	if strings.TrimSpace(string(sp.ApprovalMessage)) == "" && pipeline.Field(sp.Node, "approvalMessage") != nil {
		c.Error(pipeline.ValueAt(sp.Node, "approvalMessage"), "empty", "approvalMessage cannot be empty")
	}
	c.Boolean(sp.Node, "includePipelineExecutionHistory", string(sp.IncludePipelineExecutionHistory))
	c.Boolean(sp.Node, "isAutoRejectEnabled", string(sp.IsAutoRejectEnabled))
	if a := sp.Approvers; a != nil {
		c.Integer(a.Node, "minimumCount", string(a.MinimumCount), 1, false, "approvers.minimumCount")
		c.Boolean(a.Node, "disallowPipelineExecutor", string(a.DisallowPipelineExecutor))
		if g := pipeline.Field(a.Node, "userGroups"); g != nil && g.Kind == yaml.SequenceNode && len(g.Content) == 0 {
			c.Error(g, "empty", "approvers.userGroups needs at least one group; nobody could approve")
		}
	}
	if aa := sp.AutoApproval; aa != nil {
		c.Enum(aa.Node, "action", aa.Action, []string{"APPROVE"}, "autoApproval.action")
		c.Ignored(pipeline.ValueAt(sp.Node, "autoApproval"), "autoApproval", "Gantry does not approve at a deadline yet; the approval waits for people")
	}
	ignoredTrue(c, sp.Node, "isAutoRejectEnabled", string(sp.IsAutoRejectEnabled), "Gantry does not reject automatically yet; the approval waits for people")
	for _, in := range sp.ApproverInputs {
		for _, key := range []string{"allowedValues", "selectOneFrom", "selectManyFrom"} {
			n := pipeline.Field(in.Node, key)
			if n != nil && !scalarList(n) {
				c.Error(n, "type", "approver input %s: %s must be a list of values or one string of comma-separated values", in.Name, key).
					SetHint("write `%s: [a, b]` or `%s: a,b`", key, key)
			}
		}
	}
}

// scalarList reports whether n is one scalar or a list of scalars.
func scalarList(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode {
		return true
	}
	return n.Kind == yaml.SequenceNode && !slices.ContainsFunc(n.Content, func(e *yaml.Node) bool { return e.Kind != yaml.ScalarNode })
}

// Policy and its payload are the Policy step's spec, shared with the Policy activity.
type (
	Policy     = stepspec.PolicySpec
	PolicySpec = stepspec.PolicyPayload
)

// checkPolicy checks the policy type and that there is a policy set.
func checkPolicy(sp *Policy, c Checker) {
	c.Enum(sp.Node, "type", sp.Type, []string{"Custom"}, "Policy type")
	if g := sp.PolicySets; g != nil && g.Kind == yaml.SequenceNode && len(g.Content) == 0 {
		c.Error(g, "empty", "policySets needs at least one policy set")
	}
}

// checkInlineScript refuses an inline source that would run nothing: no script, or a blank one.
// A `script` one level too shallow (beside `type` rather than under `spec`) is the usual cause,
// so the hint points at it.
func checkInlineScript(src *stepspec.ScriptSource, c Checker) {
	var d *diag.Diagnostic
	switch {
	case src.Spec == nil || pipeline.Field(src.Spec.Node, "script") == nil:
		at := src.Node
		if src.Spec != nil {
			at = src.Spec.Node
		} else if v := pipeline.ValueAt(src.Node, "spec"); v != nil {
			at = v
		}
		d = c.Error(at, "missing-field", "inline script source is missing required field \"script\": the step would run nothing")
	case strings.TrimSpace(src.Spec.Script) == "":
		d = c.Error(pipeline.ValueAt(src.Spec.Node, "script"), "empty", "the inline script is empty: the step would run nothing")
	default:
		return
	}
	if k := pipeline.Key(src.Node, "script"); k != src.Node {
		d.SetHint("`script` at line %d sits beside `type`; indent it under `spec:` (source.spec.script)", k.Line)
	} else {
		d.SetHint("write the commands under source.spec.script")
	}
}
