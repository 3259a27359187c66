package verification

import (
	"fmt"

	"github.com/gantry-cd/gantry/plan"
)

// Applies reports whether a custom threshold covers a metric: it names the metric, or its
// group, or neither.
func Applies(t plan.MetricThreshold, m plan.Metric) bool {
	if t.Metric != "" {
		return t.Metric == m.ID
	}
	return t.Group == "" || t.Group == m.Group
}

// measure is the value a threshold bounds: the test's value itself (Absolute), or its change
// from the control in percent (Percentage). ok is false when a Percentage rule has no control.
func measure(t plan.MetricThreshold, test, control float64, haveControl bool) (float64, bool) {
	if !t.Percentage {
		return test, true
	}
	if !haveControl {
		return 0, false
	}
	return 100 * relativeChange(test, control), true
}

// Within reports whether an Ignore rule's bounds hold the value: above greaterThan and below
// lessThan, either bound left out being open.
func Within(t plan.MetricThreshold, test, control float64, haveControl bool) bool {
	v, ok := measure(t, test, control, haveControl)
	if !ok {
		return false
	}
	return (t.GreaterThan == nil || v > *t.GreaterThan) && (t.LessThan == nil || v < *t.LessThan)
}

// Breaches reports whether a fail-fast rule's bounds are crossed: above greaterThan or below
// lessThan (for Percentage, a rise above greaterThan percent or a fall below -lessThan percent).
func Breaches(t plan.MetricThreshold, test, control float64, haveControl bool) bool {
	v, ok := measure(t, test, control, haveControl)
	if !ok {
		return false
	}
	if t.GreaterThan != nil && v > *t.GreaterThan {
		return true
	}
	if t.LessThan == nil {
		return false
	}
	if t.Percentage {
		return v < -*t.LessThan
	}
	return v < *t.LessThan
}

// FailFast counts a fail-fast rule's breaches minute by minute.
type FailFast struct {
	Occurrences int `json:"occurrences"`
	Consecutive int `json:"consecutive"`
}

// Observe records one minute and reports whether the rule now fails the verification.
func (f *FailFast) Observe(t plan.MetricThreshold, breach bool) bool {
	if !breach {
		f.Consecutive = 0
		return false
	}
	f.Occurrences++
	f.Consecutive++
	count := max(t.Count, 1)
	switch t.Action {
	case "FailAfterOccurrence":
		return f.Occurrences >= count
	case "FailAfterConsecutiveOccurrence":
		return f.Consecutive >= count
	}
	return true // FailImmediately
}

// Describe says what a threshold bounds, for reasons people read.
func Describe(t plan.MetricThreshold) string {
	what := "value"
	if t.Percentage {
		what = "change from the control (%)"
	}
	switch {
	case t.GreaterThan != nil && t.LessThan != nil:
		return fmt.Sprintf("%s outside (%g, %g)", what, *t.GreaterThan, *t.LessThan)
	case t.GreaterThan != nil:
		return fmt.Sprintf("%s above %g", what, *t.GreaterThan)
	case t.LessThan != nil:
		return fmt.Sprintf("%s below %g", what, *t.LessThan)
	}
	return what
}
