package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/notify"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/smtptest"
	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// hookCall is one request a test receiver got.
type hookCall struct {
	Path, Query, Key string
	Body             map[string]any
	At               time.Time
}

// hooks is an HTTP receiver standing in for Slack, Teams, PagerDuty, Datadog and webhook
// endpoints; answer decides each response by path and the number of calls to it so far.
type hooks struct {
	mu     sync.Mutex
	calls  []hookCall
	answer func(path string, n int) int
	srv    *httptest.Server
}

func newHooks(t *testing.T, answer func(path string, n int) int) *hooks {
	h := &hooks{answer: answer}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		h.mu.Lock()
		h.calls = append(h.calls, hookCall{Path: r.URL.Path, Query: r.URL.RawQuery, Key: r.Header.Get("Idempotency-Key"), Body: body, At: time.Now()})
		n := 0
		for _, c := range h.calls {
			if c.Path == r.URL.Path {
				n++
			}
		}
		h.mu.Unlock()
		code := 200
		if h.answer != nil {
			code = h.answer(r.URL.Path, n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) to(path string) []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookCall
	for _, c := range h.calls {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// notifyWorker runs a worker on a queue of its own whose notifications go through sender.
func notifyWorker(t *testing.T, queue string, sender notify.Sender, secretMap secrets.Map) *starter.Starter {
	t.Helper()
	w := worker.New(env.client, worker.Options{TaskQueue: queue, Logs: logs.Store{Dir: t.TempDir()}, Secrets: secretMap, Notify: sender, Internal: env.internal})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
}

// deliveries waits until an execution's notifier is done and returns its records by rule.
func deliveries(t *testing.T, s *starter.Starter, id string) map[string][]workflows.DeliveryRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		records, done, err := s.Notifications(ctx, id)
		if err == nil && done {
			out := map[string][]workflows.DeliveryRecord{}
			for _, r := range records {
				out[r.Rule] = append(out[r.Rule], r)
			}
			return out
		}
		if ctx.Err() != nil {
			t.Fatalf("notifications of %s not done: %v %+v", id, err, records)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Notifications end to end on a real Temporal server (C110, C113, C115): pipeline events in
// order to a webhook with its URL rendered and its secret resolved only when sent; retries with
// the same idempotency key; a final 4xx and an unresolved URL recorded as FAILED; Slack, Teams,
// PagerDuty, Datadog and e-mail (a real SMTP server) told; the pipeline not delayed by any of
// it; no secret in any history or record.
func TestNotificationsEndToEnd(t *testing.T) {
	h := newHooks(t, func(path string, n int) int {
		switch {
		case path == "/flaky" && n <= 2:
			return 503
		case path == "/bad":
			return 400
		}
		return 200
	})
	mail := smtptest.Start(t, "gantry", "mail-pass")
	sender := notify.Sender{PagerDutyURL: h.srv.URL + "/pagerduty", UIURL: func() string { return "http://ui.test" },
		SMTP: notify.SMTP{Host: mail.Host, Port: mail.Port, Username: "gantry", PasswordRef: "smtp", From: "cd@example.org", InsecureSkipVerify: true},
		Directory: func() (*identity.Directory, error) {
			return &identity.Directory{Users: []identity.User{{Name: "bob", Email: "bob@example.org", Groups: []string{"sre"}}},
				Groups: []identity.Group{{Name: "sre", SlackWebhookURL: h.srv.URL + "/sre-slack"}}}, nil
		}}
	s := notifyWorker(t, "notify-e2e", sender, secrets.Map{"hk": "s3cr3t", "smtp": "mail-pass", "pd": "pd-routing", "dd": "dd-key"})
	rule := func(id, events, method string) string {
		return fmt.Sprintf("    - {name: %s, identifier: %s, enabled: true, pipelineEvents: %s, notificationMethod: %s}\n", id, id, events, method)
	}
	end := "[{type: PipelineEnd}]"
	src := `pipeline:
  name: notified
  identifier: notified_e2e
  variables: [{name: team, type: String, value: payments}]
  notificationRules:
` + rule("r1", "[{type: PipelineStart}, {type: PipelineSuccess}, {type: PipelineEnd}]",
		`{type: Webhook, spec: {webhookUrl: '`+h.srv.URL+`/<+pipeline.variables.team>?k=<+secrets.getValue("hk")>'}}`) +
		rule("flaky", end, `{type: Webhook, spec: {webhookUrl: "`+h.srv.URL+`/flaky"}}`) +
		rule("bad", end, `{type: Webhook, spec: {webhookUrl: "`+h.srv.URL+`/bad"}}`) +
		rule("missing", end, `{type: Webhook, spec: {webhookUrl: "<+pipeline.variables.missing>"}}`) +
		rule("slack", end, `{type: Slack, spec: {webhookUrl: "`+h.srv.URL+`/slack", userGroups: [account.sre]}}`) +
		rule("teams", end, `{type: MsTeams, spec: {msTeamKeys: ["`+h.srv.URL+`/teams"]}}`) +
		rule("pd", end, `{type: PagerDuty, spec: {integrationKey: '<+secrets.getValue("pd")>'}}`) +
		rule("dd", end, `{type: Datadog, spec: {url: "`+h.srv.URL+`/api/v1/events", apiKey: '<+secrets.getValue("dd")>'}}`) +
		rule("mail", end, `{type: Email, spec: {recipients: [ann@example.org], userGroups: [sre]}}`) + `  stages:
    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec, err := s.Start(ctx, compile(t, "notified.yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "ann"},
		workflows.Settings{Notify: workflows.NotifySettings{FirstRetry: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("pipeline: %v %v", res, err)
	}
	closed := time.Now()
	records := deliveries(t, s, exec.ID)

	// C110: three events in order, one execution, distinct keys; the URL rendered, the secret
	// sent but recorded masked.
	calls := h.to("/payments")
	var types []string
	keys := map[string]bool{}
	for _, c := range calls {
		ev := c.Body["eventData"].(map[string]any)
		types = append(types, ev["eventType"].(string)+"/"+ev["nodeStatus"].(string))
		keys[c.Key] = true
		if ev["planExecutionId"] != exec.ID || c.Query != "k=s3cr3t" || ev["executionUrl"] != "http://ui.test/namespaces/default/workflows/"+exec.ID {
			t.Errorf("webhook call %+v", c)
		}
	}
	if strings.Join(types, " ") != "PipelineStart/started PipelineSuccess/completed PipelineEnd/completed" || len(keys) != 3 {
		t.Errorf("webhook events %v, keys %v", types, keys)
	}
	if _, ok := calls[0].Body["eventData"].(map[string]any)["endTs"]; ok {
		t.Error("PipelineStart carries an endTs")
	}
	for _, r := range records["r1"] {
		if r.Status != workflows.DeliveryDelivered || strings.Contains(r.Target, "s3cr3t") || !strings.Contains(r.Target, "k="+secrets.Mask) {
			t.Errorf("r1 record %+v", r)
		}
	}
	// C113: 503, 503, 200 with one key, delivered after the pipeline had closed; 400 final.
	flaky := h.to("/flaky")
	if len(flaky) != 3 || flaky[0].Key != flaky[2].Key || flaky[1].Key != flaky[0].Key {
		t.Errorf("flaky calls %+v", flaky)
	} else if !flaky[2].At.After(closed) {
		t.Errorf("the pipeline closed at %s, after the last retry at %s: delivery delayed it", closed, flaky[2].At)
	}
	if r := records["flaky"]; len(r) != 1 || r[0].Status != workflows.DeliveryDelivered || r[0].Attempts != 3 {
		t.Errorf("flaky record %+v", r)
	}
	if r := records["bad"]; len(r) != 1 || r[0].Status != workflows.DeliveryFailed || r[0].Attempts != 1 || r[0].Code != 400 || len(h.to("/bad")) != 1 {
		t.Errorf("bad record %+v", r)
	}
	// C115: an unresolved URL fails its delivery only.
	if r := records["missing"]; len(r) != 1 || r[0].Status != workflows.DeliveryFailed || !strings.HasPrefix(r[0].Error, "UNRESOLVED_EXPRESSION") {
		t.Errorf("missing record %+v", r)
	}
	// The other channels.
	if len(h.to("/slack")) != 1 || len(h.to("/sre-slack")) != 1 || len(records["slack"]) != 2 {
		t.Errorf("slack: %d to the rule's webhook, %d to the group's, records %+v", len(h.to("/slack")), len(h.to("/sre-slack")), records["slack"])
	}
	if c := h.to("/teams"); len(c) != 1 || c[0].Body["@type"] != "MessageCard" {
		t.Errorf("teams %+v", c)
	}
	if c := h.to("/pagerduty"); len(c) != 1 || c[0].Body["routing_key"] != "pd-routing" || c[0].Body["dedup_key"] != records["pd"][0].Key {
		t.Errorf("pagerduty %+v", c)
	}
	if c := h.to("/api/v1/events"); len(c) != 1 || c[0].Body["aggregation_key"] != "notified_e2e" {
		t.Errorf("datadog %+v", c)
	}
	if m := mail.Messages(); len(m) != 1 || strings.Join(m[0].To, ",") != "ann@example.org,bob@example.org" || m[0].Header.Get("Subject") != "notified_e2e PipelineEnd" {
		t.Errorf("mail %+v", m)
	}
	// No secret in the pipeline's, its stage's or the notifier's history.
	for _, id := range []string{exec.ID, exec.ID + "/s1", workflows.NotifierID(exec.ID)} {
		iter := env.client.GetWorkflowHistory(ctx, id, "", false, 0)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"s3cr3t", "pd-routing", "dd-key", "mail-pass"} {
				if strings.Contains(ev.String(), secret) {
					t.Errorf("%s: secret %q in history event %d (%s)", id, secret, ev.GetEventId(), ev.GetEventType())
				}
			}
		}
	}
}

// C114: AllEvents through an approval that is rejected, and an execution aborted while it
// waits; an approval approved raises PipelineResumed.
func TestNotificationsAbortRejectAndWaits(t *testing.T) {
	h := newHooks(t, nil)
	s := notifyWorker(t, "notify-c114", notify.Sender{}, secrets.Map{})
	rules := `  notificationRules:
    - {name: all, identifier: all, enabled: true, pipelineEvents: [{type: AllEvents}], notificationMethod: {type: Webhook, spec: {webhookUrl: "` + h.srv.URL + `/all/ID"}}}
  stages:`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(id string, act func(execID string)) []string {
		src := strings.Replace(approvalPipeline(id, "", ""), "  stages:", strings.ReplaceAll(rules, "ID", id), 1)
		exec, err := s.Start(ctx, compile(t, id+".yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, s, exec.ID, "gate.gate", status.ApprovalWaiting)
		act(exec.ID)
		if _, err := s.Result(ctx, exec.ID); err != nil {
			t.Fatal(err)
		}
		deliveries(t, s, exec.ID)
		var got []string
		for _, c := range h.to("/all/" + id) {
			ev := c.Body["eventData"].(map[string]any)
			e := ev["eventType"].(string) + "/" + ev["nodeStatus"].(string)
			if st, ok := ev["stageIdentifier"].(string); ok {
				e += "@" + st
			}
			got = append(got, e)
		}
		return got
	}
	rejected := run("c114_reject", func(id string) {
		if _, err := s.Approve(ctx, id, workflows.ApprovalRequest{Path: "gate.gate", Action: "REJECT", User: "ann", Groups: []string{"release_managers"}}); err != nil {
			t.Fatal(err)
		}
	})
	want := "PipelineStart/started StageStart/started@gate WaitingForUserAction/action_required@gate StepFailed/rejected@gate StageFailed/rejected@gate " +
		"StageStart/started@onfail StageSuccess/completed@onfail PipelineFailed/rejected PipelineEnd/rejected"
	if strings.Join(rejected, " ") != want {
		t.Errorf("rejected:\n got %s\nwant %s", strings.Join(rejected, " "), want)
	}
	aborted := run("c114_abort", func(id string) {
		if err := s.Abort(ctx, id, "ops", "stop"); err != nil {
			t.Fatal(err)
		}
	})
	want = "PipelineStart/started StageStart/started@gate WaitingForUserAction/action_required@gate StageFailed/aborted@gate PipelineFailed/aborted PipelineEnd/aborted"
	if strings.Join(aborted, " ") != want {
		t.Errorf("aborted:\n got %s\nwant %s", strings.Join(aborted, " "), want)
	}
	approved := run("c114_approve", func(id string) {
		for _, u := range []string{"ann", "bob"} {
			if _, err := s.Approve(ctx, id, workflows.ApprovalRequest{Path: "gate.gate", Action: "APPROVE", User: u, Groups: []string{"release_managers"}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if !strings.Contains(strings.Join(approved, " "), "WaitingForUserAction/action_required@gate PipelineResumed/resumed@gate StageSuccess/completed@gate") {
		t.Errorf("approved: %v", approved)
	}
}

// A worker SIGKILLed while it sends a notification: the event, recorded in the execution's
// history, is sent again by the next worker with the same idempotency key, and recorded as
// delivered once; the pipeline's outcome is untouched.
func TestNotificationWorkerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	dir := t.TempDir()
	queue := "notify-kill"
	startWorker := func() *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--address", env.srv.Address, "--task-queue", queue, "--data-dir", filepath.Join(dir, "data"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = testproc.DieWithTest() // a test that times out takes its workers with it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	first := startWorker()
	var mu sync.Mutex
	var keys []string
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		arrived <- struct{}{}
		if n == 1 {
			<-release // the sender dies before it hears back
			return
		}
	}))
	defer srv.Close()
	defer close(release)
	src := `pipeline:
  name: notify kill
  identifier: notify_kill
  notificationRules:
    - {name: end, identifier: end, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "` + srv.URL + `/end"}}}
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}}]}}
`
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	execution, err := s.Start(ctx, compile(t, "kill.yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL"},
		workflows.Settings{HeartbeatTimeout: 2 * time.Second, Notify: workflows.NotifySettings{AttemptTimeout: 3 * time.Second, FirstRetry: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the notification never arrived")
	}
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	second := startWorker()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	res, err := s.Result(ctx, execution.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("pipeline %v %v", res, err)
	}
	records := deliveries(t, s, execution.ID)["end"]
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Errorf("requests with keys %v: want the one delivery sent twice with one key", keys)
	}
	if len(records) != 1 || records[0].Status != workflows.DeliveryDelivered || records[0].Attempts != 2 || records[0].Key != keys[0] {
		t.Errorf("records %+v", records)
	}
}

// TriggerFailed: a custom trigger matches but its pipeline has a runtime input it does not
// answer; the pipeline's TriggerFailed rule is told (once per delivery ID) and the webhook's
// answer keys the notification's records.
func TestNotificationTriggerFailed(t *testing.T) {
	h := newHooks(t, nil)
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(`pipeline:
  name: trigger failed
  identifier: trigger_failed_e2e
  variables: [{name: region, type: String, required: true, value: <+input>}]
  notificationRules:
    - {name: tf, identifier: tf, enabled: true, pipelineEvents: [{type: TriggerFailed}], notificationMethod: {type: Webhook, spec: {webhookUrl: "`+h.srv.URL+`/tf"}}}
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec: {execution: {steps: [{step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}}]}}
`), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "bot.yaml"), []byte(`trigger:
  name: bot
  identifier: tf_bot
  pipelineIdentifier: trigger_failed_e2e
  source: {type: Webhook, spec: {type: Custom, spec: {payloadConditions: []}}}
`), 0o600)
	idFile := filepath.Join(dir, "users.yaml")
	d := &identity.Directory{}
	tok, _ := d.AddUser("releasebot", "", nil)
	_ = d.Save(idFile)
	api := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile, PipelinesDir: dir}))
	defer api.Close()
	post := func() map[string]any {
		req, _ := http.NewRequest("POST", api.URL+"/api/v1/webhooks/custom/tf_bot", strings.NewReader(`{}`))
		req.Header.Set("X-Api-Key", tok)
		req.Header.Set("Idempotency-Key", "job-7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	first, second := post(), post()
	results, _ := first["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("webhook answer %v", first)
	}
	r := results[0].(map[string]any)
	key, _ := r["notifications"].(string)
	if r["status"] != "INVALID_RUNTIME_INPUT_YAML" || key == "" || !strings.Contains(toJSON(second), key) {
		t.Fatalf("answers %v and %v", first, second)
	}
	records := deliveries(t, env.starter, key)["tf"]
	calls := h.to("/tf")
	if len(records) != 1 || records[0].Status != workflows.DeliveryDelivered || len(calls) != 1 {
		t.Fatalf("records %+v, %d calls", records, len(calls))
	}
	ev := calls[0].Body["eventData"].(map[string]any)
	if ev["eventType"] != "TriggerFailed" || ev["triggerIdentifier"] != "tf_bot" || ev["pipelineIdentifier"] != "trigger_failed_e2e" ||
		!strings.Contains(fmt.Sprint(ev["errorMessage"]), "region") {
		t.Errorf("TriggerFailed payload %v", ev)
	}
	if _, ok := ev["planExecutionId"]; ok {
		t.Error("a TriggerFailed event has no execution")
	}
}

// C114 (c): a user pauses an execution while a step runs: the step finishes, the next one does
// not start while PAUSED, and resuming runs it; PipelinePaused then PipelineResumed are told.
func TestPauseResumeNotifies(t *testing.T) {
	h := newHooks(t, nil)
	s := notifyWorker(t, "notify-pause", notify.Sender{}, secrets.Map{})
	marks := filepath.Join(t.TempDir(), "marks")
	src := `pipeline:
  name: paused
  identifier: paused_e2e
  notificationRules:
    - {name: all, identifier: all, enabled: true, pipelineEvents: [{type: AllEvents}], notificationMethod: {type: Webhook, spec: {webhookUrl: "` + h.srv.URL + `/all"}}}
  stages:
    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 10m, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo a >> ` + marks + `; sleep 2"}}}}
              - step: {type: ShellScript, name: b, identifier: b, timeout: 10m, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo b >> ` + marks + `"}}}}
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec, err := s.Start(ctx, compile(t, "paused.yaml", []byte(src), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(readFile(marks), "a") {
		if ctx.Err() != nil {
			t.Fatal("step a never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if msg, err := s.Pause(ctx, exec.ID, "ops", true); err != nil || msg != "paused by ops" {
		t.Fatalf("pause: %q %v", msg, err)
	}
	if _, err := s.Pause(ctx, exec.ID, "ops", true); err == nil {
		t.Error("a second pause was accepted")
	}
	waitFor(t, ctx, s, exec.ID, "s1.a", status.Succeeded)
	time.Sleep(2 * time.Second) // long enough for step b to start if the pause did not hold it
	tree, err := s.Tree(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b := tree.Find("s1.b"); b.Status != status.NotStarted || strings.Contains(readFile(marks), "b") || tree.Status != status.Paused {
		t.Fatalf("while paused: pipeline %s, step b %s, marks %q", tree.Status, b.Status, readFile(marks))
	}
	if _, err := s.Pause(ctx, exec.ID, "ops", false); err != nil {
		t.Fatal(err)
	}
	res, err := s.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded || !strings.Contains(readFile(marks), "b") {
		t.Fatalf("after resume: %v %v", res, err)
	}
	deliveries(t, s, exec.ID)
	var events []string
	for _, c := range h.to("/all") {
		ev := c.Body["eventData"].(map[string]any)
		if strings.HasPrefix(ev["eventType"].(string), "Pipeline") {
			events = append(events, ev["eventType"].(string)+"/"+ev["nodeStatus"].(string))
		}
	}
	if want := "PipelineStart/started PipelinePaused/paused PipelineResumed/resumed PipelineSuccess/completed PipelineEnd/completed"; strings.Join(events, " ") != want {
		t.Errorf("events %v, want %s", events, want)
	}
}
