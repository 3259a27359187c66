package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/notify"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/smtptest"
)

// The Email step sends through the notification SMTP server: to its addresses, its cc and the
// members of its user groups, the body's secrets expanded and never reported back; a message
// the server refuses fails the step, unless fireAndForget says it may not.
func TestEmailStep(t *testing.T) {
	srv := smtptest.Start(t, "gantry", "mail-pass")
	s := sender()
	s.Secrets = secrets.Map{"smtp": "mail-pass", "release_key": "rk-93810"}
	s.SMTP = notify.SMTP{Host: srv.Host, Port: srv.Port, Username: "gantry", PasswordRef: "smtp", From: "Gantry <cd@example.org>", InsecureSkipVerify: true}
	s.Directory = func() (*identity.Directory, error) {
		return &identity.Directory{Users: []identity.User{{Name: "bob", Email: "bob@example.org", Groups: []string{"release"}}}}, nil
	}
	a := &notify.Activity{Sender: s}
	run := func(spec map[string]any) (contract.StepResult, error) {
		raw, _ := json.Marshal(spec)
		return a.Email(context.Background(), contract.StepInput{ExecutionID: "rel-7", StepPath: "ship.mail", Type: "Email", Spec: raw})
	}
	res, err := run(map[string]any{"to": "ann@example.org, ops@example.org", "cc": "audit@example.org", "ccUserGroups": []any{"release"},
		"subject": "web 1.4 is live", "body": "Released with key <+secrets.getValue(\"release_key\")>."})
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if got := strings.Join(m.To, ","); got != "ann@example.org,ops@example.org,audit@example.org,bob@example.org" {
		t.Errorf("envelope to %s", got)
	}
	if m.Header.Get("Subject") != "web 1.4 is live" || m.Header.Get("Cc") != "audit@example.org, bob@example.org" || m.Header.Get("Message-Id") != notify.MessageID("rel-7/ship.mail") {
		t.Errorf("headers %v", m.Header)
	}
	if !strings.Contains(string(m.Data), "rk-93810") {
		t.Errorf("the body's secret was not expanded:\n%s", m.Data)
	}
	if out, _ := json.Marshal(res.Outputs); strings.Contains(string(out), "rk-93810") || res.Outputs["sent"] != "true" {
		t.Errorf("outputs %s", out)
	}
	srv.Reject("ann@example.org", 550)
	if _, err := run(map[string]any{"to": "ann@example.org", "subject": "s"}); err == nil || !strings.Contains(err.Error(), "550") {
		t.Errorf("a refused message: %v", err)
	}
	res, err = run(map[string]any{"to": "ann@example.org", "subject": "s", "fireAndForget": "true"})
	if err != nil || res.Outputs["sent"] != "false" || !strings.Contains(res.Outputs["error"].(string), "550") {
		t.Errorf("fire and forget: %v %v", res.Outputs, err)
	}
	if _, err := run(map[string]any{"toUserGroups": []any{"nobody"}, "subject": "s"}); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Errorf("an unknown group: %v", err)
	}
}
