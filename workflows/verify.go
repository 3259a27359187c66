package workflows

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/plan/duration"
	"github.com/gantry-cd/gantry/stepspec"
	"github.com/gantry-cd/gantry/workflows/verification"
)

// verifier runs Verify steps' analyses; they keep no state beyond their step's node.
type verifier struct {
	*stageRun
}

// verifyStep runs a Verify step (docs/verification.md): it reads the monitored service's
// metrics for the window before the stage started, then once a minute, on durable timers, for
// its duration; fail-fast thresholds end it early; at the end each metric's test values are
// compared with its control. The analysis is workflow code over the activities' answers, so a
// worker that dies mid-analysis resumes it and reaches the same verdict.
func (s *verifier) verifyStep(ctx workflow.Context, n *plan.Node, t *Node, spec any, timeout time.Duration) (map[string]any, *contract.Failure) {
	// The step's timeout bounds the whole analysis.
	ctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	expired := false
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, timeout) == nil {
			expired = true
			cancel()
		}
	})
	outputs, f := s.analyse(ctx, n, t, spec)
	if expired {
		return outputs, &contract.Failure{Category: contract.Timeout, Message: fmt.Sprintf("the verification did not end within the step's timeout of %s", timeout)}
	}
	return outputs, f
}

// analyse runs the analysis of a Verify step.
func (s *verifier) analyse(ctx workflow.Context, n *plan.Node, t *Node, spec any) (map[string]any, *contract.Failure) {
	ms := namedMonitored(n)
	if ms == nil && s.in.Stage.Deploy != nil {
		ms = s.in.Stage.Deploy.Monitored
	}
	if ms == nil || len(ms.Sources) == 0 {
		return nil, &contract.Failure{Category: contract.Unknown, Message: "no monitored service with a health source for this stage's service and environment: add a monitoredService file"}
	}
	sp, err := specOf[stepspec.VerifySpec](spec)
	if err != nil {
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("Verify spec: %v", err)}
	}
	job := sp.Spec
	if job == nil {
		job = &stepspec.VerifyJob{}
	}
	typ := string(sp.Type)
	d, err := duration.Parse(strings.TrimSpace(string(job.Duration)))
	if err != nil || d <= 0 {
		return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("verification duration %q: give a duration like 5m", string(job.Duration))}
	}
	minute := s.in.Settings.verifyMinute()
	minutes := int(math.Ceil(d.Minutes()))
	failOnNoAnalysis := string(job.FailOnNoAnalysis) == "true"
	mode := verification.ModeOf(typ)
	var baseline *contract.Verified
	var notes []string
	if typ == "LoadTest" {
		// A load test compares with the monitored service's last passed load test; the first
		// is judged by its thresholds and becomes the baseline of the next.
		if baseline, err = s.lastVerified(ctx, n, ms); err != nil {
			notes = append(notes, "the last passed verification could not be read, thresholds alone decide: "+err.Error())
		}
		if baseline != nil {
			mode = verification.BeforeAfter
		} else if err == nil {
			notes = append(notes, "no earlier passed load test of "+ms.ID+": thresholds alone decide, and this one becomes the baseline")
		}
	}
	a := verification.New(ms, mode, verification.SensitivityOf(string(job.Sensitivity)))

	start := workflow.Now(ctx)
	deployed := start
	if s.tree.StartedAt != nil {
		deployed = *s.tree.StartedAt
	}
	v := &VerifyOutcome{Type: typ, Sensitivity: a.Sensitivity, Minutes: minutes, Start: start, Monitored: ms.ID, FailOnNoAnalysis: failOnNoAnalysis, Notes: notes,
		DeploymentTag: string(job.DeploymentTag)}
	show := func() {
		v.Result = a.Result()
		t.Outputs = v.outputs()
		s.publish(ctx)
	}
	if a.Mode != verification.ThresholdsOnly {
		// The window of the same length before the stage started: which instances already ran,
		// and the control of a before/after comparison; a load test's is its baseline's.
		v.Before = &Window{Start: deployed.Add(-time.Duration(minutes) * minute), End: deployed}
		if baseline != nil {
			v.Before, v.Baseline = &Window{Start: baseline.Start, End: baseline.End}, baseline.Execution
		}
		for _, src := range ms.Sources {
			answer, f := s.queryMetrics(ctx, n, src, minute, v.Before.Start, v.Before.End)
			if f != nil {
				return nil, f
			}
			if answer == nil {
				v.Notes = append(v.Notes, fmt.Sprintf("%s did not answer for the window before the deployment", src.ID))
				continue
			}
			a.Before(src.ID, answer.Metrics, v.Before.Start)
		}
	}
	show()
	for i := 1; i <= minutes; i++ {
		if err := workflow.Sleep(ctx, start.Add(time.Duration(i)*minute).Sub(workflow.Now(ctx))); err != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted"}
		}
		from, to := start.Add(time.Duration(i-1)*minute), start.Add(time.Duration(i)*minute)
		for _, src := range ms.Sources {
			answer, f := s.queryMetrics(ctx, n, src, minute, from, to)
			if f != nil {
				return nil, f
			}
			if answer == nil {
				v.Missing++
				v.Notes = append(v.Notes, fmt.Sprintf("%s did not answer for minute %d", src.ID, i))
				continue
			}
			if b := a.Minute(src.ID, answer.Metrics, start); b != nil {
				v.Analysed = i
				show()
				return t.Outputs, &contract.Failure{Category: contract.Verification, Message: "verification failed early: " + b.Reason}
			}
		}
		v.Analysed = i
		show()
	}
	if typ == "LoadTest" && v.Result.Verdict == verification.Passed {
		s.recordVerified(ctx, n, t, ms, start, start.Add(time.Duration(minutes)*minute))
	}
	switch v.Result.Verdict {
	case verification.Failed:
		return t.Outputs, &contract.Failure{Category: contract.Verification, Message: "verification failed: " + v.Result.Reason}
	case verification.NoAnalysis:
		if failOnNoAnalysis {
			return t.Outputs, &contract.Failure{Category: contract.Verification, Message: "verification failed: no analysis (" + v.noAnalysis() + "), and failOnNoAnalysis is set"}
		}
		t.Notes = append(t.Notes, "passed without analysis: "+v.noAnalysis())
	}
	return t.Outputs, nil
}

// queryMetrics asks a health source for a window. nil without a failure: the monitoring
// system did not answer (after retries); a failure: it refused the credentials or a query.
func (s *verifier) queryMetrics(ctx workflow.Context, n *plan.Node, src plan.HealthSource, minute time.Duration, from, to time.Time) (*contract.MetricsAnswer, *contract.Failure) {
	queue := workflow.GetInfo(ctx).TaskQueueName
	if len(n.Selectors) > 0 {
		queue = SelectorQueue(queue, n.Selectors)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		StartToCloseTimeout:    20 * time.Second,
		ScheduleToCloseTimeout: 50 * time.Second, // a minute's query never runs into the next
		Summary:                fmt.Sprintf("%s (%s metrics)", n.ID, src.ID),
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	// Windows meet end to start: the value at a window's end is the next one's first. The
	// values are read at times aligned to the window's end, so the window before the
	// deployment ends with the last moment before it.
	step := minute / valuesPerMinute
	end := to.Add(-step / 15)
	req := contract.MetricsRequest{Source: src, Start: end.Add(-end.Sub(from) / step * step), End: end, Step: step}
	var answer contract.MetricsAnswer
	err := workflow.ExecuteActivity(actx, contract.MetricsQuery, req).Get(ctx, &answer)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &contract.Failure{Category: aborted, Message: "aborted"}
		}
		if f := contract.Classify(err); f.Category == contract.Authentication {
			return nil, f
		}
		return nil, nil
	}
	for _, m := range answer.Metrics {
		if m.Rejected != "" {
			return nil, &contract.Failure{Category: contract.Unknown, Message: fmt.Sprintf("%s rejected the query of metric %s: %s", src.ID, m.ID, m.Rejected)}
		}
	}
	return &answer, nil
}

// lastVerified finds the window of the monitored service's last passed verification by
// another execution (nil when none).
func (s *verifier) lastVerified(ctx workflow.Context, n *plan.Node, ms *plan.MonitoredService) (*contract.Verified, error) {
	key := contract.VerifiedKey{Project: ms.Project, Monitored: ms.ID, Execution: s.in.ExecutionID}
	actx := workflow.WithActivityOptions(ctx, s.dep.fetchOptions(ctx, fmt.Sprintf("%s: find the last passed load test of %s", n.ID, ms.ID)))
	var last *contract.Verified
	err := workflow.ExecuteActivity(actx, contract.LastVerified, key).Get(ctx, &last)
	return last, err
}

// recordVerified remembers a passed load test's window, the baseline of the next.
func (s *verifier) recordVerified(ctx workflow.Context, n *plan.Node, t *Node, ms *plan.MonitoredService, from, to time.Time) {
	in := contract.RecordVerifiedInput{Key: contract.VerifiedKey{Project: ms.Project, Monitored: ms.ID},
		Verified: contract.Verified{Execution: s.in.ExecutionID, Step: t.Path, Start: from, End: to}}
	actx := workflow.WithActivityOptions(ctx, s.dep.fetchOptions(ctx, fmt.Sprintf("%s: record the passed load test of %s", n.ID, ms.ID)))
	if err := workflow.ExecuteActivity(actx, contract.RecordVerified, in).Get(ctx, nil); err != nil {
		// The verification stands; only the next load test compares with an older one.
		t.Notes = append(t.Notes, "this load test was not recorded as the next one's baseline: "+err.Error())
	}
}

// valuesPerMinute is the resolution of the values read: one every 15 seconds of a real minute.
const valuesPerMinute = 4

// namedMonitored is the monitored service a step names (Configured), or nil.
func namedMonitored(n *plan.Node) *plan.MonitoredService {
	if n.Refs == nil {
		return nil
	}
	return n.Refs.Monitored
}

// VerifyOutcome is a Verify step's outcome as its outputs show it (tree, -o json, API, the UI's
// verification page).
type VerifyOutcome struct {
	Type      string `json:"type"`
	Monitored string `json:"monitoredService"`
	// DeploymentTag labels the version verified (usually <+artifact.tag>).
	DeploymentTag    string                   `json:"deploymentTag,omitempty"`
	Sensitivity      verification.Sensitivity `json:"sensitivity"`
	FailOnNoAnalysis bool                     `json:"failOnNoAnalysis"`
	Minutes          int                      `json:"minutes"`
	Analysed         int                      `json:"analysedMinutes"`
	Missing          int                      `json:"missingAnswers,omitempty"`
	Start            time.Time                `json:"start"`
	Before           *Window                  `json:"before,omitempty"`
	// Baseline is the execution whose passed load test is the control (LoadTest only).
	Baseline string              `json:"baseline,omitempty"`
	Notes    []string            `json:"notes,omitempty"`
	Result   verification.Result `json:"result"`
}

// Window is a span of time a Verify step read.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

func (v *VerifyOutcome) noAnalysis() string {
	if v.Missing > 0 {
		return fmt.Sprintf("the monitoring system did not answer %d times; %s", v.Missing, v.Result.Reason)
	}
	return v.Result.Reason
}

// outputs is the view as step outputs: <+execution.steps.ID.output.result.verdict>.
func (v *VerifyOutcome) outputs() map[string]any {
	raw, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
