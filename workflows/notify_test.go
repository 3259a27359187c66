package workflows_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// attempt is one call of the delivery activity the test saw.
type attempt struct {
	key   string
	at    time.Time
	queue string
}

// runNotifier runs a notifier in the test suite with batches signalled at start; answer says
// how each attempt of a delivery ends (n counts its attempts from 1).
func runNotifier(t *testing.T, batches []workflows.NotifyBatch, answer func(d contract.Delivery, n int) error) ([]workflows.DeliveryRecord, []attempt) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName})
	var mu sync.Mutex
	var seen []attempt
	counts := map[string]int{}
	env.RegisterActivityWithOptions(func(ctx context.Context, d contract.Delivery) (contract.DeliveryResult, error) {
		mu.Lock()
		counts[d.Key]++
		n := counts[d.Key]
		seen = append(seen, attempt{d.Key, env.Now(), activity.GetInfo(ctx).TaskQueue})
		mu.Unlock()
		if err := answer(d, n); err != nil {
			return contract.DeliveryResult{}, err
		}
		return contract.DeliveryResult{Code: 200}, nil
	}, activity.RegisterOptions{Name: contract.Notify})
	// Without a Final batch the notifier finds the pipeline closed by asking.
	final := slices.ContainsFunc(batches, func(b workflows.NotifyBatch) bool { return b.Final })
	var asked atomic.Int32
	env.RegisterActivityWithOptions(func(context.Context, string) (bool, error) { asked.Add(1); return !final, nil }, activity.RegisterOptions{Name: contract.ExecutionClosed})
	t.Cleanup(func() {
		if !final && asked.Load() == 0 {
			t.Error("the notifier ended without a Final batch and without asking whether the pipeline closed")
		}
	})
	for _, b := range batches {
		b := b
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalNotify, b) }, 0)
	}
	env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{ExecutionID: "p-1"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("notifier: completed %v, %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res workflows.NotifierResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res.Records, seen
}

func failure(retryable bool, code int, after time.Duration) error {
	kind := "Permanent"
	if retryable {
		kind = "Retryable"
	}
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("HTTP %d", code), kind, temporal.ApplicationErrorOptions{NonRetryable: true,
		Details: []any{contract.DeliveryFailure{Retryable: retryable, Code: code, RetryAfter: after}}})
}

func delivery(key, rule string, target int) contract.Delivery {
	return contract.Delivery{Key: key, Rule: rule, Target: target, Channel: "Webhook", URL: "http://hook",
		Event: contract.NotifyEvent{Type: "PipelineEnd", Node: "pipeline"}}
}

// C113: retried on retryable answers with the same delivery (same key) until delivered;
// a final 4xx stops at once; an unreachable target is tried 8 times within 30 minutes on
// spec 20.5.4's schedule.
func TestNotifierRetries(t *testing.T) {
	records, seen := runNotifier(t, []workflows.NotifyBatch{{Deliveries: []contract.Delivery{
		delivery("ok-after-503s", "a", 0), delivery("bad-request", "b", 0), delivery("down", "c", 0), delivery("unresolved", "d", 0),
	}, Final: true}}, func(d contract.Delivery, n int) error {
		switch d.Key {
		case "ok-after-503s":
			if n <= 2 {
				return failure(true, 503, 0)
			}
		case "bad-request":
			return failure(false, 400, 0)
		case "down":
			return failure(true, 0, 0)
		}
		return nil
	})
	_ = seen
	byKey := map[string]workflows.DeliveryRecord{}
	for _, r := range records {
		byKey[r.Key] = r
	}
	if r := byKey["ok-after-503s"]; r.Status != workflows.DeliveryDelivered || r.Attempts != 3 || r.Code != 200 {
		t.Errorf("503, 503, 200: %+v", r)
	}
	if r := byKey["bad-request"]; r.Status != workflows.DeliveryFailed || r.Attempts != 1 || r.Code != 400 {
		t.Errorf("400: %+v", r)
	}
	if r := byKey["down"]; r.Status != workflows.DeliveryFailed || r.Attempts != 8 {
		t.Errorf("unreachable: %+v", r)
	}
	var times []time.Time
	for _, a := range seen {
		if a.key == "down" {
			times = append(times, a.at)
		}
	}
	var gaps []string
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]).Round(time.Second).String())
	}
	if want := "5s 10s 20s 40s 1m20s 2m40s 5m0s"; strings.Join(gaps, " ") != want {
		t.Errorf("retry intervals %s, want %s", strings.Join(gaps, " "), want)
	}
	if times[len(times)-1].Sub(times[0]) > 30*time.Minute {
		t.Errorf("attempts spread over %s", times[len(times)-1].Sub(times[0]))
	}
	if r := byKey["unresolved"]; r.Status != workflows.DeliveryDelivered {
		t.Errorf("a delivery without Unresolved is sent: %+v", r)
	}
}

// Spec 20.5.4-6: Retry-After is honoured; deliveries to one target keep their order (a later
// one waits for the earlier); other targets do not wait; a key seen twice is sent once; an
// unresolved target fails without an attempt.
func TestNotifierOrderAndDuplicates(t *testing.T) {
	first, second, other := delivery("first", "r", 0), delivery("second", "r", 0), delivery("other", "r", 1)
	other.Selectors = []string{"dmz"} // executeOnDelegate: sent by a worker with that tag
	bad := delivery("bad", "u", 0)
	bad.Unresolved = "UNRESOLVED_EXPRESSION: url: pipeline.variables.missing is not defined"
	records, seen := runNotifier(t, []workflows.NotifyBatch{
		{Deliveries: []contract.Delivery{first, second, other, bad}},
		{Deliveries: []contract.Delivery{first}, Final: true},
	}, func(d contract.Delivery, n int) error {
		if d.Key == "first" && n == 1 {
			return failure(true, 429, 42*time.Second)
		}
		return nil
	})
	// Target r/0's deliveries go one after the other; target r/1 does not wait for them.
	var order []string
	var firstAt []time.Time
	var otherAt time.Time
	for _, a := range seen {
		switch a.key {
		case "other":
			otherAt = a.at
			if !strings.HasSuffix(a.queue, "@dmz") {
				t.Errorf("a delivery with selectors ran on queue %s", a.queue)
			}
		default:
			order = append(order, a.key)
			if a.key == "first" {
				firstAt = append(firstAt, a.at)
			}
		}
	}
	if got := strings.Join(order, " "); got != "first first second" {
		t.Errorf("attempts to target r/0: %q", got)
	}
	if len(firstAt) == 2 && firstAt[1].Sub(firstAt[0]) != 42*time.Second {
		t.Errorf("Retry-After 42 s, waited %s", firstAt[1].Sub(firstAt[0]))
	}
	if otherAt.IsZero() || otherAt.After(firstAt[0].Add(time.Second)) {
		t.Errorf("target r/1 waited for target r/0: %s vs %v", otherAt, firstAt)
	}
	if len(records) != 4 || records[3].Status != workflows.DeliveryFailed || records[3].Attempts != 0 || !strings.HasPrefix(records[3].Error, "UNRESOLVED_EXPRESSION") {
		t.Errorf("records %+v", records)
	}
}

// eventLog is the test notifier: it records the deliveries the pipeline hands over.
type eventLog struct {
	mu      sync.Mutex
	batches []workflows.NotifyBatch
}

func (l *eventLog) workflow(ctx workflow.Context, in workflows.NotifierInput) (*workflows.NotifierResult, error) {
	ch := workflow.GetSignalChannel(ctx, workflows.SignalNotify)
	l.mu.Lock()
	l.batches = append(l.batches, workflows.NotifyBatch{Deliveries: in.Initial})
	l.mu.Unlock()
	// Like the real notifier: done at a Final batch, or once idle (the pipeline has closed).
	for closed := in.Closed; !closed; {
		var b workflows.NotifyBatch
		if ok, _ := ch.ReceiveWithTimeout(ctx, 24*time.Hour, &b); !ok {
			break
		}
		l.mu.Lock()
		l.batches = append(l.batches, b)
		l.mu.Unlock()
		closed = b.Final
	}
	return &workflows.NotifierResult{}, nil
}

// deliveries are the deliveries handed over, in Seq order.
func (l *eventLog) deliveries() []contract.Delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.SliceStable(l.batches, func(i, j int) bool { return l.batches[i].Seq < l.batches[j].Seq })
	var out []contract.Delivery
	for _, b := range l.batches {
		out = append(out, b.Deliveries...)
	}
	return out
}

// events runs a pipeline in the test suite with a recording notifier and returns its status
// and the events handed over, as "Type node status".
func events(t *testing.T, src string) (status.Status, []string, []contract.Delivery) {
	t.Helper()
	p := compile(t, "p.yaml", src)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}}, workflows.NotifierName)
	log := &eventLog{}
	env.RegisterWorkflowWithOptions(log.workflow, workflow.RegisterOptions{Name: workflows.NotifierName})
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL", User: "ann"},
		Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
	var res workflows.PipelineResult
	if err := workflows.ResultFrom(env.GetWorkflowError(), &res); err != nil {
		t.Fatal(err)
	}
	if env.GetWorkflowError() == nil {
		_ = env.GetWorkflowResult(&res)
	}
	var out []string
	for _, d := range log.deliveries() {
		out = append(out, fmt.Sprintf("%s %s %s", d.Event.Type, d.Event.Node, d.Event.Status))
	}
	return res.Status, out, log.deliveries()
}

const notifyBase = `pipeline:
  name: p
  identifier: p
  variables: [{name: team, type: String, value: payments}]
  notificationRules:
    - name: r1
      identifier: r1
      enabled: true
      pipelineEvents: EVENTS
      notificationMethod: {type: Webhook, spec: {webhookUrl: "https://hook/<+pipeline.variables.team>"}}
  stages:
STAGES`

func notifyPipeline(events, stages string) string {
	return strings.NewReplacer("EVENTS", events, "STAGES", stages).Replace(notifyBase)
}

const okStage = `    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`

// C110: PipelineStart, PipelineSuccess and PipelineEnd in order, one key each, URL rendered.
func TestNotifyPipelineEvents(t *testing.T) {
	st, got, ds := events(t, notifyPipeline("[{type: PipelineStart}, {type: PipelineSuccess}, {type: PipelineEnd}]", okStage))
	want := []string{"PipelineStart pipeline RUNNING", "PipelineSuccess pipeline SUCCEEDED", "PipelineEnd pipeline SUCCEEDED"}
	if st != status.Succeeded || strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("%s: %q, want %q", st, got, want)
	}
	keys := map[string]bool{}
	for _, d := range ds {
		keys[d.Key] = true
		if d.URL != "https://hook/payments" || d.Event.TriggeredBy != "ann" || d.Event.Pipeline != "p" || d.Event.SequenceID != 1 {
			t.Errorf("delivery %+v", d)
		}
	}
	if len(keys) != 3 || ds[0].Event.End != nil || ds[2].Event.End == nil {
		t.Errorf("keys %v; start has no end, end has one", keys)
	}
}

// C111: stage filters; a skipped stage raises nothing.
func TestNotifyStageFilters(t *testing.T) {
	stages := `    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}}]}}
    - stage:
        name: s2
        identifier: s2
        type: Custom
        when: {pipelineStatus: All}
        spec: {execution: {steps: [{step: {type: ShellScript, name: b, identifier: b, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}}]}}
    - stage:
        name: s3
        identifier: s3
        type: Custom
        spec: {execution: {steps: [{step: {type: ShellScript, name: c, identifier: c, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}}]}}
`
	_, got, ds := events(t, notifyPipeline("[{type: StageFailed, forStages: [s2]}, {type: StageStart, forStages: [AllStages]}]", stages))
	want := []string{"StageStart s1 RUNNING", "StageStart s2 RUNNING", "StageFailed s2 FAILED"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("%q, want %q", got, want)
	}
	if !strings.Contains(ds[2].Event.Error, "s2.b") || ds[2].Event.Stage != "s2" {
		t.Errorf("StageFailed event %+v", ds[2].Event)
	}
}

// C112: a looped stage's iterations raise their own events under the base identifier; a
// StepFailed whose attempt ends IGNORE_FAILED raises nothing, one that fails raises one.
func TestNotifyLoopedStages(t *testing.T) {
	stage := `    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        strategy: {matrix: {r: [eu, us]}}
        spec:
          execution:
            steps:
              - stepGroup:
                  name: g
                  identifier: g
                  steps:
                    - step:
                        type: ShellScript
                        name: x
                        identifier: x
                        timeout: 1m
                        spec: {shell: Bash, source: {type: Inline, spec: {script: 'test "<+matrix.r>" = eu'}}}
IGNORE`
	ignore := `                        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: Ignore}}}]
`
	rules := "[{type: StageSuccess, forStages: [deploy]}, {type: StepFailed, forSteps: [deploy.g.x]}]"
	_, got, _ := events(t, notifyPipeline(rules, strings.Replace(stage, "IGNORE", ignore, 1)))
	sort.Strings(got) // the iterations run at once
	if strings.Join(got, "; ") != "StageSuccess deploy_0 SUCCEEDED; StageSuccess deploy_1 IGNORE_FAILED" {
		t.Errorf("with Ignore: %q", got)
	}
	_, got, ds := events(t, notifyPipeline(rules, strings.Replace(stage, "IGNORE", "", 1)))
	if len(ds) == 2 && ds[0].Event.Type == contract.EventStepFailed {
		got[0], got[1], ds[0], ds[1] = got[1], got[0], ds[1], ds[0]
	}
	if strings.Join(got, "; ") != "StageSuccess deploy_0 SUCCEEDED; StepFailed deploy_1.g.x FAILED" {
		t.Fatalf("without Ignore: %q", got)
	}
	if e := ds[1].Event; e.Stage != "deploy_1" || e.Step != "x" || e.StepPath != "deploy.g.x" || e.Error == "" {
		t.Errorf("StepFailed event %+v", e)
	}
}

// Spec 20.2.1: each failed attempt of a retried step raises StepFailed with its own key; the
// attempt a failure strategy ignores raises none.
func TestNotifyRetriedStep(t *testing.T) {
	stage := `    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: a
                  identifier: a
                  timeout: 1m
                  spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}
                  failureStrategies:
                    - onFailure: {errors: [AllErrors], action: {type: Retry, spec: {retryCount: 2, retryIntervals: [10s], onRetryFailure: {action: {type: Ignore}}}}}
`
	st, got, ds := events(t, notifyPipeline("[{type: StepFailed}]", stage))
	if st != status.IgnoreFailed || strings.Join(got, "; ") != "StepFailed s1.a FAILED; StepFailed s1.a FAILED" || ds[0].Key == ds[1].Key {
		t.Errorf("%s: %q %v", st, got, ds)
	}
}

// updateCallbacks fails the test when an update is refused or fails.
type updateCallbacks struct {
	t    *testing.T
	name string
}

func (u updateCallbacks) Accept()          {}
func (u updateCallbacks) Reject(err error) { u.t.Errorf("%s refused: %v", u.name, err) }
func (u updateCallbacks) Complete(_ any, err error) {
	if err != nil {
		u.t.Errorf("%s failed: %v", u.name, err)
	}
}

// Spec 3.4 Pause / Resume: a pause while a step runs lets it finish, and nothing starts until
// the resume an hour later; PipelinePaused and PipelineResumed are raised in between.
func TestPauseHoldsNewSteps(t *testing.T) {
	stage := `    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "sleep 0.2"}}}}
              - step: {type: ShellScript, name: b, identifier: b, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`
	p := compile(t, "p.yaml", notifyPipeline("[{type: PipelinePaused}, {type: PipelineResumed}]", stage))
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	worker.Register(env, worker.Options{Logs: logs.Store{Dir: t.TempDir()}}, workflows.NotifierName)
	log := &eventLog{}
	env.RegisterWorkflowWithOptions(log.workflow, workflow.RegisterOptions{Name: workflows.NotifierName})
	start := env.Now()
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdatePause, "pause-1", updateCallbacks{t, "pause"}, workflows.PauseRequest{User: "ops"})
	}, time.Millisecond)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateResume, "resume-1", updateCallbacks{t, "resume"}, workflows.PauseRequest{User: "ops"})
	}, time.Hour)
	env.ExecuteWorkflow(workflows.PipelineName, workflows.PipelineInput{Plan: p, SequenceID: 1, Trigger: workflows.Trigger{Type: "MANUAL"},
		Settings: workflows.Settings{HeartbeatTimeout: time.Minute}})
	var res workflows.PipelineResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != status.Succeeded {
		t.Fatalf("%v %v", res.Status, err)
	}
	b := res.Tree.Find("s1.b")
	if b.StartedAt.Sub(start) < time.Hour {
		t.Errorf("step b started %s after the start, before the resume", b.StartedAt.Sub(start))
	}
	var got []string
	for _, d := range log.deliveries() {
		got = append(got, d.Event.Type+" "+string(d.Event.Status))
	}
	if strings.Join(got, "; ") != "PipelinePaused PAUSED; PipelineResumed RUNNING" {
		t.Errorf("events %q", got)
	}
	if !strings.Contains(strings.Join(res.Tree.Notes, " "), "paused by ops") {
		t.Errorf("notes %v", res.Tree.Notes)
	}
}

// The pipeline sends its batches without waiting for each to arrive: the notifier takes them
// by Seq, so a batch that overtook an earlier one waits for it.
func TestNotifierTakesBatchesInSeqOrder(t *testing.T) {
	_, seen := runNotifier(t, []workflows.NotifyBatch{
		{Seq: 2, Deliveries: []contract.Delivery{delivery("second", "r", 0)}},
		{Seq: 3, Final: true},
		{Seq: 1, Deliveries: []contract.Delivery{delivery("first", "r", 0)}},
	}, func(contract.Delivery, int) error { return nil })
	var order []string
	for _, a := range seen {
		order = append(order, a.key)
	}
	if strings.Join(order, " ") != "first second" {
		t.Errorf("order %v", order)
	}
}

// A pipeline whose last events raised nothing sends no Final batch: its notifier finishes what
// it has and ends once it finds the pipeline closed.
func TestNotifierEndsWhenThePipelineClosed(t *testing.T) {
	records, _ := runNotifier(t, []workflows.NotifyBatch{{Seq: 1, Deliveries: []contract.Delivery{delivery("only", "r", 0)}}},
		func(contract.Delivery, int) error { return nil })
	if len(records) != 1 || records[0].Status != workflows.DeliveryDelivered {
		t.Errorf("records %+v", records)
	}
}

// The pipeline's last batch arrives while the notifier asks whether the pipeline closed (it
// closes right after sending that batch): the notifier sends it before it ends.
func TestNotifierSendsTheBatchThatArrivesWhileItAsks(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Notifier, workflow.RegisterOptions{Name: workflows.NotifierName})
	var mu sync.Mutex
	var sent []string
	env.RegisterActivityWithOptions(func(ctx context.Context, d contract.Delivery) (contract.DeliveryResult, error) {
		mu.Lock()
		sent = append(sent, d.Key)
		mu.Unlock()
		return contract.DeliveryResult{Code: 200}, nil
	}, activity.RegisterOptions{Name: contract.Notify})
	env.RegisterActivityWithOptions(func(context.Context, string) (bool, error) {
		env.SignalWorkflow(workflows.SignalNotify, workflows.NotifyBatch{Seq: 2, Final: true,
			Deliveries: []contract.Delivery{delivery("last", "r", 0)}})
		return true, nil
	}, activity.RegisterOptions{Name: contract.ExecutionClosed})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalNotify, workflows.NotifyBatch{Seq: 1, Deliveries: []contract.Delivery{delivery("first", "r", 0)}})
	}, 0)
	env.ExecuteWorkflow(workflows.NotifierName, workflows.NotifierInput{ExecutionID: "p-1"})
	var res workflows.NotifierResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sent, " ") != "first last" || len(res.Records) != 2 || res.Records[1].Status != workflows.DeliveryDelivered {
		t.Errorf("sent %v, records %+v", sent, res.Records)
	}
}
