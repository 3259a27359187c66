package validate

import (
	"time"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// Freeze entity types and filters, as the reference names them.
var (
	freezeEntityTypes = []string{"Org", "Project", "Service", "Environment", "EnvType", "Pipeline"}
	freezeFilters     = []string{"All", "Equals", "NotEquals"}
	freezeRecurrences = []string{"Daily", "Weekly", "Monthly", "Yearly"}
)

func (c *checker) freeze(f *pipeline.Freeze) {
	c.identifier(f.Node, "identifier", f.Identifier, "freeze")
	c.name(f.Node, f.Name, "freeze")
	c.enum(f.Node, "status", f.Status, []string{"Enabled", "Disabled"}, "freeze status")
	for _, r := range f.EntityConfigs {
		for _, e := range r.Entities {
			c.enum(e.Node, "type", e.Type, freezeEntityTypes, "freeze entity type")
			c.enum(e.Node, "filterType", e.FilterType, freezeFilters, "freeze filter type")
			if (e.FilterType == "Equals" || e.FilterType == "NotEquals") && len(e.EntityRefs) == 0 {
				c.diags.Errorf(c.pos(pipeline.ValueAt(e.Node, "filterType")), "empty", "rule %q filters %s by %s but lists no entityRefs", r.Name, e.Type, e.FilterType).
					SetHint("list the identifiers under entityRefs, or use filterType: All")
			}
		}
	}
	if len(f.Windows) == 0 && f.Status != "Disabled" {
		c.diags.Errorf(c.pos(f.Node), "empty", "freeze %s is enabled but has no windows", f.Identifier).
			SetHint("add a window (timeZone, startTime, duration or endTime), or set status: Disabled")
	}
	for _, w := range f.Windows {
		c.freezeWindow(w)
	}
	for _, r := range f.NotificationRules {
		c.freezeRule(r)
	}
}

// freezeRule checks a freeze's notification rule: the reference's event types and a channel
// as a pipeline's rule has.
func (c *checker) freezeRule(r pipeline.FreezeNotificationRule) {
	if r.Identifier != "" {
		c.identifier(r.Node, "identifier", r.Identifier, "notification rule")
	}
	for _, e := range r.Events {
		c.enum(e.Node, "type", e.Type, pipeline.FreezeEventTypes, "freeze event type")
	}
	if r.NotificationMethod != nil {
		c.notificationMethod(r.Name, r.NotificationMethod)
	}
	if r.CustomizedMessage != "" {
		c.diags.Warnf(c.pos(pipeline.ValueAt(r.Node, "customizedMessage")), "reference-field-ignored",
			"customizedMessage is not used: messages say what every Gantry notification says, with the freeze named")
	}
}

// freezeWindow checks one window: a zone Go knows, times it can read, an end after the start
// and a recurrence it can repeat.
func (c *checker) freezeWindow(w pipeline.FreezeWindow) {
	if pipeline.Field(w.Node, "timeZone") == nil || pipeline.Field(w.Node, "startTime") == nil {
		return // reported by the parser
	}
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil || w.TimeZone == "" {
		c.diags.Errorf(c.pos(pipeline.ValueAt(w.Node, "timeZone")), "invalid-value", "unknown time zone %q", w.TimeZone).
			SetHint("use an IANA zone name such as Europe/Berlin, America/New_York, Asia/Kolkata or UTC")
		return
	}
	start, err := plan.ParseFreezeTime(w.StartTime, loc)
	if err != nil {
		c.diags.Errorf(c.pos(pipeline.ValueAt(w.Node, "startTime")), "invalid-value", "startTime: %v", err)
		return
	}
	switch {
	case (w.Duration == "") == (w.EndTime == ""):
		c.diags.Errorf(c.pos(w.Node), "invalid-value", "a freeze window needs exactly one of duration and endTime").
			SetHint("give its length (duration: 2h) or its end (endTime: 2024-12-20 08:00 PM)")
	case w.Duration != "":
		if _, err := plan.ParseFreezeDuration(w.Duration); err != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(w.Node, "duration")), "invalid-value", "duration %q: %v", w.Duration, err).
				SetHint("units w, d, h, m: 30m, 2h, 1d 12h")
		}
	default:
		end, err := plan.ParseFreezeTime(w.EndTime, loc)
		if err != nil {
			c.diags.Errorf(c.pos(pipeline.ValueAt(w.Node, "endTime")), "invalid-value", "endTime: %v", err)
		} else if !end.After(start) {
			c.diags.Errorf(c.pos(pipeline.ValueAt(w.Node, "endTime")), "invalid-value", "endTime %s is not after startTime %s", w.EndTime, w.StartTime).
				SetHint("a window ends after it starts")
		}
	}
	r := w.Recurrence
	if r == nil {
		return
	}
	c.enum(r.Node, "type", r.Type, freezeRecurrences, "recurrence type")
	if r.Spec == nil {
		return
	}
	spec := pipeline.Field(r.Node, "spec")
	if r.Spec.Until != "" {
		until, err := plan.ParseFreezeTime(r.Spec.Until, loc)
		switch {
		case err != nil:
			c.diags.Errorf(c.pos(pipeline.ValueAt(spec, "until")), "invalid-value", "until: %v", err)
		case until.Before(start):
			c.diags.Errorf(c.pos(pipeline.ValueAt(spec, "until")), "invalid-value", "the recurrence ends (until %s) before the window starts (%s)", r.Spec.Until, w.StartTime)
		}
	}
	if pipeline.Field(spec, "value") != nil && (r.Type != "Monthly" || r.Spec.Value < 2 || r.Spec.Value > 11) {
		c.diags.Errorf(c.pos(pipeline.ValueAt(spec, "value")), "invalid-value", "recurrence value %d: only a Monthly recurrence takes one, from 2 to 11 (every N months)", r.Spec.Value)
	}
}
