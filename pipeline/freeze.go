package pipeline

import "gopkg.in/yaml.v3"

// Freeze is a `freeze:` document: a deployment freeze window. Its rules (entityConfigs) say
// which deployments it stops, its windows when.
type Freeze struct {
	Node          *yaml.Node `yaml:"-"`
	Entity        `yaml:",inline"`
	EntityConfigs []FreezeRule   `yaml:"entityConfigs" gantry:"required"`
	Status        string         `yaml:"status"` // Enabled or Disabled
	Windows       []FreezeWindow `yaml:"windows"`
	// NotificationRules are the freeze's own notifications; accepted, not acted on yet.
	NotificationRules *yaml.Node `yaml:"notificationRules"`
}

// FreezeRule is one rule of a freeze: a deployment is frozen when every entity filter of one
// rule matches it.
type FreezeRule struct {
	Node     *yaml.Node     `yaml:"-"`
	Name     string         `yaml:"name" gantry:"required"`
	Entities []FreezeEntity `yaml:"entities" gantry:"required"`
}

// FreezeEntity filters one kind of entity: Org, Project, Service, Environment, EnvType or
// Pipeline, by filterType All, Equals or NotEquals the entityRefs.
type FreezeEntity struct {
	Node       *yaml.Node `yaml:"-"`
	Type       string     `yaml:"type" gantry:"required"`
	FilterType string     `yaml:"filterType" gantry:"required"`
	EntityRefs []string   `yaml:"entityRefs"`
}

// FreezeWindow is when a freeze holds: from startTime for duration (or to endTime), in
// timeZone, repeated by recurrence.
type FreezeWindow struct {
	Node       *yaml.Node        `yaml:"-"`
	TimeZone   string            `yaml:"timeZone" gantry:"required"`
	StartTime  string            `yaml:"startTime" gantry:"required"`
	Duration   string            `yaml:"duration"`
	EndTime    string            `yaml:"endTime"`
	Recurrence *FreezeRecurrence `yaml:"recurrence"`
}

// FreezeRecurrence repeats a window: Daily, Weekly, Monthly or Yearly, until a time; value is
// every how many months a Monthly one repeats.
type FreezeRecurrence struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"`
	Spec *struct {
		Until string `yaml:"until"`
		Value int    `yaml:"value"`
	} `yaml:"spec"`
}
