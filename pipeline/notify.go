package pipeline

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/plan"
)

// NotificationRule is one entry of a pipeline's notificationRules (spec 20.1): events of the
// execution and the channel told about them. Enabled stays text: the reference reads it as a
// boolean whose absence means false.
type NotificationRule struct {
	Node               *yaml.Node          `yaml:"-"`
	Name               string              `yaml:"name" gantry:"required"`
	Identifier         string              `yaml:"identifier" gantry:"required"`
	Description        string              `yaml:"description"`
	Enabled            string              `yaml:"enabled"`
	PipelineEvents     []PipelineEvent     `yaml:"pipelineEvents" gantry:"required"`
	NotificationMethod *NotificationMethod `yaml:"notificationMethod" gantry:"required"`
	Template           *yaml.Node          `yaml:"template"`
}

// PipelineEvent selects events of one type, for some stages or steps (spec 20.2).
type PipelineEvent struct {
	Node        *yaml.Node `yaml:"-"`
	Type        string     `yaml:"type" gantry:"required"`
	ForStages   []string   `yaml:"forStages"`
	ForSteps    []string   `yaml:"forSteps"`
	Description string     `yaml:"description"`
}

// NotificationMethod is a rule's channel: its type and the type's spec (spec 20.3).
type NotificationMethod struct {
	Node        *yaml.Node           `yaml:"-"`
	Type        string               `yaml:"type" gantry:"required"`
	Spec        *NotificationChannel `yaml:"spec" gantry:"required"`
	Description string               `yaml:"description"`
}

// NotificationChannel holds the fields of every channel type; validation checks which ones a
// type allows (NotificationChannelFields).
type NotificationChannel struct {
	Node              *yaml.Node        `yaml:"-"`
	Recipients        []string          `yaml:"recipients"`
	UserGroups        []string          `yaml:"userGroups"`
	WebhookURL        string            `yaml:"webhookUrl"`
	MsTeamKeys        []string          `yaml:"msTeamKeys"`
	IntegrationKey    string            `yaml:"integrationKey"`
	Headers           map[string]string `yaml:"headers"`
	URL               string            `yaml:"url"`
	APIKey            string            `yaml:"apiKey"`
	DelegateSelectors []string          `yaml:"delegateSelectors"`
	ExecuteOnDelegate string            `yaml:"executeOnDelegate"`
	Description       string            `yaml:"description"`
}

// NotificationChannelFields are the spec fields of each channel type (besides
// delegateSelectors, executeOnDelegate and description, which every type takes).
var NotificationChannelFields = map[string][]string{
	"Email":     {"recipients", "userGroups"},
	"Slack":     {"webhookUrl", "userGroups"},
	"MsTeams":   {"msTeamKeys", "userGroups"},
	"PagerDuty": {"integrationKey", "userGroups"},
	"Webhook":   {"webhookUrl", "headers"},
	"Datadog":   {"url", "apiKey", "headers"},
}

// PlanNotifications are the enabled rules (spec 20.1: a rule without `enabled: true` never fires).
func PlanNotifications(rules []NotificationRule) []plan.NotificationRule {
	var out []plan.NotificationRule
	for _, r := range rules {
		m := r.NotificationMethod
		if r.Enabled != "true" || m == nil || m.Spec == nil {
			continue
		}
		rule := plan.NotificationRule{Identifier: r.Identifier, Name: r.Name}
		for _, e := range r.PipelineEvents {
			rule.Events = append(rule.Events, plan.NotificationEvent{Type: e.Type, Stages: e.ForStages, Steps: e.ForSteps})
		}
		s := m.Spec
		rule.Channel = plan.NotificationChannel{Type: m.Type, Recipients: s.Recipients, UserGroups: s.UserGroups,
			WebhookURL: s.WebhookURL, MsTeamKeys: s.MsTeamKeys, IntegrationKey: s.IntegrationKey, Headers: s.Headers,
			URL: s.URL, APIKey: s.APIKey}
		if s.ExecuteOnDelegate == "true" {
			rule.Channel.Selectors = s.DelegateSelectors
		}
		out = append(out, rule)
	}
	return out
}
