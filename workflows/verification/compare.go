// Package verification judges a deployment by its metrics: it compares the values of the new
// instances (the test) with a control, metric by metric, with a Mann-Whitney U test and an
// effect-size floor, and applies the health source's custom thresholds. It is pure
// computation, run inside workflows, so a replayed analysis reaches the same verdict from the
// same data. docs/verification.md describes the method.
package verification

import (
	"math"
	"slices"
	"strings"
)

// Verdicts of a metric, and of a whole verification.
const (
	Passed = "Passed"
	Failed = "Failed"
	// NoData: too few values to compare (the metric is not judged).
	NoData = "NoData"
)

// MinSamples is the fewest values on each side that a comparison needs.
const MinSamples = 3

// Sensitivity is how readily a change fails the verification: the significance level of the
// test and the smallest relative change of the median that counts.
type Sensitivity struct {
	Name      string  `json:"name"`
	Alpha     float64 `json:"alpha"`
	MinEffect float64 `json:"minEffect"` // relative change of the median, 0.25 = 25%
}

// Sensitivities, as docs/verification.md lists them.
var (
	High   = Sensitivity{Name: "High", Alpha: 0.05, MinEffect: 0.10}
	Medium = Sensitivity{Name: "Medium", Alpha: 0.01, MinEffect: 0.25}
	Low    = Sensitivity{Name: "Low", Alpha: 0.001, MinEffect: 0.50}
)

// SensitivityOf reads a step's sensitivity in any case; the default is Medium.
func SensitivityOf(s string) Sensitivity {
	switch strings.ToLower(s) {
	case "high":
		return High
	case "low":
		return Low
	}
	return Medium
}

// Summary describes one side of a comparison.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize describes values.
func Summarize(values []float64) Summary {
	s := Summary{N: len(values)}
	if len(values) == 0 {
		return s
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	s.Min, s.Max, s.Median = sorted[0], sorted[len(sorted)-1], median(sorted)
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	s.Mean = sum / float64(len(sorted))
	return s
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Direction says which change of a metric is a regression.
type Direction struct {
	Higher bool // a rise fails (errors, latency)
	Lower  bool // a fall fails (throughput)
}

// either is a metric whose risk profile names no direction: any change counts.
func (d Direction) either() bool { return !d.Higher && !d.Lower }

// Comparison is a metric's test values against its control values.
type Comparison struct {
	Test    Summary `json:"test"`
	Control Summary `json:"control"`
	// U is the Mann-Whitney statistic of the test sample; P the one-sided p-value in the
	// direction that fails (the smaller of the two when either does).
	U float64 `json:"u"`
	P float64 `json:"p"`
	// Effect is the relative change of the median from control to test (+0.5 = 50% higher);
	// ±Inf when the control's median is 0 and the test's is not.
	Effect  float64 `json:"effect"`
	Verdict string  `json:"verdict"`
	Reason  string  `json:"reason"`
}

// Compare judges test values against control values: the metric fails when the test is
// shifted in a failing direction with p below the sensitivity's alpha and its median moved by
// at least the sensitivity's minimum effect.
func Compare(test, control []float64, dir Direction, s Sensitivity) Comparison {
	c := Comparison{Test: Summarize(test), Control: Summarize(control), P: 1}
	if len(test) < MinSamples || len(control) < MinSamples {
		c.Verdict, c.Reason = NoData, "fewer than 3 values on a side"
		return c
	}
	u, greater, less := MannWhitney(test, control)
	c.U, c.Effect = u, relativeChange(c.Test.Median, c.Control.Median)
	up := (dir.Higher || dir.either()) && greater < s.Alpha && c.Effect >= s.MinEffect
	down := (dir.Lower || dir.either()) && less < s.Alpha && c.Effect <= -s.MinEffect
	switch {
	case dir.Higher && !dir.Lower:
		c.P = greater
	case dir.Lower && !dir.Higher:
		c.P = less
	default:
		c.P = math.Min(greater, less)
	}
	switch {
	case up:
		c.Verdict, c.Reason = Failed, "higher than the control"
	case down:
		c.Verdict, c.Reason = Failed, "lower than the control"
	default:
		c.Verdict, c.Reason = Passed, "no significant regression"
	}
	return c
}

// relativeChange is (test - control) / |control|.
func relativeChange(test, control float64) float64 {
	switch {
	case test == control:
		return 0
	case control == 0:
		return math.Inf(int(math.Copysign(1, test-control)))
	}
	return (test - control) / math.Abs(control)
}

// MannWhitney returns the U statistic of x against y and the one-sided p-values that x is
// stochastically greater and smaller than y, from the normal approximation with the tie
// correction and a continuity correction.
func MannWhitney(x, y []float64) (u, pGreater, pLess float64) {
	n1, n2 := float64(len(x)), float64(len(y))
	type obs struct {
		v    float64
		test bool
	}
	all := make([]obs, 0, len(x)+len(y))
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortStableFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	rankSum, ties := 0.0, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1 .. j, averaged
		for k := i; k < j; k++ {
			if all[k].test {
				rankSum += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u = rankSum - n1*(n1+1)/2
	n := n1 + n2
	mean := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return u, 1, 1 // every value the same
	}
	sd := math.Sqrt(variance)
	pGreater = upperTail((u - mean - 0.5) / sd)
	pLess = 1 - upperTail((u-mean+0.5)/sd)
	return u, pGreater, pLess
}

// upperTail is P(Z > z) for a standard normal Z.
func upperTail(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }
