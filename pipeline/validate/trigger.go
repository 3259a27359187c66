package validate

import (
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/reference"
)

// gitEvents lists each Git provider's events and their actions (spec 13.2).
var gitEvents = map[string]map[string][]string{
	"Github": {
		"PullRequest":  {"Close", "Edit", "Open", "Reopen", "Label", "Unlabel", "Synchronize", "ReadyForReview"},
		"Push":         nil,
		"IssueComment": {"Create", "Edit", "Delete"},
		"Release":      {"Create", "Edit", "Delete", "Prerelease", "Publish", "Release", "Unpublish"},
	},
	"Gitlab":    {"MergeRequest": {"Open", "Close", "Reopen", "Merge", "Update", "Sync"}, "Push": nil, "MRComment": {"Create"}},
	"Bitbucket": {"PullRequest": {"Create", "Update", "Merge", "Decline"}, "Push": nil, "PRComment": {"Create", "Edit", "Delete"}},
}

var conditionOperators = []string{"Equals", "NotEquals", "In", "NotIn", "StartsWith", "EndsWith", "Contains", "DoesNotContain", "Regex"}

// MinCronInterval is the least time between two fires of a cron trigger (spec 13.7).
const MinCronInterval = 5 * time.Minute

// trigger checks a trigger document (spec 13).
func (c *checker) trigger(t *pipeline.Trigger) {
	c.identifier(t.Node, "identifier", t.Identifier, "trigger")
	c.name(t.Node, t.Name, "trigger")
	c.identifier(t.Node, "pipelineIdentifier", t.PipelineIdentifier, "pipeline")
	c.boolean(t.Node, "enabled", t.Enabled)
	if t.Source == nil {
		return
	}
	if !pipeline.TriggerSourceKind.Check(&c.diags, c.pos(pipeline.ValueAt(t.Source.Node, "type")), t.Source.Type) {
		return
	}
	switch t.Source.Type {
	case "Webhook":
		var w pipeline.WebhookSource
		c.dec.Decode(t.Source.Spec, &w, "webhook source")
		c.webhook(&w)
	case "Scheduled":
		var s pipeline.ScheduledSource
		c.dec.Decode(t.Source.Spec, &s, "scheduled source")
		c.enum(s.Node, "type", s.Type, []string{"Cron"}, "scheduled source type")
		if s.Spec != nil {
			c.cron(s.Spec)
		}
	}
	if t.StagesToExecute != nil && len(t.StagesToExecute.Content) > 0 {
		c.diags.Warnf(c.pos(t.StagesToExecute), "not-implemented", "stagesToExecute is not implemented yet: the whole pipeline runs")
	}
	if t.Source != nil && t.Source.PollInterval != "" && t.Source.PollInterval != "0" {
		c.diags.Warnf(c.pos(pipeline.ValueAt(t.Source.Node, "pollInterval")), "not-implemented", "webhook polling is not implemented; deliveries must be pushed")
	}
	if t.InputYaml != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(t.InputYaml), &doc); err != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(t.Node, "inputYaml")), "input-yaml", "inputYaml is not valid YAML: %v", err)
		} else if d := pipeline.CheckExpansion("inputYaml", &doc); d != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(t.Node, "inputYaml")), d.Code, "inputYaml, line %d: %s", d.Pos.Line, d.Message).SetHint("%s", d.Hint)
		}
	}
}

func (c *checker) webhook(w *pipeline.WebhookSource) {
	if !pipeline.WebhookKind.Check(&c.diags, c.pos(pipeline.ValueAt(w.Node, "type")), w.Type) || w.Spec == nil {
		return
	}
	if w.Type == "Custom" {
		var ev pipeline.CustomEvent
		c.dec.Decode(w.Spec, &ev, "custom webhook spec")
		c.conditions(ev.PayloadConditions)
		c.conditions(ev.HeaderConditions)
		return
	}
	events, ok := gitEvents[w.Type]
	if !ok {
		return
	}
	var ev pipeline.GitEvent
	c.dec.Decode(w.Spec, &ev, w.Type+" webhook spec")
	names := make([]string, 0, len(events))
	for k := range events {
		names = append(names, k)
	}
	kind := pipeline.Kind{What: w.Type + " event", Code: "unsupported-trigger-event", Runs: sortedStrings(names), Reference: reference.WebhookEvents[w.Type]}
	if !kind.Check(&c.diags, c.pos(pipeline.ValueAt(ev.Node, "type")), ev.Type) || ev.Spec == nil {
		return
	}
	actions := events[ev.Type]
	for i, a := range ev.Spec.Actions {
		if pipeline.Canonical(actions, a) == "" {
			at := pipeline.Field(ev.Spec.Node, "actions")
			if at != nil && i < len(at.Content) {
				at = at.Content[i]
			}
			d := c.diags.Errorf(c.pos(at), "trigger-action", "%s %s has no action %q", w.Type, ev.Type, a)
			if len(actions) == 0 {
				d.SetHint("%s events have no actions; remove the list", ev.Type)
			} else {
				d.SetHint("actions: %s", strings.Join(actions, ", "))
			}
		}
	}
	c.conditions(ev.Spec.PayloadConditions)
	c.conditions(ev.Spec.HeaderConditions)
	if ev.Spec.AutoAbortPreviousExecutions == "true" {
		c.diags.Warnf(c.pos(pipeline.ValueAt(ev.Spec.Node, "autoAbortPreviousExecutions")), "not-implemented",
			"autoAbortPreviousExecutions is not implemented yet: earlier executions keep running")
	}
}

func (c *checker) conditions(list []pipeline.Condition) {
	for _, cond := range list {
		c.enum(cond.Node, "operator", cond.Operator, conditionOperators, "condition operator")
	}
}

// cron checks an expression and that two fires are at least MinCronInterval apart.
func (c *checker) cron(s *pipeline.CronSpec) {
	c.enum(s.Node, "type", s.Type, []string{"UNIX", "QUARTZ"}, "cron type")
	at := c.pos(pipeline.ValueAt(s.Node, "expression"))
	opts := cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow
	if s.Type == "QUARTZ" {
		opts |= cron.Second
	}
	sched, err := cron.NewParser(opts).Parse(s.Expression)
	if err != nil {
		d := c.diags.Errorf(at, "cron", "cron expression %q: %v", s.Expression, err)
		if s.Type == "QUARTZ" {
			d.SetHint("QUARTZ takes seconds first: seconds minutes hours day-of-month month day-of-week; L, W and # are not supported")
		} else {
			d.SetHint("UNIX takes 5 fields: minute hour day-of-month month day-of-week, e.g. 30 2 * * 1-5")
		}
		return
	}
	if s.TimeZone != "" && s.Timezone != "" && s.TimeZone != s.Timezone {
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "timezone")), "cron", "timeZone %q and timezone %q disagree", s.TimeZone, s.Timezone).
			SetHint("keep one of them")
	}
	if zone, key := s.Zone(); zone != "" {
		if _, err := time.LoadLocation(zone); err != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, key)), "cron", "unknown time zone %q", zone).
				SetHint("use an IANA name such as Europe/Berlin")
		}
	}
	// The tightest gap over a year of fires.
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := sched.Next(t)
	for i := 0; i < 2000 && !prev.IsZero(); i++ {
		next := sched.Next(prev)
		if next.IsZero() || next.Sub(t) > 366*24*time.Hour {
			break
		}
		if next.Sub(prev) < MinCronInterval {
			c.diags.Errorf(at, "cron", "cron expression %q fires %s apart; triggers must be at least %s apart", s.Expression, next.Sub(prev), MinCronInterval)
			return
		}
		prev = next
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
