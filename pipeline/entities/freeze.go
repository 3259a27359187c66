package entities

import (
	"slices"
	"sort"
	"time"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// freezes sets on each deployment the enabled freezes whose rules match it: its pipeline,
// organization, project, service, environment and environment type.
func (c *Catalog) freezes(p *pipeline.Pipeline, deploys []*plan.Deployment) {
	if len(c.Freezes) == 0 {
		return
	}
	ids := make([]string, 0, len(c.Freezes))
	for id := range c.Freezes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, d := range deploys {
		if d == nil || d.Service == nil || d.Environment == nil {
			continue
		}
		for _, id := range ids {
			f := c.Freezes[id].Freeze
			if f.Status == "Disabled" || !freezeMatches(f, p, d) {
				continue
			}
			if pf := PlanFreeze(f); len(pf.Windows) > 0 {
				d.Freezes = append(d.Freezes, pf)
			}
		}
	}
}

// freezeMatches reports whether one of a freeze's rules matches a deployment: every filter
// of the rule matches (a kind the rule does not filter matches anything).
func freezeMatches(f *pipeline.Freeze, p *pipeline.Pipeline, d *plan.Deployment) bool {
	values := map[string]string{"Org": p.OrgIdentifier, "Project": p.ProjectIdentifier, "Pipeline": p.Identifier,
		"Service": d.Service.ID, "Environment": d.Environment.ID, "EnvType": d.Environment.Type}
	for _, r := range f.EntityConfigs {
		all := true
		for _, e := range r.Entities {
			in := slices.ContainsFunc(e.EntityRefs, func(ref string) bool { return pipeline.LocalRef(ref) == values[e.Type] })
			switch e.FilterType {
			case "Equals":
				all = all && in
			case "NotEquals":
				all = all && !in
			}
		}
		if all {
			return true
		}
	}
	return false
}

// PlanFreeze turns a freeze file into the windows a stage checks (windows that do not parse
// were reported by validation and are left out).
func PlanFreeze(f *pipeline.Freeze) plan.Freeze {
	out := plan.Freeze{ID: f.Identifier, Name: f.Name, Rules: f.PlanRules(pipeline.FreezeEventRejected)}
	for _, w := range f.Windows {
		loc, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			continue
		}
		start, err := plan.ParseFreezeTime(w.StartTime, loc)
		if err != nil {
			continue
		}
		pw := plan.FreezeWindow{Zone: w.TimeZone, Start: start.UTC()}
		if w.Duration != "" {
			pw.Duration, err = plan.ParseFreezeDuration(w.Duration)
		} else {
			var end time.Time
			end, err = plan.ParseFreezeTime(w.EndTime, loc)
			pw.Duration = end.Sub(start)
		}
		if err != nil || pw.Duration <= 0 {
			continue
		}
		if r := w.Recurrence; r != nil {
			pw.Recurrence = r.Type
			if r.Spec != nil {
				pw.Every = r.Spec.Value
				if r.Spec.Until != "" {
					if u, err := plan.ParseFreezeTime(r.Spec.Until, loc); err == nil {
						pw.Until = u.UTC()
					}
				}
			}
		}
		out.Windows = append(out.Windows, pw)
	}
	return out
}
