package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/jiratest"
	"github.com/gantry-cd/gantry/internal/snowtest"
	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// jiraPipeline opens a change in Jira, waits until someone approves it there, then moves it to
// Done and says which issue it was.
const jiraPipeline = `pipeline:
  name: Jira change
  identifier: jira_change
  stages:
    - stage:
        name: Change
        identifier: change
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: JiraCreate
                  name: Open change
                  identifier: open
                  timeout: 2m
                  spec:
                    connectorRef: jira
                    projectKey: OPS
                    issueType: Change
                    fields:
                      - {name: Summary, value: Deploy web <+pipeline.sequenceId>}
                      - {name: Priority, value: P2}
                      - {name: Change Risk, value: High}
              - step:
                  type: JiraApproval
                  name: Wait for approval
                  identifier: approval
                  timeout: 5m
                  spec:
                    connectorRef: jira
                    issueKey: <+pipeline.stages.change.spec.execution.steps.open.issue.key>
                    retryInterval: 2s
                    approvalCriteria:
                      type: KeyValues
                      spec:
                        matchAnyCondition: false
                        conditions: [{key: Status, operator: equals, value: Approved}]
                    rejectionCriteria:
                      type: Jexl
                      spec: {expression: <+issue.Status> == "Rejected"}
              - step:
                  type: JiraUpdate
                  name: Close change
                  identifier: close
                  timeout: 2m
                  spec:
                    connectorRef: jira
                    issueKey: <+execution.steps.open.issue.key>
                    fields: [{name: Description, value: deployed}]
                    transitionTo: {status: Done, transitionName: ""}
              - step:
                  type: ShellScript
                  name: Report
                  identifier: report
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: 'echo "<+execution.steps.open.issue.key> <+execution.steps.close.issue.Status>"'}}
                    outputVariables: []
`

// ticketConnectors writes the Jira connector (basic auth with an API token) and the
// ServiceNow connector (an OAuth client and refresh token); their secrets come from the
// worker's environment under names unique to the test.
func ticketConnectors(t testing.TB, dir, tag string, jira *jiratest.Server, snow *snowtest.Server, jiraToken string) {
	t.Helper()
	set := func(id, v string) {
		if err := os.Setenv(secrets.EnvName(id), v); err != nil {
			t.Fatal(err)
		}
	}
	set("jira_token_"+tag, jiraToken)
	set("snow_client_"+tag, snow.ClientID)
	set("snow_secret_"+tag, snow.ClientSecret)
	set("snow_refresh_"+tag, snow.RefreshToken)
	writeFile(t, filepath.Join(dir, "jira.yaml"), fmt.Sprintf(`connector:
  name: Jira
  identifier: jira
  type: Jira
  spec:
    jiraUrl: %s
    delegateSelectors: []
    auth:
      type: UsernamePassword
      spec: {username: %s, passwordRef: jira_token_%s}
`, jira.URL, jira.User, tag))
	writeFile(t, filepath.Join(dir, "snow.yaml"), fmt.Sprintf(`connector:
  name: ServiceNow
  identifier: snow
  type: ServiceNow
  spec:
    serviceNowUrl: %s
    auth:
      type: RefreshTokenGrantType
      spec:
        tokenUrl: %s/oauth_token.do
        clientIdRef: snow_client_%s
        clientSecretRef: snow_secret_%s
        refreshTokenRef: snow_refresh_%s
        scope: useraccount
`, snow.URL, snow.URL, tag, tag, tag))
}

// A change opened in Jira gates the pipeline: the approval step waits (APPROVAL_WAITING, with
// the issue and the unmet condition in the tree and the pending list) until the test moves the
// issue to Approved, then the pipeline closes it; moved to Rejected instead, the approval step
// ends APPROVAL_REJECTED. Each run opens exactly one issue.
func TestJiraChangeGatesThePipeline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, move string
		want       status.Status
	}{
		{"approved", "Approved", status.Succeeded},
		{"rejected", "Rejected", status.ApprovalRejected},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			jira, _, exec := ticketRun(t, ctx, "gate_"+c.name, jiraPipeline)
			n := waitTicket(t, ctx, env.starter, exec.ID, "change.approval", unmet)
			key := jira.Issues()[0]
			if n.Ticket.System != "Jira" || n.Ticket.Ticket != key || n.Ticket.URL != jira.URL+"/browse/"+key ||
				n.Ticket.Unmet[0] != `Status equals Approved (now "To Do")` || n.Ticket.Rejection != `<+issue.Status> == "Rejected"` {
				t.Errorf("the waiting step shows %+v", n.Ticket)
			}
			pending, err := env.starter.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range pending {
				found = found || p.ExecutionID == exec.ID && p.Ticket != nil && p.Ticket.Ticket == key
			}
			if !found {
				t.Errorf("the pending list does not show the ticket: %+v", pending)
			}
			if c.want == status.Succeeded {
				body := decisionPage(t, ctx, exec.ID, "change.approval", nil)
				for _, want := range []string{`<a id="ticket" href="` + jira.URL + "/browse/" + key + `">` + key + "</a>", "nothing is approved here", `Status equals Approved (now &#34;To Do&#34;)`} {
					if !strings.Contains(body, want) {
						t.Errorf("the decision page lacks %q:\n%s", want, body)
					}
				}
				if body := decisionPage(t, ctx, exec.ID, "change.approval", url.Values{"decision": {"APPROVE"}}); strings.Contains(body, `id="result"`) {
					t.Errorf("a vote on a ticket approval was taken:\n%s", body)
				}
				// Jira goes down for a while: the step keeps waiting and says why.
				jira.SetDown(true)
				waitTicket(t, ctx, env.starter, exec.ID, "change.approval", func(v *workflows.TicketView) bool {
					return strings.Contains(v.Error, "HTTP 503: Jira is under maintenance")
				})
				jira.SetDown(false)
			}
			jira.SetStatus(key, c.move)
			res, err := env.starter.Result(ctx, exec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := jira.Issues(); len(got) != 1 {
				t.Errorf("issues created: %v, want one", got)
			}
			if c.want == status.ApprovalRejected {
				conformance.Check(t, res.Tree, map[string]status.Status{"": status.ApprovalRejected, "change.approval": status.ApprovalRejected, "change.close": status.Skipped})
				return
			}
			conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "change.approval": status.Succeeded, "change.close": status.Succeeded})
			if st := jira.Field(key, "status"); fmt.Sprint(st) != "map[name:Done]" {
				t.Errorf("the issue is %v after the pipeline, want Done", st)
			}
			if d := jira.Field(key, "description"); d != "deployed" {
				t.Errorf("description %v", d)
			}
			if risk := jira.Field(key, "customfield_10100"); fmt.Sprint(risk) != "map[value:High]" {
				t.Errorf("Change Risk was sent as %v", risk)
			}
			var log strings.Builder
			_ = env.logs.Copy(ctx, &log, exec.ID, "change.report")
			if !strings.Contains(log.String(), key+" Done") {
				t.Errorf("the report step printed %q, want %q", log.String(), key+" Done")
			}
		})
	}
}

// snowPipeline opens a change request in ServiceNow through the OAuth client, imports a row
// through an import set, and waits until the change request is in Implement (Jexl criteria
// on the display value), then updates it.
const snowPipeline = `pipeline:
  name: ServiceNow change
  identifier: snow_change
  stages:
    - stage:
        name: Change
        identifier: change
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ServiceNowCreate
                  name: Open change
                  identifier: open
                  timeout: 2m
                  spec:
                    connectorRef: snow
                    ticketType: change_request
                    fields:
                      - {name: short_description, value: Deploy web}
                      - {name: Risk, value: Moderate}
                    createType: Normal
              - step:
                  type: ServiceNowImportSet
                  name: Import
                  identifier: import
                  timeout: 2m
                  spec:
                    connectorRef: snow
                    stagingTableName: u_gantry_change_import
                    importData:
                      type: Json
                      spec: {jsonBody: '{"u_summary": "imported by <+pipeline.identifier>", "u_risk": "Low"}'}
              - step:
                  type: ServiceNowApproval
                  name: Wait for approval
                  identifier: approval
                  timeout: 5m
                  spec:
                    connectorRef: snow
                    ticketType: change_request
                    ticketNumber: <+execution.steps.open.ticket.ticketNumber>
                    retryInterval: 1s
                    approvalCriteria:
                      type: Jexl
                      spec: {expression: <+ticket.state.displayValue> == "Implement" && <+ticket.approval.value> == "approved"}
                    rejectionCriteria:
                      type: KeyValues
                      spec: {matchAnyCondition: true, conditions: [{key: approval, operator: equals, value: Rejected}]}
              - step:
                  type: ServiceNowUpdate
                  name: Close change
                  identifier: close
                  timeout: 2m
                  spec:
                    connectorRef: snow
                    ticketType: change_request
                    ticketNumber: <+execution.steps.open.ticket.ticketNumber>
                    useServiceNowTemplate: false
                    fields: [{name: state, value: "0"}]
`

// A ServiceNow change request gates the pipeline; the import set step's row becomes a record
// through the transform map, and its outcome is the step's output.
func TestServiceNowChangeGatesThePipeline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, snow, exec := ticketRun(t, ctx, "snow_gate", snowPipeline)
	n := waitFor(t, ctx, env.starter, exec.ID, "change.approval", status.ApprovalWaiting).Find("change.approval")
	number := snow.Numbers("change_request")[0]
	if n.Ticket == nil || n.Ticket.Ticket != number {
		t.Errorf("the waiting step shows %+v, want %s", n.Ticket, number)
	}
	snow.Set("change_request", number, "state", "-1", "Implement")
	time.Sleep(3 * time.Second) // still waiting: not approved yet
	if n := waitFor(t, ctx, env.starter, exec.ID, "change.approval", status.ApprovalWaiting).Find("change.approval"); n.Ticket == nil || len(n.Ticket.Unmet) != 1 {
		t.Errorf("waiting with %+v", n.Ticket)
	}
	snow.Set("change_request", number, "approval", "approved", "Approved")
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "change.close": status.Succeeded})
	if got := snow.Numbers("change_request"); len(got) != 2 {
		t.Errorf("change requests %v: want the created one and the imported one", got)
	}
	imp := res.Tree.Find("change.import").Outputs
	raw, _ := json.Marshal(imp)
	if !strings.Contains(string(raw), `"status":"inserted"`) || !strings.Contains(string(raw), `"displayValue":"CHG0000002"`) {
		t.Errorf("import outputs %s", raw)
	}
	if req := snow.Requests(); req["POST token"] != 1 {
		t.Errorf("token requests %d: the access token is reused while it lasts", req["POST token"])
	}
}

// Wrong credentials fail the step with Jira's own message, the token masked wherever it could
// appear; an unknown issue type fails naming the ones the project has.
func TestJiraRefusals(t *testing.T) {
	t.Parallel()
	jira, snow := jiratest.Start(), snowtest.Start()
	defer jira.Close()
	defer snow.Close()
	for _, c := range []struct {
		name, token, issueType, want string
		category                     string
	}{
		{"wrong token", "not-the-token-1234", "Change", "Jira refused the credentials of connector jira (HTTP 401): Client must be authenticated to access this resource.", "Authentication"},
		{"unknown issue type", jira.Token, "Story", `Jira project OPS has no issue type "Story"; its issue types are: Change, Bug`, "Unknown"},
	} {
		dir := t.TempDir()
		ticketConnectors(t, dir, "refusal_"+strings.ReplaceAll(c.name, " ", "_"), jira, snow, c.token)
		file := filepath.Join(dir, "change.yaml")
		writeFile(t, file, strings.Replace(jiraPipeline, "issueType: Change", "issueType: "+c.issueType, 1))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := env.starter.Result(ctx, exec.ID)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		n := res.Tree.Find("change.open")
		if n.Status != status.Failed || n.Failure == nil || !strings.Contains(n.Failure.Message, c.want) || string(n.Failure.Category) != c.category {
			t.Errorf("%s: %s %+v, want %q (%s)", c.name, n.Status, n.Failure, c.want, c.category)
		}
		raw, _ := json.Marshal(res.Tree)
		if strings.Contains(string(raw), c.token) {
			t.Errorf("%s: the token appears in the tree", c.name)
		}
	}
	if len(jira.Issues()) != 0 {
		t.Errorf("issues were created: %v", jira.Issues())
	}
}

// customApprovalPipeline waits until its script reports the change approved.
const customApprovalPipeline = `pipeline:
  name: Custom approval
  identifier: custom_approval
  stages:
    - stage:
        name: Gate
        identifier: gate
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: CustomApproval
                  name: Ask the change board
                  identifier: board
                  timeout: 3m
                  spec:
                    shell: Bash
                    retryInterval: 5s
                    scriptTimeout: 1m
                    source:
                      type: Inline
                      spec:
                        script: |
                          decision=pending
                          if [ -f "$MARK" ]; then decision=$(cat "$MARK"); fi
                    environmentVariables: [{name: MARK, type: String, value: MARKFILE}]
                    outputVariables: [{name: decision, type: String, value: decision}]
                    approvalCriteria:
                      type: KeyValues
                      spec: {matchAnyCondition: false, conditions: [{key: decision, operator: equals, value: approved}]}
                    rejectionCriteria:
                      type: Jexl
                      spec: {expression: <+output.decision> == "rejected"}
              - step:
                  type: ShellScript
                  name: After
                  identifier: after
                  spec: {shell: Bash, source: {type: Inline, spec: {script: 'echo "board said <+execution.steps.board.output.outputVariables.decision>"'}}}
`

// A CustomApproval runs its script every retryInterval until its outputs meet the approval
// criteria; the decision is the step's output.
func TestCustomApprovalWaitsOnItsScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mark := filepath.Join(dir, "decision")
	file := filepath.Join(dir, "gate.yaml")
	writeFile(t, file, strings.Replace(customApprovalPipeline, "MARKFILE", mark, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	n := waitTicket(t, ctx, env.starter, exec.ID, "gate.board", unmet)
	if n.Ticket.System != "Custom" || len(n.Ticket.Unmet) != 1 || n.Ticket.Unmet[0] != `decision equals approved (now "pending")` {
		t.Errorf("waiting with %+v", n.Ticket)
	}
	writeFile(t, mark, "approved")
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "gate.after": status.Succeeded})
	var log strings.Builder
	_ = env.logs.Copy(ctx, &log, exec.ID, "gate.after")
	if !strings.Contains(log.String(), "board said approved") {
		t.Errorf("after: %q", log.String())
	}
}

// A Jira approval waits across a SIGKILLed worker process and a restart of the server on the
// same data directory: after both, approving the issue lets the pipeline finish, and the
// issue was created once.
func TestTicketWaitSurvivesKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	jira, snow := jiratest.Start(), snowtest.Start()
	defer jira.Close()
	defer snow.Close()
	dir, data := t.TempDir(), t.TempDir()
	ticketConnectors(t, dir, "restart", jira, snow, jira.Token)
	file := filepath.Join(dir, "change.yaml")
	writeFile(t, file, jiraPipeline)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv, c, err := startServer(ctx, filepath.Join(data, "temporal"))
	if err != nil {
		t.Fatal(err)
	}
	startWorker := func(address string) *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--address", address, "--task-queue", "tickets-restart", "--data-dir", filepath.Join(data, "worker"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = testproc.DieWithTest() // a test that times out takes its workers with it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	w := startWorker(srv.Address)
	s := &starter.Starter{Client: c, TaskQueue: "tickets-restart"}
	exec1, err := s.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitTicket(t, ctx, s, exec1.ID, "change.approval", unmet)
	if err := w.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w.Wait()
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv, c, err = startServer(ctx, filepath.Join(data, "temporal"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	defer c.Close()
	w = startWorker(srv.Address)
	defer func() { _ = w.Process.Signal(syscall.SIGTERM); _ = w.Wait() }()
	s = &starter.Starter{Client: c, TaskQueue: "tickets-restart"}
	waitFor(t, ctx, s, exec1.ID, "change.approval", status.ApprovalWaiting)
	jira.SetStatus(jira.Issues()[0], "Approved")
	res, err := s.Result(ctx, exec1.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "change.close": status.Succeeded})
	if got := jira.Issues(); len(got) != 1 || jira.Requests()["POST issue"] != 1 {
		t.Errorf("issues %v, %d creates: want one", got, jira.Requests()["POST issue"])
	}
}

// decisionPage fetches (or, with a form, posts to) a step's decision page as a signed-in user.
func decisionPage(t *testing.T, ctx context.Context, execution, step string, form url.Values) string {
	t.Helper()
	dir := &identity.Directory{}
	token, err := dir.AddUser("dev", "", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	user := func(token string) (*identity.User, error) { return dir.Authenticate(token) }
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address, SignIn: webui.UserName(user), User: user,
		Decisions: &webui.Decisions{Starter: env.starter, User: user}, Executions: env.starter})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(ui.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: codec.TokenCookie, Value: token, Path: "/"}})
	hc := &http.Client{Jar: jar}
	var resp *http.Response
	if form != nil {
		resp, err = hc.PostForm(ui.URL+webui.DecidePath+execution+"/"+step, form)
	} else {
		resp, err = hc.Get(ui.URL + webui.DecidePath + execution + "/" + step)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitTicket polls the live tree until the approval step at path waits with a view that ok
// accepts; it returns the step's node.
func waitTicket(t *testing.T, ctx context.Context, s *starter.Starter, id, path string, ok func(*workflows.TicketView) bool) *workflows.Node {
	t.Helper()
	for {
		n := waitFor(t, ctx, s, id, path, status.ApprovalWaiting).Find(path)
		if n.Ticket != nil && ok(n.Ticket) {
			return n
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unmet accepts a view that lists unmet conditions: the wait has read its ticket.
func unmet(v *workflows.TicketView) bool { return len(v.Unmet) > 0 }

// An execution aborted while it waits on a ticket ends ABORTED, and its wait ends with it: the
// issue is not read any more.
func TestTicketWaitAborted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jira, _, exec := ticketRun(t, ctx, "aborted", jiraPipeline)
	waitTicket(t, ctx, env.starter, exec.ID, "change.approval", unmet)
	if err := env.starter.Abort(ctx, exec.ID, "test", "change withdrawn"); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "change.approval": status.Aborted})
	reads := jira.Requests()["GET issue"]
	time.Sleep(7 * time.Second) // longer than the 5s between reads
	if after := jira.Requests()["GET issue"]; after != reads {
		t.Errorf("the issue was read %d more times after the abort", after-reads)
	}
}

// ticketRun starts a pipeline against fake Jira and ServiceNow servers of its own (closed when
// the test ends), its connectors' secrets named by tag.
func ticketRun(t *testing.T, ctx context.Context, tag, pipeline string) (*jiratest.Server, *snowtest.Server, starter.Execution) {
	t.Helper()
	jira, snow := jiratest.Start(), snowtest.Start()
	t.Cleanup(jira.Close)
	t.Cleanup(snow.Close)
	dir := t.TempDir()
	ticketConnectors(t, dir, tag, jira, snow, jira.Token)
	file := filepath.Join(dir, "change.yaml")
	writeFile(t, file, pipeline)
	exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return jira, snow, exec
}

// TestRecordTicketHistories records a Jira change gate: the stage, and the TicketWait child
// reading the issue until the test approves it, by local activity (ticket_record-1 was
// recorded before, reading by regular activity).
func TestRecordTicketHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jira, _, exec := ticketRun(t, ctx, "record", strings.Replace(jiraPipeline, "identifier: jira_change", "identifier: ticket_local_record", 1))
	n := waitTicket(t, ctx, env.starter, exec.ID, "change.approval", unmet)
	for reads := jira.Requests()["GET issue"]; jira.Requests()["GET issue"] < reads+2; {
		time.Sleep(200 * time.Millisecond)
	}
	jira.SetStatus(n.Ticket.Ticket, "Approved")
	if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Succeeded {
		t.Fatalf("%v %v", res, err)
	}
	recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
}
