package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// gatedPipeline prints a line, then waits for one approval of release_managers.
func gatedPipeline(id string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: say, identifier: say, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo built ` + id + `"}}}}
    - stage:
        name: gate
        identifier: gate
        type: Approval
        spec:
          execution:
            steps:
              - step:
                  type: HarnessApproval
                  name: gate
                  identifier: gate
                  timeout: 1h
                  spec:
                    approvalMessage: ship?
                    includePipelineExecutionHistory: false
                    approvers: {userGroups: [release_managers], minimumCount: 1, disallowPipelineExecutor: false}
`
}

// testTrigger is a trigger of pipelineID with source, the source's YAML indented for its place.
func testTrigger(id, pipelineID, source string) string {
	return `trigger:
  name: ` + id + `
  identifier: ` + id + `
  pipelineIdentifier: ` + pipelineID + `
  inputYaml: ""
  source:
` + source
}

const (
	customSource = "    type: Webhook\n    spec:\n      type: Custom\n      spec: {}\n"
	cronSource   = "    type: Scheduled\n    spec:\n      type: Cron\n      spec: {expression: \"0 0 1 1 *\"}\n"
)

// rolesDirectory is the identity file of the roles tests: developers may view and execute the
// web_ pipelines into PreProduction environments; operators may view, execute and abort
// everything; root is an admin; alice only approves (release_managers holds no role); bot is
// the service identity of the web_ triggers and of pay_hook, with the developers' role.
func rolesDirectory(t *testing.T, path string) map[string]string {
	t.Helper()
	d := &identity.Directory{}
	for _, r := range []identity.Role{
		{Name: "web-developer", Permissions: []identity.Permission{{Actions: []identity.Action{identity.View, identity.Execute}, Pipelines: []string{"web_*"}, Environments: []string{"PreProduction"}}}},
		{Name: "operator", Permissions: []identity.Permission{{Actions: []identity.Action{identity.View, identity.Execute, identity.Abort}}}},
		{Name: "administrator", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Admin}}}},
	} {
		if err := d.SetRole(r); err != nil {
			t.Fatal(err)
		}
	}
	for g, r := range map[string]string{"web-devs": "web-developer", "platform": "operator", "admins": "administrator", "bots": "web-developer"} {
		if err := d.Grant(g, r); err != nil {
			t.Fatal(err)
		}
	}
	tokens := map[string]string{}
	for user, group := range map[string]string{"dev": "web-devs", "ops": "platform", "root": "admins", "alice": "release_managers", "bot": "bots"} {
		tok, err := d.AddUser(user, "", []string{group})
		if err != nil {
			t.Fatal(err)
		}
		tokens[user] = tok
	}
	if err := d.SetTriggers("bot", []string{"web_*", "pay_hook"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Save(path); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// Roles decide who may do what, everywhere the same rule: the API, triggers, the web UI's
// pages; approvals keep following their own approver groups; the audit trail reads every
// action and refusal back from Temporal; a revoked role applies to the next request.
func TestRolesDecideWhoMayDoWhat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	since := time.Now().Add(-time.Second)
	dir := t.TempDir()
	files := map[string]string{
		"web.yaml": gatedPipeline("web_deploy"), "payments.yaml": gatedPipeline("payments_deploy"),
		"web-hook.yaml": testTrigger("web_hook", "web_deploy", customSource), "pay-hook.yaml": testTrigger("pay_hook", "payments_deploy", customSource),
		"web-cron.yaml": testTrigger("web_cron", "web_deploy", cronSource), "pay-cron.yaml": testTrigger("pay_cron", "payments_deploy", cronSource),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The Kubernetes example: a Deployment stage into dev (PreProduction), then one into prod.
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "k8s"))); err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	tok := rolesDirectory(t, idFile)
	api := server.New(server.Options{Starter: env.starter, IdentityFile: idFile, PipelinesDir: dir, Logs: env.logs})
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	const execs = "/api/v1/executions"
	start := func(user string, body map[string]any, want int, contains string) string {
		t.Helper()
		code, out := c.call("POST", execs, execs, tok[user], body)
		if code != want || !strings.Contains(fmt.Sprint(out), contains) {
			t.Fatalf("%s starts %v: %d %v, want %d with %q", user, body, code, out, want, contains)
		}
		id, _ := out["executionId"].(string)
		return id
	}

	web := start("dev", map[string]any{"file": "web.yaml"}, 201, "web_deploy-")
	start("dev", map[string]any{"file": "payments.yaml"}, 403, "dev may not execute pipeline payments_deploy: no role of the user's (web-developer) grants execute on it")
	start("dev", map[string]any{"yaml": gatedPipeline("web_inline")}, 403, "dev may not create pipeline web_inline")
	start("dev", map[string]any{"file": "pipeline.yaml"}, 403, "dev may not execute environment prod (Production) from stage deploy_prod of pipeline web_delivery")
	pay := start("ops", map[string]any{"file": "payments.yaml"}, 201, "payments_deploy-")
	waitFor(t, ctx, env.starter, web, "gate.gate", status.ApprovalWaiting)
	waitFor(t, ctx, env.starter, pay, "gate.gate", status.ApprovalWaiting)

	// view: trees, logs, lists and pending decisions.
	expect := func(user, method, path, pattern string, body any, want int, contains string) map[string]any {
		t.Helper()
		code, out := c.call(method, path, pattern, tok[user], body)
		if code != want || !strings.Contains(fmt.Sprint(out), contains) {
			t.Errorf("%s %s %s: %d %v, want %d with %q", user, method, path, code, out, want, contains)
		}
		return out
	}
	expect("dev", "GET", execs+"/"+pay, execs+"/{id}", nil, 403, "dev may not view pipeline payments_deploy")
	expect("dev", "GET", execs+"/"+pay+"/logs/build.say", execs+"/{id}/logs/{step}", nil, 403, "may not view")
	if text := getText(t, srv.URL+execs+"/"+web+"/logs/build.say", tok["dev"]); !strings.Contains(text, "built web_deploy") {
		t.Errorf("dev reads web's log: %q", text)
	}
	list := expect("dev", "GET", execs+"?limit=1000", execs, nil, 200, web)
	if strings.Contains(fmt.Sprint(list), "payments_deploy") {
		t.Errorf("dev's list shows payments executions: %v", list)
	}
	expect("dev", "GET", execs+"?pipeline=payments_deploy", execs, nil, 403, "may not view")
	// The pending list follows visibility a moment later.
	for {
		_, devPending := c.call("GET", "/api/v1/pending?limit=1000", "/api/v1/pending", tok["dev"], nil)
		_, alicePending := c.call("GET", "/api/v1/pending?limit=1000", "/api/v1/pending", tok["alice"], nil)
		d, a := fmt.Sprint(devPending), fmt.Sprint(alicePending)
		if strings.Contains(d, web) && strings.Contains(a, web) && strings.Contains(a, pay) {
			if strings.Contains(d, pay) {
				t.Errorf("dev, neither viewer nor approver of payments, sees its approval pending: %s", d)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pending lists never showed the waiting approvals: dev %s; alice %s", d, a)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// abort, and approvals, which follow their own groups and no role.
	expect("dev", "POST", execs+"/"+pay+"/abort", execs+"/{id}/abort", map[string]any{}, 403, "dev may not abort pipeline payments_deploy")
	expect("dev", "POST", execs+"/"+web+"/abort", execs+"/{id}/abort", map[string]any{}, 403, "dev may not abort pipeline web_deploy")
	expect("dev", "POST", execs+"/"+web+"/approve", execs+"/{id}/approve", map[string]any{"path": "gate.gate"}, 403, "release_managers")
	expect("root", "GET", "/api/v1/audit", "/api/v1/audit", nil, 200, "records")
	expect("dev", "GET", "/api/v1/audit", "/api/v1/audit", nil, 403, "dev may not admin")

	// The web UI's pages: the log needs view; a decision page shows to its approvers.
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		Logs: webui.NewStepLogs(env.logs, env.starter), SignIn: webui.UserName(userOf(idFile)), User: userOf(idFile),
		Access:     &access.Gate{IdentityFile: idFile, Starter: env.starter},
		Decisions:  &webui.Decisions{Starter: env.starter, User: userOf(idFile), Access: &access.Gate{IdentityFile: idFile, Starter: env.starter}},
		Executions: env.starter})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	page := func(user, path string, form url.Values) (int, string) {
		jar, _ := cookiejar.New(nil)
		u, _ := url.Parse(ui.URL)
		jar.SetCookies(u, []*http.Cookie{{Name: codec.TokenCookie, Value: tok[user], Path: "/"}})
		hc := &http.Client{Jar: jar}
		var resp *http.Response
		if form != nil {
			resp, err = hc.PostForm(ui.URL+path, form)
		} else {
			resp, err = hc.Get(ui.URL + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []struct {
		user, path string
		form       url.Values
		want       int
		contains   string
	}{
		{"dev", webui.LogsPath + pay + "/build.say?from=0", nil, 403, "dev may not view pipeline payments_deploy"},
		{"dev", webui.LogsPath + web + "/build.say?from=0", nil, 200, "built web_deploy"},
		{"dev", webui.DecidePath + pay + "/gate.gate", nil, 403, "dev may not view"},
		{"alice", webui.DecidePath + pay + "/gate.gate", nil, 200, "ship?"}, // an approver, with no role
		{"dev", webui.DecidePath + web + "/gate.gate", url.Values{"decision": {"APPROVE"}}, 403, "release_managers"},
		// The executions page lists what the viewer may view, filtered as asked.
		{"dev", webui.ExecutionsPath, nil, 200, `data-id="` + web + `"`},
		{"dev", webui.ExecutionsPath + "?pipeline=payments_deploy", nil, 403, "dev may not view pipeline payments_deploy"},
		{"root", webui.ExecutionsPath + "?pipeline=payments_deploy&status=APPROVAL_WAITING&user=ops", nil, 200, `data-id="` + pay + `"`},
		{"root", webui.ExecutionsPath + "?pipeline=payments_deploy&user=dev", nil, 200, `No executions match the filter`},
		// An execution's page: view to see it; its buttons as the roles allow; a forged action
		// refused with the reason.
		{"dev", webui.ExecutionsPath + "/" + pay, nil, 403, "dev may not view pipeline payments_deploy"},
		{"dev", webui.ExecutionsPath + "/" + web, nil, 200, `id="act-rerun"`},
		{"ops", webui.ExecutionsPath + "/" + pay, nil, 200, `id="act-abort"`},
		{"dev", webui.ExecutionsPath + "/" + web + "/abort", url.Values{"reason": {"forged"}}, 403, "dev may not abort pipeline web_deploy"},
	} {
		if code, body := page(p.user, p.path, p.form); code != p.want || !strings.Contains(body, p.contains) {
			t.Errorf("%s %s: %d, want %d with %q:\n%s", p.user, p.path, code, p.want, p.contains, tail(body, 600))
		}
	}
	// A decision whose step cannot be read after it (here: none by that path) still answers
	// with its outcome, not an error page in its place.
	if code, body := page("alice", webui.DecidePath+web+"/gate.nope", url.Values{"decision": {"APPROVE"}}); !strings.Contains(body, `id="refused"`) || !strings.Contains(body, `id="unread"`) {
		t.Errorf("a decision for a step that cannot be read: %d\n%s", code, tail(body, 600))
	}
	if _, body := page("dev", webui.ExecutionsPath, nil); strings.Contains(body, pay) {
		t.Errorf("dev, no viewer of payments_deploy, sees its execution listed:\n%s", tail(body, 600))
	}
	if _, body := page("dev", webui.ExecutionsPath+"/"+web, nil); strings.Contains(body, `id="act-abort"`) {
		t.Errorf("dev, who may not abort web_deploy, has an abort button:\n%s", tail(body, 600))
	}

	// alice approves web; ops aborts payments.
	expect("alice", "POST", execs+"/"+web+"/approve", execs+"/{id}/approve", map[string]any{"path": "gate.gate", "comments": "ok"}, 200, "")
	expect("ops", "POST", execs+"/"+pay+"/abort", execs+"/{id}/abort", map[string]any{"reason": "not today"}, 202, "")
	waitFor(t, ctx, env.starter, web, "gate.gate", status.Succeeded)

	// Triggers act as their service identity: bot may start web_deploy but not
	// payments_deploy, and pay_cron acts as nobody.
	hook := func(trigger string) string {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/custom/"+trigger, strings.NewReader(`{}`))
		req.Header.Set("X-Api-Key", tok["bot"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if out := hook("web_hook"); !strings.Contains(out, "TARGET_EXECUTION_REQUESTED") {
		t.Errorf("bot's web_hook: %s", out)
	}
	if out := hook("pay_hook"); !strings.Contains(out, "TRIGGER_NOT_AUTHORIZED") || !strings.Contains(out, "bot may not execute pipeline payments_deploy") {
		t.Errorf("pay_hook as bot: %s", out)
	}
	warnings := strings.Join(api.AccessWarnings(), "\n")
	if !strings.Contains(warnings, "trigger pay_cron acts as no service identity") || strings.Contains(warnings, "trigger web_hook") || strings.Contains(warnings, "trigger pay_hook") {
		t.Errorf("start warnings: %s", warnings)
	}
	if err := api.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	sc := env.internal.ScheduleClient()
	defer func() {
		_ = sc.GetHandle(context.Background(), starter.SchedulePrefix+"web_cron").Delete(context.Background())
	}()
	if _, err := sc.GetHandle(ctx, starter.SchedulePrefix+"web_cron").Describe(ctx); err != nil {
		t.Errorf("web_cron, whose identity may start web_deploy, has no schedule: %v", err)
	}
	if _, err := sc.GetHandle(ctx, starter.SchedulePrefix+"pay_cron").Describe(ctx); err == nil {
		t.Error("pay_cron, which acts as no identity, was scheduled")
	}

	// The audit trail, read back from histories and the kept refusals. Visibility lists the
	// executions a moment after they start: the triggered one may need another read.
	wants := []string{
		"dev start " + web + "  ok",
		"ops start " + pay + "  ok",
		"dev start   refused",                    // payments_deploy, inline YAML, prod
		"dev view " + pay + "  refused",          // tree and log
		"dev view " + pay + " build.say refused", // the log page
		"dev abort " + pay + "  refused",
		"dev approve " + web + " gate.gate refused",
		"alice approve " + web + " gate.gate ok",
		"ops abort " + pay + "  ok",
		"bot start   refused",
		"trigger pay_cron start   refused",
		"dev admin   refused",
		"bot start web_deploy-", // the triggered start
	}
	for {
		var trail struct {
			Records []workflows.AuditRecord `json:"records"`
		}
		getJSON(t, srv.URL+"/api/v1/audit?since="+url.QueryEscape(since.UTC().Format(time.RFC3339)), tok["root"], &trail)
		var lines []string
		for _, r := range trail.Records {
			lines = append(lines, strings.Join([]string{r.User, r.Action, r.Execution, r.Path, r.Outcome}, " "))
		}
		all := strings.Join(lines, "\n")
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(all, w) })
		if len(missing) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the audit trail lacks %q:\n%s", missing, all)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A revoked role applies to the next request: the identity file is read on each.
	d, err := identity.Load(idFile)
	if err != nil {
		t.Fatal(err)
	}
	d.Revoke("web-devs", "web-developer")
	if err := d.Save(idFile); err != nil {
		t.Fatal(err)
	}
	expect("dev", "GET", execs+"/"+web, execs+"/{id}", nil, 403, "none of the user's groups (web-devs) holds a role")
}

// Without roles every token may do everything, as before roles, and the server says so.
func TestWithoutRolesEveryTokenMayDoEverything(t *testing.T) {
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	d := &identity.Directory{}
	tok, _ := d.AddUser("dev", "", []string{"developers"})
	if err := d.Save(idFile); err != nil {
		t.Fatal(err)
	}
	api := server.New(server.Options{Starter: env.starter, IdentityFile: idFile})
	if w := strings.Join(api.AccessWarnings(), " "); !strings.Contains(w, "every token may start any pipeline, run inline YAML") {
		t.Errorf("no warning without roles: %q", w)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	code, out := c.call("POST", "/api/v1/executions", "/api/v1/executions", tok, map[string]any{"yaml": gatedPipeline("anything_goes")})
	if code != 201 {
		t.Fatalf("inline start without roles: %d %v", code, out)
	}
	id := out["executionId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, ctx, env.starter, id, "gate.gate", status.ApprovalWaiting)
	if code, out := c.call("POST", "/api/v1/executions/"+id+"/abort", "/api/v1/executions/{id}/abort", tok, map[string]any{}); code != 202 {
		t.Errorf("abort without roles: %d %v", code, out)
	}
	if code, out := c.call("GET", "/api/v1/audit", "/api/v1/audit", tok, nil); code != 200 {
		t.Errorf("audit without roles: %d %v", code, out)
	}
}

func userOf(idFile string) func(string) (*identity.User, error) {
	return func(token string) (*identity.User, error) {
		d, err := identity.Load(idFile)
		if err != nil {
			return nil, err
		}
		return d.Authenticate(token)
	}
}

func getText(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func getJSON(t *testing.T, url, token string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(getText(t, url, token)), into); err != nil {
		t.Fatal(err)
	}
}

// The same rules on the production topology (PostgreSQL, two workers, the API tier apart),
// set up with the CLI: gantry role add and gantry user add --role; refusals are kept by the
// internal namespace's workers and read back by gantry audit through the API.
func TestTopologyRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and four gantry processes")
	}
	topo, bin := startTopology(t)
	data := filepath.Join(topo.Dir, "server")
	gantry := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--data-dir", data)...).CombinedOutput()
		if err != nil {
			t.Fatalf("gantry %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	token := func(out string) string { return regexp.MustCompile(`gty_[A-Za-z0-9_-]+`).FindString(out) }
	gantry("role", "add", "web-developer", "--allow", "view,execute,create", "--pipeline", "web_*")
	gantry("role", "add", "administrator", "--allow", "admin")
	dev := token(gantry("user", "add", "dev", "--role", "web-developer"))
	root := token(gantry("user", "add", "root", "--role", "administrator"))
	if list := gantry("role", "list"); !strings.Contains(list, "web-developer") || !strings.Contains(list, "view,execute,create") {
		t.Errorf("gantry role list:\n%s", list)
	}

	var started struct {
		ExecutionID string `json:"executionId"`
	}
	apiCall(t, topo.API, dev, "POST", "/api/v1/executions", map[string]any{"yaml": gatedPipeline("web_topology")}, http.StatusCreated, &started)
	if err := call(topo.API, dev, "POST", "/api/v1/executions", map[string]any{"yaml": gatedPipeline("payments_topology")}, http.StatusForbidden, nil); err != nil {
		t.Error(err)
	}
	if err := call(topo.API, dev, "POST", "/api/v1/executions/"+started.ExecutionID+"/abort", map[string]any{}, http.StatusForbidden, nil); err != nil {
		t.Error(err)
	}
	// Refusals are read back at once; the started execution once visibility lists it.
	wants := []string{"dev start " + started.ExecutionID + " ok", "dev start  refused inline YAML; dev may not create pipeline payments_topology", "dev abort " + started.ExecutionID + " refused"}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var trail struct {
			Records []workflows.AuditRecord `json:"records"`
		}
		apiCall(t, topo.API, root, "GET", "/api/v1/audit", nil, http.StatusOK, &trail)
		var lines []string
		for _, r := range trail.Records {
			lines = append(lines, strings.Join([]string{r.User, r.Action, r.Execution, r.Outcome, r.Detail}, " "))
		}
		all := strings.Join(lines, "\n")
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(all, w) })
		if len(missing) == 0 {
			break
		}
		if !strings.Contains(all, "refused") || time.Now().After(deadline) {
			t.Fatalf("the audit trail lacks %q:\n%s", missing, all)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The CLI through the API, as the token's user.
	remote := func(tok string, args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--server", topo.API, "--token", tok)...).CombinedOutput()
		return string(out), err
	}
	if out, err := remote(dev, "abort", started.ExecutionID); err == nil || !strings.Contains(out, "dev may not abort pipeline web_topology") {
		t.Errorf("gantry abort --server as dev: %v\n%s", err, out)
	}
	if out, err := remote(dev, "list"); err != nil || !strings.Contains(out, started.ExecutionID) {
		t.Errorf("gantry list --server as dev: %v\n%s", err, out)
	}
	if out, err := remote(dev, "status", started.ExecutionID); err != nil || !strings.Contains(out, "APPROVAL_WAITING") {
		t.Errorf("gantry status --server as dev: %v\n%s", err, out)
	}
	if out, err := remote(dev, "audit"); err == nil || !strings.Contains(out, "dev may not admin") {
		t.Errorf("gantry audit --server as dev: %v\n%s", err, out)
	}
	// The trail lives in Temporal: the API tier killed and started again reads it all back.
	if err := topo.StopComponent("server", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := topo.StartComponent("server"); err != nil {
		t.Fatal(err)
	}
	out, err := remote(root, "audit", "-o", "json")
	var after []workflows.AuditRecord
	if err != nil || json.Unmarshal([]byte(out), &after) != nil {
		t.Fatalf("gantry audit --server as root after the server's restart: %v\n%s", err, out)
	}
	var kept []string
	for _, r := range after {
		kept = append(kept, r.User+" "+r.Action+" "+r.Outcome)
	}
	for _, want := range []string{"dev start ok", "dev start refused", "dev abort refused"} {
		if !slices.Contains(kept, want) {
			t.Errorf("after the server's restart the audit trail lacks %q: %v", want, kept)
		}
	}
	// A revoked role applies to the next request.
	gantry("role", "revoke", "web-developer", "--group", "web-developer")
	if err := call(topo.API, dev, "GET", "/api/v1/executions/"+started.ExecutionID, nil, http.StatusForbidden, nil); err != nil {
		t.Error(err)
	}
}
