package validate

import (
	"net/url"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Notification event types by level (spec 20.2.1).
var (
	stageEventTypes    = []string{"StageStart", "StageSuccess", "StageFailed"}
	notificationEvents = []string{"AllEvents", "PipelineStart", "PipelineSuccess", "PipelineFailed", "PipelineEnd", "PipelinePaused",
		"PipelineResumed", "WaitingForUserAction", "StageStart", "StageSuccess", "StageFailed", "StepFailed", "TriggerFailed"}
	channelTypes = []string{"Email", "Slack", "MsTeams", "PagerDuty", "Webhook", "Datadog"}
)

// notificationRules checks a pipeline's notificationRules (spec 20.1) once its stages and steps
// are known: stage and step filters name what the (template-expanded) pipeline holds.
func (c *checker) notificationRules(rules []pipeline.NotificationRule) {
	seen := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		c.identifier(r.Node, "identifier", r.Identifier, "notification rule")
		if seen[r.Identifier] && r.Identifier != "" {
			c.diags.Errorf(c.pos(pipeline.ValueAt(r.Node, "identifier")), "duplicate-identifier", "notification rule identifier %q is used twice", r.Identifier).
				SetHint("it is part of every delivery's idempotency key: give each rule its own")
		}
		seen[r.Identifier] = true
		c.noRuntimeInputs(r.Node, r.Identifier)
		switch {
		case pipeline.Field(r.Node, "enabled") == nil:
			c.diags.Warnf(c.pos(r.Node), "rule-disabled", "notification rule %s has no `enabled: true`; like the reference, Gantry treats it as disabled and it never fires", r.Identifier).
				SetHint("add `enabled: true` to turn it on")
		case r.Enabled != "true" && r.Enabled != "false":
			c.diags.Errorf(c.pos(pipeline.ValueAt(r.Node, "enabled")), "boolean", "enabled must be true or false, got %q", r.Enabled)
		}
		if r.Template != nil {
			c.diags.Unsupportedf(c.pos(pipeline.Key(r.Node, "template")), "unsupported-notification-template",
				"notification rule %s uses a custom notification template, which Gantry does not render yet", r.Identifier).
				SetHint("remove `template:`; Gantry's built-in message for each channel names the pipeline, event, status, stage, step, trigger, timing and link")
		}
		if len(r.PipelineEvents) == 0 && pipeline.Field(r.Node, "pipelineEvents") != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(r.Node, "pipelineEvents")), "empty", "notification rule %s selects no events", r.Identifier).
				SetHint("list at least one event, e.g. `- type: PipelineFailed`")
		}
		for j := range r.PipelineEvents {
			c.pipelineEvent(&r.PipelineEvents[j])
		}
		if m := r.NotificationMethod; m != nil {
			c.notificationMethod(r.Identifier, m)
		}
	}
}

func (c *checker) noRuntimeInputs(n *yaml.Node, rule string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value) {
		c.diags.Errorf(c.pos(n), "runtime-input", "notification rule %s: a rule's settings cannot be runtime inputs", rule).
			SetHint("write the value, or an expression such as <+pipeline.variables.team> that a runtime input of the pipeline feeds")
		return
	}
	for _, k := range n.Content {
		c.noRuntimeInputs(k, rule)
	}
}

func (c *checker) pipelineEvent(e *pipeline.PipelineEvent) {
	typeAt := c.pos(pipeline.ValueAt(e.Node, "type"))
	if e.Type != "" && !slices.Contains(notificationEvents, e.Type) {
		d := c.diags.Errorf(typeAt, "event-type", "notification event type %q is not known", e.Type)
		if s := pipeline.Closest(e.Type, notificationEvents); s != "" {
			d.SetHint("did you mean %q? event types: %s", s, strings.Join(notificationEvents, ", "))
		} else {
			d.SetHint("event types: %s", strings.Join(notificationEvents, ", "))
		}
		return
	}
	stageEvent := slices.Contains(stageEventTypes, e.Type)
	switch {
	case stageEvent && len(e.ForStages) == 0:
		// The reference keeps such rules; they never fire for this event.
		c.diags.Warnf(typeAt, "no-stages", "%s names no stage (forStages): the rule never fires for it, as in the reference", e.Type).
			SetHint("add `forStages: [AllStages]` or the identifiers of the stages")
	case !stageEvent && pipeline.Field(e.Node, "forStages") != nil:
		c.diags.Errorf(c.pos(pipeline.Key(e.Node, "forStages")), "event-filter", "forStages applies to StageStart, StageSuccess and StageFailed only, not to %s", e.Type).
			SetHint("remove forStages from this entry")
	}
	// A filter naming no stage or step is a warning: the reference keeps such rules (its own
	// examples carry them), which then never fire for that name. Where part of the pipeline
	// comes from a template not found, its stages and steps are unknown: nothing is said.
	for i, id := range e.ForStages {
		if id != "AllStages" && c.stageIDs[id] == nil && !c.partial {
			c.diags.Warnf(c.pos(pipeline.Field(e.Node, "forStages").Content[i]), "unknown-stage", "forStages names stage %q, which the pipeline does not have; the rule never fires for it", id).
				SetHint("use AllStages or one of: %s", strings.Join(sortedKeys(c.stageIDs), ", "))
		}
	}
	if pipeline.Field(e.Node, "forSteps") != nil && e.Type != "StepFailed" {
		c.diags.Errorf(c.pos(pipeline.Key(e.Node, "forSteps")), "event-filter", "forSteps applies to StepFailed only, not to %s", e.Type).
			SetHint("remove forSteps from this entry")
		return
	}
	for i, p := range e.ForSteps {
		if p != "AllSteps" && !c.stepPaths[p] && !c.partial {
			d := c.diags.Warnf(c.pos(pipeline.Field(e.Node, "forSteps").Content[i]), "unknown-step", "forSteps names step %q, which the pipeline does not have; the rule never fires for it", p)
			if s := pipeline.Closest(p, sortedKeys(c.stepPaths)); s != "" {
				d.SetHint("did you mean %q? a step is named by its stage, step groups and identifier joined by '.', e.g. deploy.canary.canary_25", s)
			} else {
				d.SetHint("name a step by its stage, step groups and identifier joined by '.', e.g. deploy.canary.canary_25, or use AllSteps")
			}
		}
	}
}

func (c *checker) notificationMethod(rule string, m *pipeline.NotificationMethod) {
	if m.Type == "" {
		return
	}
	allowed, ok := pipeline.NotificationChannelFields[m.Type]
	if !ok {
		d := c.diags.Errorf(c.pos(pipeline.ValueAt(m.Node, "type")), "channel-type", "notification channel type %q is not known", m.Type)
		if s := pipeline.Closest(m.Type, channelTypes); s != "" {
			d.SetHint("did you mean %q? channel types: %s", s, strings.Join(channelTypes, ", "))
		} else {
			d.SetHint("channel types: %s", strings.Join(channelTypes, ", "))
		}
		return
	}
	s := m.Spec
	if s == nil {
		return
	}
	for i := 0; i+1 < len(s.Node.Content); i += 2 {
		k := s.Node.Content[i]
		switch k.Value {
		case "delegateSelectors", "executeOnDelegate", "description":
			continue
		}
		if !slices.Contains(allowed, k.Value) {
			c.diags.Warnf(c.pos(k), diag.UnknownKey, "a %s channel has no field %q; ignored, as the reference ignores it", m.Type, k.Value).
				SetHint("%s channels take: %s", m.Type, strings.Join(allowed, ", "))
		}
	}
	c.boolean(s.Node, "executeOnDelegate", s.ExecuteOnDelegate)
	if s.ExecuteOnDelegate == "true" && len(s.DelegateSelectors) == 0 {
		c.diags.Warnf(c.pos(pipeline.Key(s.Node, "executeOnDelegate")), "no-selectors", "executeOnDelegate without delegateSelectors: any worker sends the notifications, as without it")
	}
	for i, sel := range s.DelegateSelectors {
		if dynamic(sel) {
			c.diags.Unsupportedf(c.pos(pipeline.Field(s.Node, "delegateSelectors").Content[i]), "unsupported-expression-selector",
				"delegate selector %q is an expression; this version routes by fixed selectors", sel)
		}
	}
	if missing := c.channelTarget(m.Type, s); missing != "" {
		c.diags.Errorf(c.pos(s.Node), "missing-field", "notification rule %s: its %s channel has no target; it needs %s", rule, m.Type, missing)
	}
}

// channelTarget checks where a channel of type typ sends (addresses, URLs) and returns what
// it lacks to send anywhere, "" when it has a target.
func (c *checker) channelTarget(typ string, s *pipeline.NotificationChannel) (missing string) {
	groups := len(s.UserGroups) > 0
	switch typ {
	case "Email":
		if len(s.Recipients) == 0 && !groups {
			missing = "recipients or userGroups"
		}
		for i, r := range s.Recipients {
			if !dynamic(r) && !strings.Contains(r, "@") {
				c.diags.Errorf(c.pos(pipeline.Field(s.Node, "recipients").Content[i]), "email", "recipient %q is not an e-mail address", r)
			}
		}
	case "Slack":
		if s.WebhookURL == "" && !groups {
			missing = "webhookUrl or userGroups"
		}
		c.channelURL(s.Node, "webhookUrl", s.WebhookURL)
	case "MsTeams":
		if len(s.MsTeamKeys) == 0 && !groups {
			missing = "msTeamKeys or userGroups"
		}
		for i, u := range s.MsTeamKeys {
			c.urlValue(pipeline.Field(s.Node, "msTeamKeys").Content[i], u)
		}
	case "PagerDuty":
		if s.IntegrationKey == "" && !groups {
			missing = "integrationKey or userGroups"
		}
	case "Webhook":
		if s.WebhookURL == "" {
			missing = "webhookUrl"
		}
		c.channelURL(s.Node, "webhookUrl", s.WebhookURL)
	case "Datadog":
		switch {
		case s.URL == "" && s.APIKey == "":
			missing = "url and apiKey"
		case s.URL == "":
			missing = "url"
		case s.APIKey == "":
			missing = "apiKey"
		}
		c.channelURL(s.Node, "url", s.URL)
	}
	return missing
}

func (c *checker) channelURL(obj *yaml.Node, key, value string) {
	if n := pipeline.Field(obj, key); n != nil {
		c.urlValue(n, value)
	}
}

// urlValue checks a fixed URL; expressions are rendered and checked when an event is raised.
func (c *checker) urlValue(n *yaml.Node, value string) {
	if value == "" || dynamic(value) {
		return
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.diags.Errorf(c.pos(n), "url", "%q is not an absolute http(s) URL", value)
	}
}
