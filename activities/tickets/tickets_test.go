package tickets_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/tickets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/jiratest"
	"github.com/gantry-cd/gantry/internal/snowtest"
	"github.com/gantry-cd/gantry/plan"
)

func step(t *testing.T, typ string, conn *plan.TicketConnector, spec map[string]any) contract.StepInput {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return contract.StepInput{ExecutionID: "change-7", StepPath: "change.open", Type: typ, Spec: raw, Refs: &plan.StepRefs{Ticket: conn}}
}

// A create retried after it succeeded (its answer lost with the worker) finds the issue or
// ticket the first attempt opened instead of opening a second; another step opens its own.
func TestCreateIsIdempotentAcrossRetries(t *testing.T) {
	jira, snow := jiratest.Start(), snowtest.Start()
	defer jira.Close()
	defer snow.Close()
	a := &tickets.Activity{Secrets: secrets.Map{"jira": jira.Token, "snow": snow.Password}}
	jc := &plan.TicketConnector{ID: "jira", Type: "Jira", URL: jira.URL, Auth: "UsernamePassword", Username: jira.User, PasswordRef: "jira"}
	sc := &plan.TicketConnector{ID: "snow", Type: "ServiceNow", URL: snow.URL + "/", Auth: "UsernamePassword", Username: snow.User, PasswordRef: "snow"}
	a.Secrets = secrets.Map{"jira": jira.Token, "snow": snow.Password, "release_key": "rk-55193"}
	jin := step(t, "JiraCreate", jc, map[string]any{"projectKey": "OPS", "issueType": "Change", "fields": []any{map[string]any{"name": "Summary", "value": "deploy"},
		map[string]any{"name": "Description", "value": `key <+secrets.getValue("release_key")>`}}})
	sin := step(t, "ServiceNowCreate", sc, map[string]any{"ticketType": "change_request", "fields": []any{map[string]any{"name": "short_description", "value": "deploy"}}})
	var keys, numbers []string
	var res contract.StepResult
	for range 2 {
		var err error
		res, err = a.Run(context.Background(), jin)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Outputs["issue"].(map[string]any)["key"].(string))
		sres, err := a.Run(context.Background(), sin)
		if err != nil {
			t.Fatal(err)
		}
		numbers = append(numbers, sres.Outputs["ticket"].(map[string]any)["ticketNumber"].(string))
	}
	if d := jira.Field(keys[0], "description"); d != "key rk-55193" {
		t.Errorf("Jira got description %v: the secret is sent", d)
	}
	if out, _ := json.Marshal(res); strings.Contains(string(out), "rk-55193") {
		t.Errorf("the secret is in the step's outputs: %s", out)
	}
	if keys[0] != keys[1] || len(jira.Issues()) != 1 {
		t.Errorf("Jira: keys %v, issues %v: want one issue", keys, jira.Issues())
	}
	if numbers[0] != numbers[1] || len(snow.Numbers("change_request")) != 1 {
		t.Errorf("ServiceNow: numbers %v, tickets %v: want one ticket", numbers, snow.Numbers("change_request"))
	}
	jin.StepPath = "change.open_another"
	if _, err := a.Run(context.Background(), jin); err != nil || len(jira.Issues()) != 2 {
		t.Errorf("another step: %v, issues %v", err, jira.Issues())
	}
}

// A field the issue type or table does not take fails the step naming the fields it does
// (ServiceNow itself would drop it silently); a ticket that does not exist fails naming it.
func TestUnknownFieldsAndTickets(t *testing.T) {
	jira, snow := jiratest.Start(), snowtest.Start()
	defer jira.Close()
	defer snow.Close()
	a := &tickets.Activity{Secrets: secrets.Map{"jira": jira.Token, "snow": snow.Password}}
	jc := &plan.TicketConnector{ID: "jira", Type: "Jira", URL: jira.URL, Auth: "UsernamePassword", Username: jira.User, PasswordRef: "jira"}
	sc := &plan.TicketConnector{ID: "snow", Type: "ServiceNow", URL: snow.URL, Auth: "UsernamePassword", Username: snow.User, PasswordRef: "snow"}
	for _, c := range []struct {
		in   contract.StepInput
		want string
	}{
		{step(t, "JiraCreate", jc, map[string]any{"projectKey": "OPS", "issueType": "Bug", "fields": []any{map[string]any{"name": "Change Risk", "value": "High"}}}),
			`Jira does not take field "Change Risk" on creating a Bug in OPS; the fields it takes are: Description, Summary`},
		{step(t, "JiraCreate", jc, map[string]any{"projectKey": "NOPE", "issueType": "Bug"}), "Jira has no project NOPE"},
		{step(t, "JiraCreate", jc, map[string]any{"projectKey": "OPS", "issueType": "Change", "fields": []any{map[string]any{"name": "Priority", "value": "P9"}}}),
			"Specify a valid value for Priority"},
		{step(t, "JiraUpdate", jc, map[string]any{"issueKey": "OPS-404", "transitionTo": map[string]any{"status": "Done"}}), "Jira has no issue OPS-404"},
		{step(t, "ServiceNowCreate", sc, map[string]any{"ticketType": "change_request", "fields": []any{map[string]any{"name": "u_nope", "value": "x"}}}),
			`ServiceNow table change_request has no field "u_nope"; its fields are: approval, correlation_display, correlation_id, description, end_date, number`},
		{step(t, "ServiceNowCreate", sc, map[string]any{"ticketType": "change_requests"}), `ServiceNow has no ticket type (table) "change_requests"`},
		{step(t, "ServiceNowUpdate", sc, map[string]any{"ticketType": "change_request", "ticketNumber": "CHG0099999"}), "ServiceNow has no change_request CHG0099999"},
	} {
		_, err := a.Run(context.Background(), c.in)
		if f := contract.Classify(err); f == nil || !strings.Contains(f.Message, c.want) || f.Category != contract.Unknown {
			t.Errorf("%s: %+v, want %q", c.in.Type, f, c.want)
		}
	}
	if len(jira.Issues()) != 0 || len(snow.Numbers("change_request")) != 0 {
		t.Errorf("tickets were created: %v %v", jira.Issues(), snow.Numbers("change_request"))
	}
}

// A personal access token signs in as a bearer; a Jira that is down is an outage to retry,
// not the pipeline's fault.
func TestJiraPATAndOutage(t *testing.T) {
	jira := jiratest.Start()
	defer jira.Close()
	a := &tickets.Activity{Secrets: secrets.Map{"pat": jira.PAT}}
	conn := plan.TicketConnector{ID: "jira", Type: "Jira", URL: jira.URL, Auth: "PersonalAccessToken", PatRef: "pat"}
	in := step(t, "JiraCreate", &conn, map[string]any{"projectKey": "OPS", "issueType": "Bug", "fields": []any{map[string]any{"name": "summary", "value": "x"}}})
	res, err := a.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	key := res.Outputs["issue"].(map[string]any)["key"].(string)
	got, err := a.Read(context.Background(), contract.TicketRequest{Connector: conn, Key: key})
	if err != nil || got.Fields["Status"] != "To Do" || got.Fields["Summary"] != "x" || got.URL != jira.URL+"/browse/"+key {
		t.Errorf("read %v %v", got, err)
	}
	jira.SetDown(true)
	_, err = a.Read(context.Background(), contract.TicketRequest{Connector: conn, Key: key})
	if f := contract.Classify(err); err == nil || f.Category == contract.Authentication || strings.Contains(err.Error(), jira.PAT) {
		t.Errorf("down: %v", err)
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		t.Errorf("an outage is not retried: %v", err)
	}
}
