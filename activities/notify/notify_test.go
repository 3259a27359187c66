package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/notify"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/smtptest"
	"github.com/gantry-cd/gantry/status"
)

// receiver is an HTTP endpoint recording what it receives.
type receiver struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []map[string]any
	answer func(n int) (int, http.Header)
	srv    *httptest.Server
}

func newReceiver(t *testing.T, answer func(n int) (int, http.Header)) *receiver {
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body is not a JSON object: %s", b)
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.bodies = append(r.bodies, body)
		n := len(r.reqs)
		r.mu.Unlock()
		code := http.StatusOK
		if r.answer != nil {
			var h http.Header
			code, h = r.answer(n)
			for k, v := range h {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func failedEvent() contract.NotifyEvent {
	start := time.Date(2024, 8, 20, 8, 14, 46, 0, time.UTC)
	end := start.Add(90 * time.Second)
	return contract.NotifyEvent{Type: contract.EventStageFailed, ExecutionID: "release-12", Namespace: "default",
		Pipeline: "release", PipelineName: "Release", Project: "payments", Org: "fin", SequenceID: 12, Node: "deploy_eu",
		Stage: "deploy_eu", StageName: "Deploy EU", StageBase: "deploy_eu", Status: status.Failed, Start: start, End: &end,
		Category: "Unknown", Error: "deploy_eu.rollout FAILED: Unknown: exit 1", TriggerType: "MANUAL", TriggeredBy: "ann", Mode: "NORMAL"}
}

func sender() *notify.Sender {
	return &notify.Sender{Secrets: secrets.Map{"hk": "s3cr3t", "pd": "routing-123", "dd": "ddkey"},
		UIURL: func() string { return "http://ui.example:8233" }, PagerDutyURL: ""}
}

func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

// Spec 20.4.1: the Webhook channel posts {"eventData": ...} with the reference's fields, an
// Idempotency-Key header and the rule's headers with secrets resolved.
func TestWebhookPayload(t *testing.T) {
	r := newReceiver(t, nil)
	d := contract.Delivery{Key: "release-12:deploy_eu:StageFailed:r1:0", Rule: "r1", Channel: "Webhook",
		URL: r.srv.URL + `/cd?k=<+secrets.getValue("hk")>`, Headers: map[string]string{"Authorization": `Bearer <+secrets.getValue("hk")>`}, Event: failedEvent()}
	res, err := sender().Send(context.Background(), d)
	if err != nil || res.Code != 200 {
		t.Fatalf("send: %v %v", res, err)
	}
	req, body := r.reqs[0], r.bodies[0]
	if req.Header.Get("Idempotency-Key") != d.Key || req.Header.Get("Authorization") != "Bearer s3cr3t" || req.URL.Query().Get("k") != "s3cr3t" {
		t.Errorf("headers %v, query %s", req.Header, req.URL.RawQuery)
	}
	ev := body["eventData"].(map[string]any)
	for k, want := range map[string]string{"pipelineIdentifier": "release", "pipelineName": "Release", "planExecutionId": "release-12",
		"eventType": "StageFailed", "nodeStatus": "failed", "stageIdentifier": "deploy_eu", "stageName": "Deploy EU",
		"startTime": "Tue Aug 20 08:14:46 GMT 2024", "endTime": "Tue Aug 20 08:16:16 GMT 2024", "errorMessage": "deploy_eu.rollout FAILED: Unknown: exit 1",
		"projectIdentifier": "payments", "orgIdentifier": "fin", "accountIdentifier": "default", "executionMode": "NORMAL",
		"executionUrl": "http://ui.example:8233/namespaces/default/workflows/release-12"} {
		if got := str(ev, k); got != want {
			t.Errorf("eventData.%s = %q, want %q", k, got, want)
		}
	}
	if ev["startTs"].(float64) != 1724141686 || ev["endTs"].(float64) != 1724141776 {
		t.Errorf("startTs/endTs in seconds: %v %v", ev["startTs"], ev["endTs"])
	}
	if str(ev, "triggeredBy", "name") != "ann" || str(ev, "triggeredBy", "triggerType") != "MANUAL" {
		t.Errorf("triggeredBy: %v", ev["triggeredBy"])
	}
	if _, ok := ev["stepIdentifier"]; ok {
		t.Error("a stage event has no stepIdentifier")
	}
}

// Spec 20.4.2: each channel's message has the shape its provider documents, and says the
// pipeline, event, status, stage, trigger, timing, link and error.
func TestChannelShapes(t *testing.T) {
	r := newReceiver(t, nil)
	s := sender()
	s.PagerDutyURL = r.srv.URL + "/v2/enqueue"
	ev := failedEvent()
	for _, d := range []contract.Delivery{
		{Key: "k-slack", Channel: "Slack", URL: r.srv.URL + "/slack", Event: ev},
		{Key: "k-teams", Channel: "MsTeams", URL: r.srv.URL + "/teams", Event: ev},
		{Key: "k-pd", Channel: "PagerDuty", RoutingKey: `<+secrets.getValue("pd")>`, Event: ev},
		{Key: "k-dd", Channel: "Datadog", URL: r.srv.URL + "/api/v1/events", RoutingKey: `<+secrets.getValue("dd")>`, Event: ev},
	} {
		if _, err := s.Send(context.Background(), d); err != nil {
			t.Fatalf("%s: %v", d.Channel, err)
		}
	}
	slack, teams, pd, dd := r.bodies[0], r.bodies[1], r.bodies[2], r.bodies[3]
	if !strings.Contains(str(slack, "text"), "<http://ui.example:8233/namespaces/default/workflows/release-12|StageFailed") {
		t.Errorf("slack text links the execution: %q", slack["text"])
	}
	att := slack["attachments"].([]any)[0].(map[string]any)
	blocks, _ := json.Marshal(att["blocks"])
	if att["color"] != "#D12C2C" || !strings.Contains(string(blocks), "Deploy EU") || !strings.Contains(string(blocks), "exit 1") || !strings.Contains(string(blocks), "1m30s") {
		t.Errorf("slack attachment: %v", att)
	}
	if teams["@type"] != "MessageCard" || teams["summary"] != "StageFailed" || !strings.Contains(mustJSON(teams["sections"]), `"Triggered by","value":"ann (MANUAL)"`) ||
		!strings.Contains(mustJSON(teams["potentialAction"]), "workflows/release-12") {
		t.Errorf("teams card: %v", teams)
	}
	if r.reqs[2].URL.Path != "/v2/enqueue" || pd["routing_key"] != "routing-123" || pd["event_action"] != "trigger" || pd["dedup_key"] != "k-pd" ||
		!strings.HasPrefix(str(pd, "payload", "summary"), "StageFailed: release, failed") || str(pd, "payload", "severity") != "error" ||
		!strings.Contains(mustJSON(pd["links"]), "workflows/release-12") {
		t.Errorf("pagerduty event: %v", pd)
	}
	tags := mustJSON(dd["tags"])
	if r.reqs[3].Header.Get("DD-API-KEY") != "ddkey" || r.reqs[3].Header.Get("Idempotency-Key") != "k-dd" || dd["aggregation_key"] != "release" ||
		!strings.Contains(tags, "pipeline:release") || !strings.Contains(tags, "status:failed") || !strings.Contains(tags, "event_type:StageFailed") ||
		!strings.Contains(tags, "project:payments") || dd["alert_type"] != "error" || !strings.Contains(str(dd, "text"), "exit 1") {
		t.Errorf("datadog event: %v (%v)", dd, r.reqs[3].Header)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Spec 20.5.4: 408, 425, 429 and 5xx are retryable (Retry-After up to 5 min honoured), any
// other 4xx is final, no answer is retryable; errors never show secrets.
func TestSendClassifiesFailures(t *testing.T) {
	codes := []int{503, 429, 400}
	r := newReceiver(t, func(n int) (int, http.Header) {
		h := http.Header{}
		if codes[n-1] == 429 {
			h.Set("Retry-After", "7")
		}
		return codes[n-1], h
	})
	d := contract.Delivery{Key: "k", Channel: "Webhook", URL: r.srv.URL + `/x?token=<+secrets.getValue("hk")>`, Event: failedEvent()}
	for i, want := range []struct {
		retryable bool
		after     time.Duration
	}{{true, 0}, {true, 7 * time.Second}, {false, 0}} {
		_, err := sender().Send(context.Background(), d)
		var e *notify.Error
		if !errors.As(err, &e) || e.Retryable != want.retryable || e.RetryAfter != want.after || e.Code != codes[i] {
			t.Errorf("HTTP %d: %#v", codes[i], err)
		}
		if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "token="+secrets.Mask) {
			t.Errorf("error shows the secret or not the masked query: %v", err)
		}
	}
	r.srv.Close()
	_, err := sender().Send(context.Background(), d)
	var e *notify.Error
	if !errors.As(err, &e) || !e.Retryable || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("unreachable: %v", err)
	}
	d.Unresolved = "UNRESOLVED_EXPRESSION: url: pipeline.variables.missing"
	if _, err := sender().Send(context.Background(), d); !errors.As(err, &e) || e.Retryable {
		t.Errorf("unresolved: %v", err)
	}
}

// Spec 20.3: a group target goes where the identity file sends the group's messages; an unknown
// group fails that target for good.
func TestGroupTargets(t *testing.T) {
	r := newReceiver(t, nil)
	s := sender()
	s.Directory = func() (*identity.Directory, error) {
		return &identity.Directory{Groups: []identity.Group{{Name: "ops", SlackWebhookURL: r.srv.URL + "/ops"}}}, nil
	}
	if _, err := s.Send(context.Background(), contract.Delivery{Key: "k", Channel: "Slack", Groups: []string{"account.ops"}, Event: failedEvent()}); err != nil {
		t.Fatal(err)
	}
	if r.reqs[0].URL.Path != "/ops" {
		t.Errorf("group webhook not used: %s", r.reqs[0].URL)
	}
	_, err := s.Send(context.Background(), contract.Delivery{Key: "k", Channel: "MsTeams", Groups: []string{"nobody"}, Event: failedEvent()})
	var e *notify.Error
	if !errors.As(err, &e) || e.Retryable || !strings.Contains(err.Error(), "nobody") {
		t.Errorf("unknown group: %v", err)
	}
}

// Email goes through a real SMTP server: STARTTLS, AUTH PLAIN with the password from the
// secret resolver, one message to the recipients and the groups' members, a stable Message-ID,
// plain-text and HTML parts; a 5xx rejection is final, a 4xx one is retried.
func TestEmail(t *testing.T) {
	srv := smtptest.Start(t, "gantry", "mail-pass")
	s := sender()
	s.Secrets = secrets.Map{"smtp": "mail-pass"}
	s.SMTP = notify.SMTP{Host: srv.Host, Port: srv.Port, Username: "gantry", PasswordRef: "smtp", From: "Gantry <cd@example.org>", InsecureSkipVerify: true}
	s.Directory = func() (*identity.Directory, error) {
		return &identity.Directory{Users: []identity.User{{Name: "bob", Email: "bob@example.org", Groups: []string{"sre"}}, {Name: "eve", Groups: []string{"sre"}}}}, nil
	}
	ev := failedEvent()
	ev.Type, ev.Node, ev.Step, ev.StepName, ev.StepPath, ev.Status = contract.EventWaitingForUserAction, "deploy_eu.gate", "gate", "Gate", "deploy_eu.gate", status.ApprovalWaiting
	ev.Action = "gantry approve release-12 --step deploy_eu.gate"
	d := contract.Delivery{Key: "release-12:deploy_eu.gate:WaitingForUserAction:mail:0", Channel: "Email",
		Recipients: []string{"ann@example.org"}, Groups: []string{"sre", "ghosts"}, Event: ev}
	res, err := s.Send(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Detail, "ghosts") {
		t.Errorf("an unknown group is reported: %q", res.Detail)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if strings.Join(m.To, ",") != "ann@example.org,bob@example.org" || m.From != "cd@example.org" {
		t.Errorf("envelope from %s to %v", m.From, m.To)
	}
	if m.Header.Get("Subject") != "release WaitingForUserAction" || m.Header.Get("Message-Id") != notify.MessageID(d.Key) {
		t.Errorf("headers %v", m.Header)
	}
	body := string(m.Data)
	for _, want := range []string{"Content-Type: text/plain", "Content-Type: text/html", "gantry approve release-12 --step deploy_eu.gate", "action_required", "Deploy EU"} {
		if !strings.Contains(body, want) {
			t.Errorf("message lacks %q:\n%s", want, body)
		}
	}
	srv.Reject("ann@example.org", 550)
	var e *notify.Error
	if _, err := s.Send(context.Background(), d); !errors.As(err, &e) || e.Retryable || e.Code != 550 {
		t.Errorf("5xx: %v", err)
	}
	srv.Reject("ann@example.org", 451)
	if _, err := s.Send(context.Background(), d); !errors.As(err, &e) || !e.Retryable || e.Code != 451 {
		t.Errorf("4xx: %v", err)
	}
	s.Secrets = secrets.Map{"smtp": "wrong"}
	if _, err := s.Send(context.Background(), d); !errors.As(err, &e) || e.Retryable || strings.Contains(err.Error(), "wrong") {
		t.Errorf("bad password: %v", err)
	}
}

// Implicit TLS (SMTPS): the connection is TLS from the first byte.
func TestEmailImplicitTLS(t *testing.T) {
	srv := smtptest.StartImplicitTLS(t, "gantry", "pw")
	s := sender()
	s.Secrets = secrets.Map{"smtp": "pw"}
	s.SMTP = notify.SMTP{Host: srv.Host, Port: srv.Port, Security: "tls", Username: "gantry", PasswordRef: "smtp", From: "cd@example.org", InsecureSkipVerify: true}
	if _, err := s.Send(context.Background(), contract.Delivery{Key: "k", Channel: "Email", Recipients: []string{"a@example.org"}, Event: failedEvent()}); err != nil {
		t.Fatal(err)
	}
	if len(srv.Messages()) != 1 {
		t.Fatalf("%d messages", len(srv.Messages()))
	}
	s.SMTP.Security = "starttls" // a plain-text greeting expected, a TLS server met: the attempt fails
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := s.Send(ctx, contract.Delivery{Key: "k", Channel: "Email", Recipients: []string{"a@example.org"}, Event: failedEvent()}); err == nil {
		t.Error("STARTTLS against an SMTPS port succeeded")
	}
}
