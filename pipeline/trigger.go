package pipeline

import "gopkg.in/yaml.v3"

// Trigger is a `trigger:` document (spec 13.1).
type Trigger struct {
	Node                             *yaml.Node `yaml:"-"`
	Entity                           `yaml:",inline"`
	Enabled                          string         `yaml:"enabled"`
	PipelineIdentifier               string         `yaml:"pipelineIdentifier" gantry:"required"`
	PipelineBranchName               string         `yaml:"pipelineBranchName"`
	StagesToExecute                  *yaml.Node     `yaml:"stagesToExecute"`
	InputSetRefs                     []string       `yaml:"inputSetRefs"`
	InputYaml                        string         `yaml:"inputYaml"`
	EncryptedWebhookSecretIdentifier string         `yaml:"encryptedWebhookSecretIdentifier"`
	Source                           *TriggerSource `yaml:"source" gantry:"required"`
}

// TriggerSource is a trigger's `source`; Spec is decoded by type.
type TriggerSource struct {
	Node         *yaml.Node `yaml:"-"`
	Type         string     `yaml:"type" gantry:"required"`
	PollInterval string     `yaml:"pollInterval"`
	WebhookID    string     `yaml:"webhookId"`
	Spec         *yaml.Node `yaml:"spec" gantry:"required"`
}

// WebhookSource is `source.spec` of a Webhook trigger: the provider and its event spec.
type WebhookSource struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"` // Github, Gitlab, Bitbucket, Custom, ...
	Spec *yaml.Node `yaml:"spec" gantry:"required"`
}

// GitEvent is the event spec of a Git webhook (spec 13.2).
type GitEvent struct {
	Node *yaml.Node    `yaml:"-"`
	Type string        `yaml:"type" gantry:"required"` // PullRequest, Push, ...
	Spec *GitEventSpec `yaml:"spec" gantry:"required"`
}

// GitEventSpec holds a Git webhook's filters.
type GitEventSpec struct {
	Node                        *yaml.Node  `yaml:"-"`
	ConnectorRef                string      `yaml:"connectorRef"`
	RepoName                    string      `yaml:"repoName"`
	AutoAbortPreviousExecutions string      `yaml:"autoAbortPreviousExecutions"`
	Actions                     []string    `yaml:"actions"`
	PayloadConditions           []Condition `yaml:"payloadConditions"`
	HeaderConditions            []Condition `yaml:"headerConditions"`
	JexlCondition               string      `yaml:"jexlCondition"`
}

// CustomEvent is the spec of a Custom webhook (spec 13.4).
type CustomEvent struct {
	Node              *yaml.Node  `yaml:"-"`
	PayloadConditions []Condition `yaml:"payloadConditions"`
	HeaderConditions  []Condition `yaml:"headerConditions"`
	JexlCondition     string      `yaml:"jexlCondition"`
}

// Condition is a payload or header condition (spec 13.3).
type Condition struct {
	Node     *yaml.Node `yaml:"-"`
	Key      string     `yaml:"key" gantry:"required"`
	Operator string     `yaml:"operator" gantry:"required"`
	Value    string     `yaml:"value"`
}

// ScheduledSource is `source.spec` of a Scheduled trigger (spec 13.7).
type ScheduledSource struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"` // Cron
	Spec *CronSpec  `yaml:"spec" gantry:"required"`
}

// CronSpec is a cron schedule.
type CronSpec struct {
	Node       *yaml.Node `yaml:"-"`
	Type       string     `yaml:"type"` // UNIX (default) or QUARTZ
	Expression string     `yaml:"expression" gantry:"required"`
	TimeZone   string     `yaml:"timeZone"` // Gantry's extension (spec D19)
	Timezone   string     `yaml:"timezone"` // the reference schema's spelling of the same
}

// Zone is the schedule's IANA time zone, whichever spelling gave it; empty means UTC.
func (c *CronSpec) Zone() (name, key string) {
	if c.Timezone != "" {
		return c.Timezone, "timezone"
	}
	return c.TimeZone, "timeZone"
}
