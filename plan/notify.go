package plan

// NotificationRule is an enabled notification rule of the pipeline (spec 20): the events it
// selects and the channel it tells. Channel fields may hold expressions, rendered when an event
// is raised; secrets stay references until a delivery attempt resolves them.
type NotificationRule struct {
	Identifier string              `json:"identifier"`
	Name       string              `json:"name"`
	Events     []NotificationEvent `json:"events"`
	Channel    NotificationChannel `json:"channel"`
}

// NotificationEvent is one pipelineEvents entry.
type NotificationEvent struct {
	Type   string   `json:"type"`
	Stages []string `json:"stages,omitempty"` // base stage identifiers or AllStages
	Steps  []string `json:"steps,omitempty"`  // step base paths or AllSteps (StepFailed only)
	// Freeze is the deployment freeze whose events a freeze's rule selects.
	Freeze string `json:"freeze,omitempty"`
}

// NotificationChannel is a rule's notificationMethod.
type NotificationChannel struct {
	Type           string            `json:"type"` // Email, Slack, MsTeams, PagerDuty, Webhook, Datadog
	Recipients     []string          `json:"recipients,omitempty"`
	UserGroups     []string          `json:"userGroups,omitempty"`
	WebhookURL     string            `json:"webhookUrl,omitempty"`
	MsTeamKeys     []string          `json:"msTeamKeys,omitempty"`
	IntegrationKey string            `json:"integrationKey,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	URL            string            `json:"url,omitempty"`
	APIKey         string            `json:"apiKey,omitempty"`
	// Selectors route the sends to workers with these tags (executeOnDelegate: true).
	Selectors []string `json:"selectors,omitempty"`
}
