package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

const verifyStagePipeline = `pipeline:
  name: verify
  identifier: verify
  stages:
    - stage:
        name: canary
        identifier: canary
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: deploy, identifier: deploy, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
              - step: {type: Wait, name: verify, identifier: verify, spec: {duration: 1m}}
            rollbackSteps:
              - step: {type: ShellScript, name: rollback, identifier: rollback, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
        failureStrategies:
          - onFailure: {errors: [Verification], action: {type: StageRollback}}
`

// canaryMetrics answers the metrics query as a Prometheus with one old and one new instance
// would: one value every 15 seconds, the new instance's errors scaled by factor.
type canaryMetrics struct {
	mu     sync.Mutex
	factor float64
	down   bool   // the server does not answer
	reject string // the server refuses the query
	calls  int
}

func (c *canaryMetrics) query(_ context.Context, in contract.MetricsRequest) (contract.MetricsAnswer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.down {
		return contract.MetricsAnswer{}, errors.New("dial tcp 127.0.0.1:9090: connection refused")
	}
	if c.reject != "" {
		return contract.MetricsAnswer{Metrics: []contract.MetricData{{ID: "errors", Rejected: c.reject}}}, nil
	}
	old := contract.InstanceSeries{Instance: "web-old"}
	fresh := contract.InstanceSeries{Instance: "web-new"}
	for i, at := 0, in.Start; !at.After(in.End); i, at = i+1, at.Add(in.Step) { // Prometheus includes both ends
		wobble := []float64{1, 1.1, 0.9, 1.05}[i%4]
		old.Points = append(old.Points, [2]float64{float64(at.Unix()), wobble})
		fresh.Points = append(fresh.Points, [2]float64{float64(at.Unix()), c.factor * wobble})
	}
	series := []contract.InstanceSeries{old}
	if in.End.Sub(in.Start) < time.Minute && c.factor > 0 { // the new instance runs only after the deployment
		series = append(series, fresh)
	}
	return contract.MetricsAnswer{Metrics: []contract.MetricData{{ID: "errors", Series: series}}}, nil
}

func f64(v float64) *float64 { return &v }

// runVerify runs a Custom stage whose second step is a Verify step of the given spec.
func runVerify(t *testing.T, spec map[string]any, m *canaryMetrics, thresholds ...plan.MetricThreshold) *workflows.PipelineResult {
	t.Helper()
	return runVerifyWithTimeout(t, spec, "1h", m, thresholds...)
}

func runVerifyWithTimeout(t *testing.T, spec map[string]any, timeout string, m *canaryMetrics, thresholds ...plan.MetricThreshold) *workflows.PipelineResult {
	t.Helper()
	return runVerifyIn(t, spec, timeout, m, nil, thresholds...)
}

// runVerifyIn is runVerify with the test environment set up further by prepare.
func runVerifyIn(t *testing.T, spec map[string]any, timeout string, m *canaryMetrics, prepare func(*testsuite.TestWorkflowEnvironment), thresholds ...plan.MetricThreshold) *workflows.PipelineResult {
	t.Helper()
	p := compile(t, "verify.yaml", verifyStagePipeline)
	ms := &plan.MonitoredService{ID: "web_prod", Service: "web", Environment: "prod", Sources: []plan.HealthSource{{
		ID: "prom", Type: "Prometheus", Prometheus: plan.PrometheusConnector{ID: "prom", URL: "http://127.0.0.1:9090"},
		Metrics:    []plan.Metric{{ID: "errors", Name: "Errors", Query: "sum by (pod) (rate(errors_total[1m]))", Higher: true, InstanceLabel: "pod"}},
		Thresholds: thresholds}}}
	step := p.Stages[0].Children[1]
	step.Type, step.Spec, step.Timeout = "Verify", spec, timeout
	step.Traits, step.Refs = &plan.Traits{Builtin: "verify"}, &plan.StepRefs{Monitored: ms}
	return runPrepared(t, p, workflows.Settings{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(contract.MetricsQuery, mock.Anything, mock.Anything).Return(m.query)
		if prepare != nil {
			prepare(env)
		}
	})
}

func verifySpec(typ string, failOnNoAnalysis bool) map[string]any {
	return map[string]any{"type": typ, "monitoredService": map[string]any{"type": "Configured", "spec": map[string]any{"monitoredServiceRef": "web_prod"}},
		"spec": map[string]any{"duration": "2m", "sensitivity": "MEDIUM", "failOnNoAnalysis": map[bool]string{true: "true", false: "false"}[failOnNoAnalysis]}}
}

func verdictOf(t *testing.T, res *workflows.PipelineResult) (n *workflows.Node, verdict string, analysed float64) {
	t.Helper()
	n = res.Tree.Find("canary.verify")
	if n == nil {
		t.Fatalf("no verify node in %+v", res.Tree)
	}
	r, _ := n.Outputs["result"].(map[string]any)
	verdict, _ = r["verdict"].(string)
	analysed, _ = n.Outputs["analysedMinutes"].(float64)
	return n, verdict, analysed
}

// A healthy canary passes after its two minutes; one whose errors tripled fails as a
// Verification failure, and the stage's failure strategy rolls it back.
func TestVerifyCanary(t *testing.T) {
	m := &canaryMetrics{factor: 1}
	res := runVerify(t, verifySpec("Canary", true), m)
	n, verdict, analysed := verdictOf(t, res)
	if res.Status != status.Succeeded || n.Status != status.Succeeded || verdict != "Passed" || analysed != 2 {
		t.Fatalf("healthy canary: pipeline %s, step %s %v, verdict %s after %v minutes", res.Status, n.Status, n.Failure, verdict, analysed)
	}
	metrics := n.Outputs["result"].(map[string]any)["metrics"].([]any)
	mr := metrics[0].(map[string]any)
	if mr["compared"] != "canary" || mr["testInstances"].([]any)[0] != "web-new" || len(mr["testSeries"].([]any)) != 8 {
		t.Errorf("metric result %v", mr)
	}
	if m.calls != 3 {
		t.Errorf("%d queries, want 3: the window before, then one a minute", m.calls)
	}

	res = runVerify(t, verifySpec("Canary", true), &canaryMetrics{factor: 3})
	n, verdict, _ = verdictOf(t, res)
	if n.Status != status.Failed || n.Failure == nil || n.Failure.Category != contract.Verification || verdict != "Failed" ||
		!strings.Contains(n.Failure.Message, "metric Errors (errors) of prom regressed: higher than the control") {
		t.Fatalf("tripled errors: step %s %+v, verdict %s", n.Status, n.Failure, verdict)
	}
	if rb := res.Tree.Find("canary.rollbackSteps.rollback"); rb == nil || rb.Status != status.Succeeded {
		t.Errorf("the stage did not roll back: %+v", rb)
	}
}

// The step's timeout bounds the analysis: a 2-minute verification in a 90-second step expires.
func TestVerifyTimeout(t *testing.T) {
	p := verifySpec("Canary", false)
	res := runVerifyWithTimeout(t, p, "90s", &canaryMetrics{factor: 1})
	n, _, analysed := verdictOf(t, res)
	if n.Status != status.Expired || n.Failure == nil || n.Failure.Category != contract.Timeout || analysed != 1 {
		t.Fatalf("step %s after %v minutes: %+v", n.Status, analysed, n.Failure)
	}
}

// A load test compares with the last passed load test of the monitored service: the first,
// without one, is judged by its thresholds and recorded as the next one's baseline; the next
// reads that window as its control.
func TestVerifyLoadTest(t *testing.T) {
	var mu sync.Mutex
	var last *contract.Verified
	var recorded []contract.RecordVerifiedInput
	records := func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(contract.LastVerified, mock.Anything, mock.Anything).Return(
			func(_ context.Context, k contract.VerifiedKey) (*contract.Verified, error) {
				mu.Lock()
				defer mu.Unlock()
				if k.Monitored != "web_prod" || k.Execution == "" {
					t.Errorf("asked for the last verification of %+v", k)
				}
				return last, nil
			})
		env.OnActivity(contract.RecordVerified, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in contract.RecordVerifiedInput) error {
				mu.Lock()
				defer mu.Unlock()
				recorded = append(recorded, in)
				return nil
			})
	}
	res := runVerifyIn(t, verifySpec("LoadTest", false), "1h", &canaryMetrics{factor: 1}, records)
	n, verdict, _ := verdictOf(t, res)
	metric := n.Outputs["result"].(map[string]any)["metrics"].([]any)[0].(map[string]any)
	if n.Status != status.Succeeded || verdict != "Passed" || metric["compared"] != "thresholds" || n.Outputs["before"] != nil ||
		!strings.Contains(fmt.Sprint(n.Outputs["notes"]), "no earlier passed load test of web_prod: thresholds alone decide") {
		t.Fatalf("first load test: %s %s, %v", n.Status, verdict, n.Outputs)
	}
	if len(recorded) != 1 || recorded[0].Verified.End.Sub(recorded[0].Verified.Start) != 2*time.Minute || recorded[0].Verified.Step != "canary.verify" {
		t.Fatalf("recorded %+v", recorded)
	}
	last = &contract.Verified{Execution: "web-7", Step: "canary.verify", Start: recorded[0].Verified.Start.Add(-time.Hour), End: recorded[0].Verified.End.Add(-time.Hour)}
	res = runVerifyIn(t, verifySpec("LoadTest", false), "1h", &canaryMetrics{factor: 1}, records)
	n, verdict, _ = verdictOf(t, res)
	metric = n.Outputs["result"].(map[string]any)["metrics"].([]any)[0].(map[string]any)
	before, _ := n.Outputs["before"].(map[string]any)
	from, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(before["start"]))
	if n.Status != status.Succeeded || verdict != "Passed" || metric["compared"] != "before/after" || n.Outputs["baseline"] != "web-7" ||
		!from.Equal(last.Start) {
		t.Fatalf("second load test: %s %s, %v", n.Status, verdict, n.Outputs)
	}
}

// A fail-fast threshold ends the step in its first minute.
func TestVerifyFailFast(t *testing.T) {
	res := runVerify(t, verifySpec("Canary", false), &canaryMetrics{factor: 3},
		plan.MetricThreshold{Kind: "FailFast", Action: "FailImmediately", Count: 1, Metric: "errors", GreaterThan: f64(2)})
	n, _, analysed := verdictOf(t, res)
	if n.Status != status.Failed || analysed != 1 || !strings.Contains(n.Failure.Message, "verification failed early: metric Errors (errors): fail-fast threshold, value above 2, crossed") {
		t.Fatalf("step %s after %v minutes: %+v", n.Status, analysed, n.Failure)
	}
}

// A Prometheus that does not answer is no analysis: a pass unless failOnNoAnalysis, which
// fails it; a refused query fails the step with Prometheus's message.
func TestVerifyWithoutAnswers(t *testing.T) {
	res := runVerify(t, verifySpec("Canary", false), &canaryMetrics{down: true})
	n, verdict, _ := verdictOf(t, res)
	if n.Status != status.Succeeded || verdict != "NoAnalysis" || len(n.Notes) == 0 || !strings.Contains(n.Notes[len(n.Notes)-1], "passed without analysis: the monitoring system did not answer 2 times") {
		t.Fatalf("without failOnNoAnalysis: %s %s %q", n.Status, verdict, n.Notes)
	}
	res = runVerify(t, verifySpec("Canary", true), &canaryMetrics{down: true})
	n, _, _ = verdictOf(t, res)
	if n.Status != status.Failed || n.Failure.Category != contract.Verification || !strings.Contains(n.Failure.Message, "failOnNoAnalysis is set") {
		t.Fatalf("with failOnNoAnalysis: %s %+v", n.Status, n.Failure)
	}
	res = runVerify(t, verifySpec("Canary", false), &canaryMetrics{reject: `1:5: parse error: unexpected "}"`})
	n, _, _ = verdictOf(t, res)
	if n.Status != status.Failed || !strings.Contains(n.Failure.Message, `prom rejected the query of metric errors: 1:5: parse error: unexpected "}"`) {
		t.Fatalf("rejected query: %s %+v", n.Status, n.Failure)
	}
}
