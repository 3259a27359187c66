package steps

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/stepspec"
)

// Change tickets as gates (docs/tickets.md): Jira and ServiceNow steps that open, update and
// wait on tickets, the CustomApproval step that waits on a script, and the Email step.

// The ticket steps' specs, shared with the ticket family (stepspec).
type (
	TicketField         = stepspec.TicketField
	JiraCreate          = stepspec.JiraCreateSpec
	JiraUpdate          = stepspec.JiraUpdateSpec
	TransitionTo        = stepspec.TransitionTo
	ServiceNowCreate    = stepspec.ServiceNowCreateSpec
	ServiceNowUpdate    = stepspec.ServiceNowUpdateSpec
	ServiceNowImportSet = stepspec.ServiceNowImportSetSpec
	ImportData          = stepspec.ImportData
	ImportDataSpec      = stepspec.ImportDataSpec
)

// Operators are the conditions' operators.
var Operators = []string{"equals", "not equals", "in", "not in"}

// Check checks the fields.
func checkJiraCreate(j *JiraCreate, c Checker) { ticketFields(c, j.Fields, false) }

// Check checks the fields and the transition.
func checkJiraUpdate(j *JiraUpdate, c Checker) {
	ticketFields(c, j.Fields, false)
	if t := j.TransitionTo; t != nil && t.Status == "" && t.TransitionName != "" {
		c.Error(t.Node, "missing-field", "transitionTo needs the status to move the issue to").
			SetHint("transitionTo: {status: Done, transitionName: Resolve}")
	}
}

// The ticket approvals' and CustomApproval's specs, shared with the workflow that runs them
// (stepspec).
type (
	JiraApproval       = stepspec.JiraApprovalSpec
	ServiceNowApproval = stepspec.ServiceNowApprovalSpec
	ChangeWindow       = stepspec.ChangeWindow
	CustomApproval     = stepspec.CustomApprovalSpec
	Criteria           = stepspec.Criteria
	CriteriaSpec       = stepspec.CriteriaSpec
	Condition          = stepspec.Condition
)

// checkJiraApproval checks the criteria and the interval.
func checkJiraApproval(j *JiraApproval, c Checker) {
	criteria(c, j.ApprovalCriteria)
	criteria(c, j.RejectionCriteria)
	retryInterval(c, j.Node, string(j.RetryInterval))
}

// Check checks the fields and refuses what needs Harness's own ServiceNow app.
func checkServiceNowCreate(s *ServiceNowCreate, c Checker) {
	ticketFields(c, s.Fields, true)
	c.Enum(s.Node, "createType", s.CreateType, []string{"Normal", "Form", "Standard"}, "createType")
	c.Boolean(s.Node, "useServiceNowTemplate", s.UseServiceNowTemplate)
	if s.UseServiceNowTemplate == "true" || s.CreateType == "Form" || s.CreateType == "Standard" {
		serviceNowTemplate(c, s.Node)
	}
}

// Check checks the fields and refuses what needs Harness's own ServiceNow app.
func checkServiceNowUpdate(s *ServiceNowUpdate, c Checker) {
	ticketFields(c, s.Fields, true)
	c.Boolean(s.Node, "useServiceNowTemplate", s.UseServiceNowTemplate)
	if s.UseServiceNowTemplate == "true" {
		serviceNowTemplate(c, s.Node)
	}
	if s.UpdateMultiple != nil {
		c.Unsupported(s.UpdateMultiple, "unsupported-field", "updateMultiple (the change tasks of a change request) is not supported yet").
			SetHint("update each change task with its own ServiceNowUpdate step and ticketNumber")
	} else if s.TicketNumber == "" {
		c.Error(s.Node, "missing-field", "ServiceNowUpdate needs the ticketNumber of the ticket to update").
			SetHint("ticketNumber: <+execution.steps.open_change.ticket.ticketNumber>")
	}
}

// checkServiceNowApproval checks the criteria, the interval and the change window.
func checkServiceNowApproval(s *ServiceNowApproval, c Checker) {
	criteria(c, s.ApprovalCriteria)
	criteria(c, s.RejectionCriteria)
	retryInterval(c, s.Node, string(s.RetryInterval))
}

// Check checks the import's shape.
func checkServiceNowImportSet(s *ServiceNowImportSet, c Checker) {
	d := s.ImportData
	if d == nil {
		return
	}
	c.Enum(d.Node, "type", d.Type, []string{"Json", "KeyValues"}, "import data type")
	if d.Spec == nil {
		return
	}
	switch d.Type {
	case "Json":
		if d.Spec.JSONBody == "" {
			c.Error(d.Spec.Node, "missing-field", "Json import data needs jsonBody").SetHint(`jsonBody: '{"u_name": "web", "u_version": "1.4"}'`)
		}
	case "KeyValues":
		if len(d.Spec.Fields) == 0 {
			c.Error(d.Spec.Node, "missing-field", "KeyValues import data needs fields").SetHint("fields: [{name: u_name, value: web}]")
		}
		ticketFields(c, d.Spec.Fields, true)
	}
}

// checkCustomApproval checks the script, its variables, the criteria and the intervals.
func checkCustomApproval(a *CustomApproval, c Checker) {
	c.Enum(a.Node, "shell", a.Shell, []string{"Bash", "PowerShell"}, "shell")
	if a.Shell == "PowerShell" {
		c.Unsupported(pipeline.ValueAt(a.Node, "shell"), "unsupported-field", "PowerShell scripts are not supported: Gantry's workers run Bash")
	}
	if a.Source != nil {
		c.Enum(a.Source.Node, "type", a.Source.Type, []string{"Inline"}, "script source type")
	}
	c.Variables(a.EnvironmentVariables, "environment variable", []string{"String", "Number", "Secret"})
	c.Variables(a.OutputVariables, "output variable", []string{"String", "Secret"})
	c.Duration(a.Node, "scriptTimeout", string(a.ScriptTimeout), "script timeout")
	retryInterval(c, a.Node, string(a.RetryInterval))
	criteria(c, a.ApprovalCriteria)
	criteria(c, a.RejectionCriteria)
	if a.OnDelegate == "false" {
		c.Unsupported(pipeline.ValueAt(a.Node, "onDelegate"), "unsupported-field", "a CustomApproval script runs on the worker (onDelegate: true)")
	}
}

// Email is the Email step's spec, shared with the notification family.
type Email = stepspec.EmailSpec

// checkEmail checks that the message goes somewhere.
func checkEmail(e *Email, c Checker) {
	c.Boolean(e.Node, "fireAndForget", e.FireAndForget)
	if e.To == "" && (e.ToUserGroups == nil || len(e.ToUserGroups.Content) == 0 && e.ToUserGroups.Value == "") {
		c.Error(e.Node, "missing-field", "an Email step needs `to` (addresses) or `toUserGroups`").
			SetHint("to: release-team@example.com")
	}
	c.Variables(e.InputVariables, "input variable", []string{"String", "Number", "Secret"})
}

// ticketFields checks that every field has a value, and, for ServiceNow, a name.
func ticketFields(c Checker, fields []TicketField, named bool) {
	seen := map[string]bool{}
	for _, f := range fields {
		if named && f.Name == "" {
			c.Error(f.Node, "missing-field", "a ServiceNow field needs the column's name").SetHint("{name: short_description, value: Deploy web 1.4}")
		}
		if f.Name != "" && seen[f.Name] {
			c.Error(pipeline.ValueAt(f.Node, "name"), "duplicate", "field %s is set twice", f.Name)
		}
		seen[f.Name] = true
	}
}

// criteria checks a criterion's type, conditions and operators (a Jexl expression is checked
// where every expression is).
func criteria(c Checker, cr *Criteria) {
	if cr == nil {
		return
	}
	c.Enum(cr.Node, "type", string(cr.Type), []string{"Jexl", "KeyValues"}, "criteria type")
	s := cr.Spec
	if s == nil {
		return
	}
	switch cr.Type {
	case "Jexl":
		if strings.TrimSpace(string(s.Expression)) == "" {
			c.Error(s.Node, "missing-field", "Jexl criteria need an expression").SetHint(`expression: <+issue.Status> == "Done"`)
		}
	case "KeyValues":
		c.Boolean(s.Node, "matchAnyCondition", string(s.MatchAnyCondition))
		seen := map[stepspec.Text]bool{}
		for _, cond := range s.Conditions {
			c.Enum(cond.Node, "operator", string(cond.Operator), Operators, "operator")
			if seen[cond.Key] {
				c.Error(pipeline.ValueAt(cond.Node, "key"), "duplicate", "two conditions on field %s", cond.Key).
					SetHint("use one condition with operator in or not in, or Jexl criteria")
			}
			seen[cond.Key] = true
		}
	}
}

// retryInterval checks the interval and warns when Gantry raises it to the minimum.
func retryInterval(c Checker, obj *yaml.Node, value string) {
	if value == "" || strings.Contains(value, "<+") {
		return
	}
	d, err := duration.ParseInterval(strings.TrimSpace(value))
	if err != nil {
		c.Error(pipeline.ValueAt(obj, "retryInterval"), "duration", "retryInterval %q is not a duration", value).SetHint("retryInterval: 1m")
		return
	}
	if d < plan.MinRetryInterval {
		c.Warn(pipeline.ValueAt(obj, "retryInterval"), "raised", "retryInterval %s is below the minimum of %s: Gantry reads every %s", value, plan.MinRetryInterval, plan.MinRetryInterval)
	}
}

// serviceNowTemplate refuses a ticket from a ServiceNow template: those are served by Harness's
// own ServiceNow app, which a Gantry user does not have.
func serviceNowTemplate(c Checker, obj *yaml.Node) {
	c.Unsupported(obj, "unsupported-field", "ServiceNow templates (useServiceNowTemplate, createType Form or Standard) are served by Harness's ServiceNow app; Gantry sets fields through the Table API").
		SetHint("list the fields to set under `fields`")
}
