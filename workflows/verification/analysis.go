package verification

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Modes of analysis: what the new instances are compared with.
const (
	// Canary compares the new instances with the old ones running beside them, minute by
	// minute; Auto does so when both kinds report, and is BeforeAfter otherwise.
	Canary = "Canary"
	Auto   = "Auto"
	// BeforeAfter compares the service after the deployment with the same service over a
	// window of the same length before the stage started (blue-green, rolling).
	BeforeAfter = "BeforeAfter"
	// ThresholdsOnly judges by the custom thresholds alone (simple verification, and a load
	// test without a baseline).
	ThresholdsOnly = "ThresholdsOnly"
)

// ModeOf is the analysis mode of a Verify step's type.
func ModeOf(stepType string) string {
	switch stepType {
	case "Canary":
		return Canary
	case "Auto":
		return Auto
	case "Bluegreen", "BlueGreen", "Rolling":
		return BeforeAfter
	}
	return ThresholdsOnly
}

// Verdicts of a whole verification beyond Passed and Failed.
const NoAnalysis = "NoAnalysis"

// Analysis is a Verify step's state: every metric's control and test values so far. It is
// fed the monitoring system's answers window by window and decides from them alone.
type Analysis struct {
	Mode        string
	Sensitivity Sensitivity
	Metrics     []*Metric
}

// Metric is one metric's state.
type Metric struct {
	Source     string
	Def        plan.Metric
	Thresholds []plan.MetricThreshold // those that apply to it
	// old are the instances that reported before the deployment; split says the metric is
	// compared canary-style (old instances as the control), decided at its first data.
	old     map[string]bool
	split   *bool
	control []float64 // the before window's values, or the old instances'
	test    []float64
	before  []float64 // the before window's values, kept for an Auto metric that turns BeforeAfter
	// controlSeries and testSeries are the mean across instances per time, in seconds from
	// their window's start, for people to plot.
	controlSeries, testSeries [][2]float64
	beforeSeries              [][2]float64
	controlNames, testNames   []string
	fast                      []FailFast
	minutes                   int // minutes with test data
}

// New starts the analysis of a monitored service's metrics.
func New(ms *plan.MonitoredService, mode string, s Sensitivity) *Analysis {
	a := &Analysis{Mode: mode, Sensitivity: s}
	for _, src := range ms.Sources {
		for _, m := range src.Metrics {
			st := &Metric{Source: src.ID, Def: m, old: map[string]bool{}}
			for _, t := range src.Thresholds {
				if Applies(t, m) {
					st.Thresholds = append(st.Thresholds, t)
				}
			}
			st.fast = make([]FailFast, len(st.Thresholds))
			a.Metrics = append(a.Metrics, st)
		}
	}
	return a
}

func (a *Analysis) metric(source, id string) *Metric {
	for _, m := range a.Metrics {
		if m.Source == source && m.Def.ID == id {
			return m
		}
	}
	return nil
}

// Before records a source's answer for the window before the deployment (from start): the
// instances that already ran, and the values a BeforeAfter comparison uses as its control.
func (a *Analysis) Before(source string, data []contract.MetricData, start time.Time) {
	for _, d := range data {
		m := a.metric(source, d.ID)
		if m == nil {
			continue
		}
		for _, s := range d.Series {
			if len(s.Points) > 0 {
				m.old[s.Instance] = true
			}
		}
		vals, series := flatten(d.Series, start, nil)
		m.before, m.beforeSeries = append(m.before, vals...), append(m.beforeSeries, series...)
	}
}

// Breach is a fail-fast threshold crossed: the verification fails now.
type Breach struct {
	Source, Metric string
	Reason         string
}

// Minute records a source's answer for one minute of the analysis (start is the analysis's
// start, for the plotted series) and applies the fail-fast thresholds to it.
func (a *Analysis) Minute(source string, data []contract.MetricData, start time.Time) *Breach {
	var breach *Breach
	for _, d := range data {
		m := a.metric(source, d.ID)
		if m == nil {
			continue
		}
		if m.split == nil && len(d.Series) > 0 {
			split := a.splits(m, d.Series)
			m.split = &split
			if !split {
				m.control, m.controlSeries = m.before, m.beforeSeries
				m.controlNames = slices.Sorted(maps.Keys(m.old))
			}
		}
		var testVals, controlVals []float64
		if m.split != nil && *m.split {
			var testSeries, controlSeries []contract.InstanceSeries
			for _, s := range d.Series {
				if m.old[s.Instance] {
					controlSeries = append(controlSeries, s)
				} else {
					testSeries = append(testSeries, s)
				}
			}
			var cs, ts [][2]float64
			controlVals, cs = flatten(controlSeries, start, &m.controlNames)
			testVals, ts = flatten(testSeries, start, &m.testNames)
			m.control, m.controlSeries = append(m.control, controlVals...), append(m.controlSeries, cs...)
			m.test, m.testSeries = append(m.test, testVals...), append(m.testSeries, ts...)
		} else {
			var ts [][2]float64
			testVals, ts = flatten(d.Series, start, &m.testNames)
			m.test, m.testSeries = append(m.test, testVals...), append(m.testSeries, ts...)
		}
		if len(testVals) == 0 {
			continue
		}
		m.minutes++
		mean := Summarize(testVals).Mean
		ctrl := Summarize(m.control)
		for i, t := range m.Thresholds {
			if t.Kind != "FailFast" {
				continue
			}
			if m.fast[i].Observe(t, Breaches(t, mean, ctrl.Median, ctrl.N > 0)) && breach == nil {
				breach = &Breach{Source: source, Metric: m.Def.ID,
					Reason: fmt.Sprintf("metric %s (%s): fail-fast threshold, %s, %s (this minute's mean %s)",
						m.Def.Name, m.Def.ID, Describe(t), occurrences(t, m.fast[i]), format(mean))}
			}
		}
	}
	return breach
}

// splits decides whether a metric is compared canary-style: new instances beside old ones.
func (a *Analysis) splits(m *Metric, series []contract.InstanceSeries) bool {
	if a.Mode != Canary && a.Mode != Auto || m.Def.InstanceLabel == "" {
		return false
	}
	if a.Mode == Canary {
		return true
	}
	var old, fresh bool
	for _, s := range series {
		if m.old[s.Instance] {
			old = true
		} else {
			fresh = true
		}
	}
	return old && fresh
}

func occurrences(t plan.MetricThreshold, f FailFast) string {
	switch t.Action {
	case "FailAfterOccurrence":
		return fmt.Sprintf("crossed in %d minutes", f.Occurrences)
	case "FailAfterConsecutiveOccurrence":
		return fmt.Sprintf("crossed %d minutes in a row", f.Consecutive)
	}
	return "crossed"
}

// flatten returns every value of the series, and their mean across instances per time as
// seconds from start; names collects the instances seen.
func flatten(series []contract.InstanceSeries, start time.Time, names *[]string) ([]float64, [][2]float64) {
	var vals []float64
	sum, count := map[float64]float64{}, map[float64]int{}
	for _, s := range series {
		if names != nil && len(s.Points) > 0 && !slices.Contains(*names, s.Instance) {
			*names = append(*names, s.Instance)
			slices.Sort(*names)
		}
		for _, p := range s.Points {
			vals = append(vals, p[1])
			at := p[0] - float64(start.Unix())
			sum[at] += p[1]
			count[at]++
		}
	}
	var out [][2]float64
	for _, at := range slices.Sorted(maps.Keys(count)) {
		out = append(out, [2]float64{at, sum[at] / float64(count[at])})
	}
	return vals, out
}

// Result is a verification's outcome: its verdict and each metric's.
type Result struct {
	Verdict string         `json:"verdict"` // Passed, Failed or NoAnalysis
	Reason  string         `json:"reason"`
	Metrics []MetricResult `json:"metrics"`
}

// MetricResult is one metric's outcome, with what people plot.
type MetricResult struct {
	Source   string `json:"source"`
	ID       string `json:"id"`
	Name     string `json:"name"`
	Group    string `json:"group,omitempty"`
	Category string `json:"category,omitempty"`
	// Compared says how: "canary" (old instances beside new), "before/after" or
	// "thresholds".
	Compared string  `json:"compared"`
	Verdict  string  `json:"verdict"`
	Reason   string  `json:"reason"`
	Test     Summary `json:"test"`
	Control  Summary `json:"control"`
	U        float64 `json:"u"`
	P        float64 `json:"p"`
	// Change is the relative change of the median (0.5 = +50%), absent when the control's
	// median is 0; ChangeText says it for people ("+50%", "from 0").
	Change           *float64     `json:"change,omitempty"`
	ChangeText       string       `json:"changeText"`
	TestSeries       [][2]float64 `json:"testSeries,omitempty"`
	ControlSeries    [][2]float64 `json:"controlSeries,omitempty"`
	TestInstances    []string     `json:"testInstances,omitempty"`
	ControlInstances []string     `json:"controlInstances,omitempty"`
}

// Result decides: a metric fails when it regressed significantly and no Ignore rule covers
// it; the verification fails when a metric did, has no analysis when no metric had data, and
// passes otherwise.
func (a *Analysis) Result() Result {
	var r Result
	passed, failed := 0, 0
	for _, m := range a.Metrics {
		mr := MetricResult{Source: m.Source, ID: m.Def.ID, Name: m.Def.Name, Group: m.Def.Group, Category: m.Def.Category,
			TestSeries: m.testSeries, ControlSeries: m.controlSeries, TestInstances: m.testNames, ControlInstances: m.controlNames}
		switch {
		case a.Mode == ThresholdsOnly:
			mr.Compared, mr.Test = "thresholds", Summarize(m.test)
			mr.Verdict, mr.Reason = Passed, "no fail-fast threshold crossed"
			if len(m.test) == 0 {
				mr.Verdict, mr.Reason = NoData, "no values"
			}
		default:
			mr.Compared = "before/after"
			if m.split != nil && *m.split {
				mr.Compared = "canary"
			}
			c := Compare(m.test, m.control, Direction{Higher: m.Def.Higher, Lower: m.Def.Lower}, a.Sensitivity)
			mr.Verdict, mr.Reason, mr.Test, mr.Control, mr.U, mr.P = c.Verdict, c.Reason, c.Test, c.Control, c.U, c.P
			if c.Verdict != NoData {
				mr.ChangeText = changeText(c.Effect)
				if !math.IsInf(c.Effect, 0) {
					e := c.Effect
					mr.Change = &e
				}
			}
			if c.Verdict == NoData && len(m.test) == 0 {
				mr.Reason = "no values from the new instances"
			} else if c.Verdict == NoData {
				mr.Reason = "no values from the control"
			}
			if c.Verdict == Failed {
				for _, t := range m.Thresholds {
					if t.Kind == "Ignore" && Within(t, c.Test.Median, c.Control.Median, true) {
						mr.Verdict, mr.Reason = Passed, fmt.Sprintf("%s, but within an ignore threshold", c.Reason)
						break
					}
				}
			}
		}
		switch mr.Verdict {
		case Passed:
			passed++
		case Failed:
			failed++
			if r.Reason == "" {
				r.Reason = fmt.Sprintf("metric %s (%s) of %s regressed: %s (median %s → %s, p=%.3g)",
					mr.Name, mr.ID, mr.Source, mr.Reason, format(mr.Control.Median), format(mr.Test.Median), mr.P)
			}
		}
		r.Metrics = append(r.Metrics, mr)
	}
	switch {
	case failed > 0:
		r.Verdict = Failed
		if failed > 1 {
			r.Reason += fmt.Sprintf(" (and %d more metrics)", failed-1)
		}
	case passed == 0:
		r.Verdict, r.Reason = NoAnalysis, "no metric had enough values to analyse"
	default:
		r.Verdict, r.Reason = Passed, fmt.Sprintf("%d of %d metrics analysed, none regressed", passed, len(a.Metrics))
	}
	return r
}

func changeText(e float64) string {
	switch {
	case math.IsInf(e, 1):
		return "up from 0"
	case math.IsInf(e, -1):
		return "down to 0"
	}
	return fmt.Sprintf("%+.1f%%", 100*e)
}

func format(v float64) string { return fmt.Sprintf("%.4g", v) }
