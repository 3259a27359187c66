package pipeline

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/plan"
)

// Freeze is a `freeze:` document: a deployment freeze window. Its rules (entityConfigs) say
// which deployments it stops, its windows when.
type Freeze struct {
	Node          *yaml.Node `yaml:"-"`
	Entity        `yaml:",inline"`
	EntityConfigs []FreezeRule   `yaml:"entityConfigs" gantry:"required"`
	Status        string         `yaml:"status"` // Enabled or Disabled
	Windows       []FreezeWindow `yaml:"windows"`
	// NotificationRules are the freeze's own notifications (its events, not a pipeline's).
	NotificationRules []FreezeNotificationRule `yaml:"notificationRules"`
}

// FreezeNotificationRule is one notification rule of a freeze: freeze events and the channel
// told of them, as a pipeline's rule tells of pipeline events.
type FreezeNotificationRule struct {
	Node               *yaml.Node          `yaml:"-"`
	Name               string              `yaml:"name" gantry:"required"`
	Identifier         string              `yaml:"identifier"`
	Enabled            string              `yaml:"enabled"`
	Events             []FreezeEvent       `yaml:"events" gantry:"required"`
	NotificationMethod *NotificationMethod `yaml:"notificationMethod" gantry:"required"`
	CustomizedMessage  string              `yaml:"customizedMessage"`
}

// FreezeEvent is one event type a freeze's rule selects.
type FreezeEvent struct {
	Node *yaml.Node `yaml:"-"`
	Type string     `yaml:"type" gantry:"required"`
}

// Freeze event types, as the reference names them.
const (
	FreezeEventRejected = "DeploymentRejectedDueToFreeze" // a deployment refused by the freeze
	FreezeEventActive   = "FreezeWindowEnabled"           // a window of the freeze begins
	FreezeEventEnabled  = "OnEnableFreezeWindow"          // the freeze is switched on
)

// FreezeEventTypes lists the freeze event types.
var FreezeEventTypes = []string{FreezeEventRejected, FreezeEventActive, FreezeEventEnabled}

// PlanRules are the freeze's enabled rules that select events of the given types, as
// notification rules of the plan: each selects those of its events, for this freeze only.
// Their identifiers are prefixed with the freeze's, so they never clash with a pipeline's.
func (f *Freeze) PlanRules(types ...string) []plan.NotificationRule {
	var pick []NotificationRule
	for i, r := range f.NotificationRules {
		var events []PipelineEvent
		for _, e := range r.Events {
			if slices.Contains(types, e.Type) {
				events = append(events, PipelineEvent{Type: e.Type, ForStages: []string{"AllStages"}})
			}
		}
		if len(events) == 0 {
			continue
		}
		id := r.Identifier
		if id == "" {
			id = fmt.Sprintf("rule%d", i+1)
		}
		pick = append(pick, NotificationRule{Name: r.Name, Identifier: "freeze." + f.Identifier + "." + id, Enabled: r.Enabled,
			PipelineEvents: events, NotificationMethod: r.NotificationMethod})
	}
	out := PlanNotifications(pick)
	for i := range out {
		for j := range out[i].Events {
			out[i].Events[j].Freeze = f.Identifier
		}
	}
	return out
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
