package verification

import (
	"math"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// The normal approximation with continuity and tie corrections, against values computed by
// hand (and by scipy.stats.mannwhitneyu with method="asymptotic").
func TestMannWhitney(t *testing.T) {
	u, greater, less := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if u != 0 || math.Abs(less-0.0061) > 0.0005 || greater < 0.99 {
		t.Fatalf("U=%v greater=%v less=%v, want 0, >0.99, 0.0061", u, greater, less)
	}
	// Ties: ranks are averaged, the variance shrinks.
	u, greater, _ = MannWhitney([]float64{2, 2, 3, 3}, []float64{1, 1, 2, 2})
	if u != 14 || math.Abs(greater-0.0432) > 0.001 {
		t.Fatalf("U=%v greater=%v, want 14 and 0.0432", u, greater)
	}
	if _, g, l := MannWhitney([]float64{1, 1, 1}, []float64{1, 1, 1}); g != 1 || l != 1 {
		t.Fatalf("all tied: %v %v, want 1 1", g, l)
	}
}

func TestCompare(t *testing.T) {
	base := []float64{1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98, 1.01, 0.99}
	triple := make([]float64, len(base))
	for i, v := range base {
		triple[i] = 3 * v
	}
	cases := []struct {
		name          string
		test, control []float64
		dir           Direction
		s             Sensitivity
		want          string
	}{
		{"same", base, base, Direction{Higher: true}, Medium, Passed},
		{"tripled errors", triple, base, Direction{Higher: true}, Medium, Failed},
		{"tripled, but only a fall fails", triple, base, Direction{Lower: true}, Medium, Passed},
		{"either way", triple, base, Direction{}, Medium, Failed},
		{"a fall of throughput", base, triple, Direction{Lower: true}, Medium, Failed},
		{"too few values", triple[:2], base, Direction{Higher: true}, Medium, NoData},
	}
	for _, c := range cases {
		got := Compare(c.test, c.control, c.dir, c.s)
		if got.Verdict != c.want {
			t.Errorf("%s: %s (%s, p=%v effect=%v), want %s", c.name, got.Verdict, got.Reason, got.P, got.Effect, c.want)
		}
	}
	// A 15% rise is significant but below Medium's 25% floor, and above High's 10%.
	up := make([]float64, len(base))
	for i, v := range base {
		up[i] = 1.15 * v
	}
	if got := Compare(up, base, Direction{Higher: true}, Medium); got.Verdict != Passed {
		t.Errorf("+15%% at Medium: %s, want Passed", got.Verdict)
	}
	if got := Compare(up, base, Direction{Higher: true}, High); got.Verdict != Failed {
		t.Errorf("+15%% at High: %s (p=%v), want Failed", got.Verdict, got.P)
	}
	// From zero errors to some: an infinite change, judged by the test alone.
	zeros, some := []float64{0, 0, 0, 0, 0, 0}, []float64{0.2, 0.3, 0.25, 0.2, 0.3, 0.2}
	if got := Compare(some, zeros, Direction{Higher: true}, Medium); got.Verdict != Failed || !math.IsInf(got.Effect, 1) {
		t.Errorf("from zero: %s effect %v, want Failed +Inf", got.Verdict, got.Effect)
	}
}

func TestSensitivityOf(t *testing.T) {
	for in, want := range map[string]Sensitivity{"HIGH": High, "low": Low, "Medium": Medium, "": Medium} {
		if got := SensitivityOf(in); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

func f(v float64) *float64 { return &v }

func TestThresholds(t *testing.T) {
	m := plan.Metric{ID: "errors", Group: "web"}
	if !Applies(plan.MetricThreshold{Metric: "errors"}, m) || Applies(plan.MetricThreshold{Metric: "latency"}, m) ||
		!Applies(plan.MetricThreshold{Group: "web"}, m) || Applies(plan.MetricThreshold{Group: "db"}, m) {
		t.Fatal("Applies picks the wrong metrics")
	}
	ignore := plan.MetricThreshold{Kind: "Ignore", LessThan: f(0.01)}
	if !Within(ignore, 0.005, 0, false) || Within(ignore, 0.02, 0, false) {
		t.Fatal("an absolute ignore rule below 0.01")
	}
	pct := plan.MetricThreshold{Kind: "FailFast", Percentage: true, GreaterThan: f(50), LessThan: f(20)}
	if !Breaches(pct, 1.6, 1, true) || Breaches(pct, 1.4, 1, true) || !Breaches(pct, 0.7, 1, true) || Breaches(pct, 1.6, 0, false) {
		t.Fatal("a percentage fail-fast rule: above +50% or below -20% of the control")
	}
	consecutive := plan.MetricThreshold{Kind: "FailFast", Action: "FailAfterConsecutiveOccurrence", Count: 2, GreaterThan: f(1)}
	var ff FailFast
	if ff.Observe(consecutive, true) || ff.Observe(consecutive, false) || ff.Observe(consecutive, true) || !ff.Observe(consecutive, true) {
		t.Fatal("two breaches in a row fail, not two apart")
	}
	occurrences := plan.MetricThreshold{Kind: "FailFast", Action: "FailAfterOccurrence", Count: 2, GreaterThan: f(1)}
	ff = FailFast{}
	if ff.Observe(occurrences, true) || ff.Observe(occurrences, false) || !ff.Observe(occurrences, true) {
		t.Fatal("two breaches apart fail")
	}
}

// series makes one instance's values at 15-second steps from at.
func series(instance string, at time.Time, values ...float64) contract.InstanceSeries {
	s := contract.InstanceSeries{Instance: instance}
	for i, v := range values {
		s.Points = append(s.Points, [2]float64{float64(at.Unix() + int64(15*i)), v})
	}
	return s
}

func TestCanaryAnalysis(t *testing.T) {
	ms := &plan.MonitoredService{ID: "web_prod", Sources: []plan.HealthSource{{ID: "prom", Metrics: []plan.Metric{
		{ID: "errors", Name: "Errors", Query: "x", Higher: true, InstanceLabel: "pod"},
	}}}}
	start := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name      string
		newValues []float64
		want      string
	}{
		{"healthy", []float64{1, 1.1, 0.9, 1}, Passed},
		{"errors tripled", []float64{3, 3.3, 2.7, 3}, Failed},
	} {
		a := New(ms, Canary, Medium)
		a.Before("prom", []contract.MetricData{{ID: "errors", Series: []contract.InstanceSeries{series("old-1", start.Add(-time.Minute), 1, 1, 1, 1)}}}, start.Add(-time.Minute))
		for minute := 0; minute < 2; minute++ {
			at := start.Add(time.Duration(minute) * time.Minute)
			a.Minute("prom", []contract.MetricData{{ID: "errors", Series: []contract.InstanceSeries{
				series("old-1", at, 1, 1.05, 0.95, 1), series("new-1", at, c.newValues...)}}}, start)
		}
		r := a.Result()
		if r.Verdict != c.want || r.Metrics[0].Compared != "canary" {
			t.Fatalf("%s: %s by %s (%s), want %s by canary", c.name, r.Verdict, r.Metrics[0].Compared, r.Reason, c.want)
		}
		if got := r.Metrics[0]; len(got.TestInstances) != 1 || got.TestInstances[0] != "new-1" || got.ControlInstances[0] != "old-1" || len(got.TestSeries) != 8 {
			t.Fatalf("%s: instances %v / %v, %d test points", c.name, got.TestInstances, got.ControlInstances, len(got.TestSeries))
		}
	}
}

func TestBeforeAfterAndNoData(t *testing.T) {
	ms := &plan.MonitoredService{ID: "web_prod", Sources: []plan.HealthSource{{ID: "prom",
		Metrics:    []plan.Metric{{ID: "latency", Name: "Latency", Query: "x", Higher: true}, {ID: "silent", Name: "Silent", Query: "y"}},
		Thresholds: []plan.MetricThreshold{{Kind: "Ignore", Metric: "latency", LessThan: f(10)}}}}}
	start := time.Unix(1_800_000_000, 0)
	a := New(ms, BeforeAfter, Medium)
	a.Before("prom", []contract.MetricData{{ID: "latency", Series: []contract.InstanceSeries{series("", start.Add(-time.Minute), 2, 2.1, 1.9, 2)}}}, start.Add(-time.Minute))
	a.Minute("prom", []contract.MetricData{{ID: "latency", Series: []contract.InstanceSeries{series("", start, 4, 4.2, 3.8, 4)}}}, start)
	r := a.Result()
	// Latency doubled, significantly, but stays under the ignore rule's 10; the silent metric
	// has no data and is said so, not counted healthy.
	if r.Verdict != Passed || r.Metrics[0].Verdict != Passed || r.Metrics[0].Compared != "before/after" || r.Metrics[1].Verdict != NoData {
		t.Fatalf("%+v", r)
	}
	a = New(&plan.MonitoredService{Sources: []plan.HealthSource{{ID: "prom", Metrics: []plan.Metric{{ID: "silent"}}}}}, BeforeAfter, Medium)
	if r := a.Result(); r.Verdict != NoAnalysis {
		t.Fatalf("no data at all: %s, want NoAnalysis", r.Verdict)
	}
}

func TestFailFastEndsEarly(t *testing.T) {
	ms := &plan.MonitoredService{Sources: []plan.HealthSource{{ID: "prom",
		Metrics:    []plan.Metric{{ID: "errors", Name: "Errors", Query: "x"}},
		Thresholds: []plan.MetricThreshold{{Kind: "FailFast", Action: "FailImmediately", Count: 1, Metric: "errors", GreaterThan: f(0.5)}}}}}
	start := time.Unix(1_800_000_000, 0)
	a := New(ms, ThresholdsOnly, Medium)
	if b := a.Minute("prom", []contract.MetricData{{ID: "errors", Series: []contract.InstanceSeries{series("", start, 0.1, 0.2)}}}, start); b != nil {
		t.Fatalf("breach below the threshold: %v", b)
	}
	b := a.Minute("prom", []contract.MetricData{{ID: "errors", Series: []contract.InstanceSeries{series("", start.Add(time.Minute), 0.9, 0.8)}}}, start)
	if b == nil || b.Metric != "errors" {
		t.Fatalf("no breach at a mean of 0.85 over 0.5")
	}
}
