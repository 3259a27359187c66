package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // freeze windows name IANA zones; every binary carries the same database

	"github.com/gantry-cd/gantry/plan/duration"
)

// Freeze is a deployment freeze that matches a Deployment stage: when one of its windows
// holds, the stage does not deploy (FREEZE_FAILED).
type Freeze struct {
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Windows []FreezeWindow `json:"windows"`
	// Rules are the freeze's notification rules for the deployments it refuses; compiling
	// moves them into the plan's rules (FreezeRules), once however many stages it matches.
	Rules []NotificationRule `json:"rules,omitempty"`
}

// FreezeWindow is one window of a freeze: from Start for Duration, repeated every Every
// Recurrence (Daily, Weekly, Monthly, Yearly; "" once) while a repetition starts no later
// than Until, with the calendar of Zone (so a daily window keeps its local hour across
// daylight saving changes).
type FreezeWindow struct {
	Zone       string        `json:"zone"`
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration"`
	Recurrence string        `json:"recurrence,omitempty"`
	Every      int           `json:"every,omitempty"`
	Until      time.Time     `json:"until,omitzero"`
}

// FreezeTimeLayouts are the layouts of a window's startTime, endTime and until: the
// reference's 12-hour clock, and a 24-hour one.
var FreezeTimeLayouts = []string{"2006-01-02 03:04 PM", "2006-01-02 15:04"}

// ParseFreezeTime reads a freeze time in a zone.
func ParseFreezeTime(s string, loc *time.Location) (time.Time, error) {
	for _, l := range FreezeTimeLayouts {
		if t, err := time.ParseInLocation(l, strings.TrimSpace(s), loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time of the form 2024-12-20 06:00 PM (or 2024-12-20 18:00)", s)
}

// ParseFreezeDuration reads a window's duration: units w, d, h, m, s, as in 1d 12h or 30m.
func ParseFreezeDuration(s string) (time.Duration, error) {
	d, err := duration.Parse(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, errors.New("a freeze window lasts more than 0")
	}
	return d, nil
}

// occurrence is the start of the window's k-th repetition.
func (w FreezeWindow) occurrence(k int) time.Time {
	loc, err := time.LoadLocation(w.Zone)
	if err != nil {
		loc = time.UTC
	}
	s := w.Start.In(loc)
	every := max(w.Every, 1)
	switch w.Recurrence {
	case "Daily":
		return s.AddDate(0, 0, k)
	case "Weekly":
		return s.AddDate(0, 0, 7*k)
	case "Monthly":
		return s.AddDate(0, k*every, 0)
	case "Yearly":
		return s.AddDate(k, 0, 0)
	}
	return s
}

// period is a rough length of one repetition, to find the one near a time.
func (w FreezeWindow) period() time.Duration {
	switch w.Recurrence {
	case "Daily":
		return 24 * time.Hour
	case "Weekly":
		return 7 * 24 * time.Hour
	case "Monthly":
		return time.Duration(max(w.Every, 1)) * 30 * 24 * time.Hour
	case "Yearly":
		return 365 * 24 * time.Hour
	}
	return 0
}

// repeats reports whether repetition k exists.
func (w FreezeWindow) repeats(k int) bool {
	if k < 0 || (k > 0 && w.Recurrence == "") {
		return false
	}
	return w.Until.IsZero() || !w.occurrence(k).After(w.Until)
}

// At returns the repetition of the window that holds at t, if one does.
func (w FreezeWindow) At(t time.Time) (from, to time.Time, ok bool) {
	k := 0
	if p := w.period(); p > 0 && t.After(w.Start) {
		k = int(t.Sub(w.Start) / p)
	}
	// The estimate is off by at most one or two repetitions (months and years vary, and a
	// window may outlast its period).
	for i := k + 1; i >= k-3; i-- {
		if !w.repeats(i) {
			continue
		}
		from = w.occurrence(i)
		to = from.Add(w.Duration)
		if !t.Before(from) && t.Before(to) {
			return from, to, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// Next returns the first repetition that starts after t, if there is one.
func (w FreezeWindow) Next(t time.Time) (from, to time.Time, ok bool) {
	k := 0
	if p := w.period(); p > 0 && t.After(w.Start) {
		k = max(int(t.Sub(w.Start)/p)-2, 0)
	}
	for i := k; i < k+8 && w.repeats(i); i++ {
		if from = w.occurrence(i); from.After(t) {
			return from, from.Add(w.Duration), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// ActiveAt returns the window of the freeze that holds at t: its start and end.
func (f Freeze) ActiveAt(t time.Time) (from, to time.Time, ok bool) {
	for _, w := range f.Windows {
		if from, to, ok = w.At(t); ok {
			return from, to, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// NextStart returns the first window of the freeze that starts after t: its start and end.
func (f Freeze) NextStart(t time.Time) (from, to time.Time, ok bool) {
	for _, w := range f.Windows {
		if wf, wt, wok := w.Next(t); wok && (!ok || wf.Before(from)) {
			from, to, ok = wf, wt, true
		}
	}
	return from, to, ok
}

// FreezeRules moves the notification rules of the freezes that match the plan's deployments
// into the plan's own rules, once per rule.
func FreezeRules(p *Plan) {
	seen := map[string]bool{}
	for _, r := range p.Notifications {
		seen[r.Identifier] = true
	}
	lift := func(d *Deployment) {
		if d == nil {
			return
		}
		for i := range d.Freezes {
			for _, r := range d.Freezes[i].Rules {
				if !seen[r.Identifier] {
					seen[r.Identifier] = true
					p.Notifications = append(p.Notifications, r)
				}
			}
			d.Freezes[i].Rules = nil
		}
	}
	Walk(p.Stages, nil, func(n *Node, _ []string) {
		lift(n.Deploy)
		for _, k := range sortedDeployKeys(n.Deploys) {
			lift(n.Deploys[k])
		}
	})
}

func sortedDeployKeys(m map[string]*Deployment) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
