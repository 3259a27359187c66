package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// A step's log one click from the live tree: the stage's User Metadata links the running
// step's log; following it without a token leads to the sign-in page, and after signing in
// to the log page, where new lines arrive while the step runs and the failure shows when it
// fails. The log's text is refused without a token.
func TestWebUIStepLogPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := &identity.Directory{}
	dev, err := dir.AddUser("dev", "", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		Logs:   webui.NewStepLogs(env.logs, env.starter),
		SignIn: webui.UserName(dir.Authenticate)})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	// The step ticks until the test has seen its log page follow it (the gate file), so
	// that a slow browser on a loaded machine cannot find it ended already.
	gate := filepath.Join(t.TempDir(), "gate")
	p := compile(t, "ui_logs.yaml", []byte(`pipeline:
  name: ui_logs
  identifier: ui_logs
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: compile
                  identifier: compile
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          echo "first line"
                          i=0
                          while [ ! -e `+gate+` ] && [ $i -lt 600 ]; do sleep 0.5; i=$((i+1)); echo "tick $i"; done
                          echo "the compiler gave up" >&2
                          exit 3
`), load.Options{})
	// A regular activity: a fast-path step holds its stage's workflow task, and the UI reads the
	// live tree between tasks.
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{NoFastPath: true})
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, ctx, exec.ID, "build.compile", "first line")
	b := browser(t, ctx)

	// The live tree links the running step's log.
	metadata(t, b, ui.ExecutionURL("default", exec.ID+"/build"), "compile (ShellScript) · RUNNING")
	href := linkTo(t, b, "/gantry/logs/")
	if !strings.HasSuffix(href, "/gantry/logs/"+exec.ID+"/build.compile") {
		t.Fatalf("log link %q", href)
	}
	link := href
	if strings.HasPrefix(link, "/") {
		link = ui.URL + link
	}
	// No token: the text is refused, the page sends the browser to sign in.
	resp, err := http.Get(link + "?from=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the log's text without a token: %d", resp.StatusCode)
	}
	pageText(t, b, link, "Sign in to Gantry")
	if err := chromedp.Run(b, chromedp.SendKeys("#token", dev, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	// Back on the log page, which follows the step: lines arrive while it runs.
	waitText(t, b, "first line", "signed in as dev", "RUNNING")
	text := waitText(t, b, "tick 2\n")
	seen := strings.Count(text, "tick ")
	waitText(t, b, fmt.Sprintf("tick %d\n", seen+2)) // still growing
	screenshot(t, b, "log-running")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "the compiler gave up", "FAILED", "exited with code 3")
	screenshot(t, b, "log-failed")
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Failed {
		t.Fatalf("run: %v %v", res, err)
	}
}

// linkTo waits until the page, or markdown it renders in a frame, has a link whose href holds
// part, and returns the href (and the link's target, after a space, when it has one).
func linkTo(t *testing.T, ctx context.Context, part string) string {
	t.Helper()
	js := `(() => {
  const find = d => { const a = d && d.querySelector('a[href*="` + part + `"]'); return a ? a.getAttribute("href") : "" };
  let h = find(document);
  for (const f of document.querySelectorAll("iframe")) {
    if (h) break;
    try { h = find(f.contentDocument) } catch (e) {}
    if (!h && f.srcdoc) h = find(new DOMParser().parseFromString(f.srcdoc, "text/html"));
  }
  return h;
})()`
	deadline := time.Now().Add(45 * time.Second)
	for {
		var href string
		_ = chromedp.Run(ctx, chromedp.Evaluate(js, &href))
		if href != "" {
			return href
		}
		if time.Now().After(deadline) {
			var text string
			_ = chromedp.Run(ctx, chromedp.Evaluate(visibleText, &text))
			t.Fatalf("no link to %s on the page; it shows:\n%s", part, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Decisions in the page: a waiting approval's live tree links its decision page, where a user
// outside the approver groups is refused with the reason, and two release managers approve
// (an approver input given), as the API would have them; the run goes on.
func TestWebUIApproveInThePage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := &identity.Directory{}
	alice, _ := dir.AddUser("alice", "alice@example.com", []string{"release_managers"})
	bob, _ := dir.AddUser("bob", "bob@example.com", []string{"release_managers"})
	dev, _ := dir.AddUser("dev", "", []string{"developers"})
	user := func(token string) (*identity.User, error) { return dir.Authenticate(token) }
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		Decisions: &webui.Decisions{Starter: env.starter, User: user},
		SignIn:    webui.UserName(user)})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	waiting := startAndWait(t, ctx, approvalPipeline("ui_decide", "", ""))
	b := browser(t, ctx)
	metadata(t, b, ui.ExecutionURL("default", waiting+"/gate"), "APPROVAL_WAITING", "decide")
	href := linkTo(t, b, "/gantry/decide/")
	if !strings.HasSuffix(href, "/gantry/decide/"+waiting+"/gate.gate") {
		t.Fatalf("decision link %q", href)
	}
	page := ui.URL + strings.TrimPrefix(href, ui.URL)
	signInAs := func(token string) {
		t.Helper()
		pageText(t, b, ui.URL+webui.SignInPath+"?next="+url.QueryEscape(strings.TrimPrefix(page, ui.URL)), "Sign in to Gantry")
		if err := chromedp.Run(b, chromedp.SendKeys("#token", token, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
			t.Fatalf("sign in: %v", err)
		}
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Run(b, chromedp.Click(sel, chromedp.ByQuery)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
	// Without a token the page leads to the sign-in page.
	pageText(t, b, page, "Sign in to Gantry")
	signInAs(dev)
	waitText(t, b, "ship", "0 of 2 approvals", "signed in as dev")
	click("#approve")
	text := waitText(t, b, "signed in as dev", "0 of 2 approvals")
	var refused string
	_ = chromedp.Run(b, chromedp.Text("#refused", &refused, chromedp.ByQuery))
	if refused == "" {
		t.Fatalf("a developer's vote was not refused:\n%s", text)
	}
	screenshot(t, b, "decide-refused")
	signInAs(alice)
	waitText(t, b, "signed in as alice", "0 of 2 approvals")
	if err := chromedp.Run(b, chromedp.SendKeys("#input-ticket", "CHG-7", chromedp.ByQuery), chromedp.SendKeys("#comments", "CAB ok", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	click("#approve")
	waitText(t, b, "1 of 2 approvals")
	screenshot(t, b, "decide-approved")
	signInAs(bob)
	waitText(t, b, "signed in as bob", "1 of 2 approvals")
	click("#approve")
	waitText(t, b, "signed in as bob")
	res, err := env.starter.Result(ctx, waiting)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("run: %v %v", res, err)
	}
	if out := res.Tree.Find("after.use").Outputs["outputVariables"].(map[string]any); out["t"] != "CHG-7" || out["a"] != "bob" {
		t.Errorf("the approval's outputs: %v", out)
	}
	// Decided: the page says who voted, how, when, with the comment and inputs.
	decided := pageText(t, b, page, "Decided", "the step is")
	for _, want := range []string{"alice", "approved", "CAB ok", "ticket = CHG-7", "bob", "just now"} {
		if !strings.Contains(decided, want) {
			t.Errorf("the decided page lacks %q:\n%s", want, decided)
		}
	}
	screenshot(t, b, "decide-decided")
	t.Logf("refused: %s", refused)
}
