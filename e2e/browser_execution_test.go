package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

const graphPipeline = `pipeline:
  name: ui_graph
  identifier: ui_graph
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
                  spec: {shell: Bash, source: {type: Inline, spec: {script: "i=0; while [ ! -e GATE ] && [ $i -lt 600 ]; do i=$((i+1)); echo line $i; sleep 0.5; done"}}}
    - parallel:
        - stage:
            name: test a
            identifier: test_a
            type: Custom
            spec:
              execution:
                steps:
                  - stepGroup:
                      name: matrix
                      identifier: matrix
                      strategy: {matrix: {os: [linux, mac, win]}}
                      steps:
                        - step: {type: ShellScript, name: t, identifier: t, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo <+matrix.os>"}}}}
        - stage:
            name: test b
            identifier: test_b
            type: Custom
            spec:
              execution:
                steps:
                  - step: {type: ShellScript, name: lint, identifier: lint, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo lint"}}}}
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: StageRollback}}}]
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: ship, identifier: ship, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo shipping; exit 4"}}}}
            rollbackSteps:
              - step: {type: ShellScript, name: undo, identifier: undo, spec: {shell: Bash, source: {type: Inline, spec: {script: "echo undo"}}}}
`

// graphShape is the page's graph as the test checks it: per column, its stage boxes, each
// with its node count, matrix iterations and rollback boxes.
const graphShape = `JSON.stringify([...document.querySelectorAll("#flow .col")].map(c =>
  [...c.children].map(b => ({stage: b.dataset.path, nodes: b.querySelectorAll(".node").length,
    iterations: b.querySelectorAll(".kind-strategy > .box").length,
    rollback: b.querySelectorAll(".kind-rollback").length}))))`

// The execution page draws a run: stages in columns left to right, the parallel ones stacked
// in one, a matrix group with its iterations, a stage's rollback apart; a running step's log
// grows beneath the graph when it is selected; the failed step shows its failure. Not signed
// in, the page leads to the sign-in and back.
// devUI serves the Web UI with its pages of the test's executions to a user dev (of group
// developers, without roles: everything is allowed); it returns dev's token.
func devUI(t *testing.T, ctx context.Context) (*webui.Server, string) {
	t.Helper()
	dir := &identity.Directory{}
	dev, err := dir.AddUser("dev", "", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	user := func(token string) (*identity.User, error) { return dir.Authenticate(token) }
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		Logs: webui.NewStepLogs(env.logs, env.starter), SignIn: webui.UserName(user), User: user, Executions: env.starter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ui.Stop)
	return ui, dev
}

func TestWebUIExecutionGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ui, dev := devUI(t, ctx)
	// build.compile prints lines until the test has seen them grow on the page (the gate
	// file): a slow browser on a loaded machine cannot find it ended already.
	gate := filepath.Join(t.TempDir(), "gate")
	p := compile(t, "ui_graph.yaml", []byte(strings.Replace(graphPipeline, "GATE", gate, 1)), load.Options{})
	// Regular activities: a fast-path step is in the tree only once it ended.
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{NoFastPath: true})
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, ctx, exec.ID, "build.compile", "line 1")
	b := browser(t, ctx)
	page := ui.URL + webui.ExecutionsPath + "/" + exec.ID + "#build.compile"
	pageText(t, b, page, "Sign in to Gantry")
	if err := chromedp.Run(b, chromedp.SendKeys("#token", dev, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	// Back on the page, build.compile selected: its log grows while it runs.
	text := waitText(t, b, "ui_graph", exec.ID, "compile", "RUNNING", "line 1\n")
	waitText(t, b, fmt.Sprintf("line %d\n", strings.Count(text, "line ")+2)) // still growing
	screenshot(t, b, "execution-running")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// The run ends: every stage in its column, the failure on the failed step.
	waitText(t, b, "✗ FAILED", "ship", "undo", "script exited with code 4")
	var shape string
	if err := chromedp.Run(b, chromedp.Evaluate(graphShape, &shape)); err != nil {
		t.Fatal(err)
	}
	want := `[[{"stage":"build","nodes":2,"iterations":0,"rollback":0}],` +
		`[{"stage":"test_a","nodes":8,"iterations":3,"rollback":0},{"stage":"test_b","nodes":2,"iterations":0,"rollback":0}],` +
		`[{"stage":"deploy","nodes":4,"iterations":0,"rollback":1}]]`
	if shape != want {
		t.Errorf("graph %s\nwant  %s", shape, want)
	}
	if err := chromedp.Run(b, chromedp.Click(`.node[data-path="deploy.ship"]`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "attempt 1", "shipping", "Inputs, as planned", "echo shipping; exit 4") // its log and spec, beneath
	screenshot(t, b, "execution-failed")
	if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Failed {
		t.Fatalf("run: %v %v", res, err)
	}

	// Retry from the failed stage: the page of the new execution opens, build and tests
	// carried over.
	if err := chromedp.Run(b, chromedp.SetValue("#retry-stage", "deploy", chromedp.ByQuery), chromedp.Click("#act-retry", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "ui_graph-2", "deploy")
	retried, err := env.starter.Result(ctx, "ui_graph-2")
	if err != nil || retried.Status != status.Failed || retried.Tree.Find("build.compile").Status != status.Succeeded {
		t.Fatalf("the retry: %v %v", retried, err)
	}
}

// A waiting approval is a form beneath the graph when its step is selected: an approver
// approves there, and the node turns green.
func TestWebUIApproveFromTheGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := &identity.Directory{}
	alice, _ := dir.AddUser("alice", "alice@example.com", []string{"release_managers"})
	user := func(token string) (*identity.User, error) { return dir.Authenticate(token) }
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address, SignIn: webui.UserName(user), User: user,
		Logs: webui.NewStepLogs(env.logs, env.starter), Executions: env.starter, Decisions: &webui.Decisions{Starter: env.starter, User: user}})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	waiting := startAndWait(t, ctx, strings.Replace(approvalPipeline("ui_graph_decide", "", ""), "minimumCount: 2", "minimumCount: 1", 1))
	b := browser(t, ctx)
	pageText(t, b, ui.URL+webui.ExecutionsPath+"/"+waiting+"#gate.gate", "Sign in to Gantry")
	if err := chromedp.Run(b, chromedp.SendKeys("#token", alice, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	waitText(t, b, "APPROVAL_WAITING", "signed in as alice")
	// What waits for a person is said above the graph.
	var banner string
	if err := chromedp.Run(b, chromedp.Text("#waiting", &banner, chromedp.ByQuery)); err != nil || !strings.Contains(banner, "(gate.gate) waits for an approval") {
		t.Errorf("the waiting banner: %q (%v)", banner, err)
	}
	// The form is the decision page's own, in a frame of the same origin.
	inFrame := func(js string) string {
		var out string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			_ = chromedp.Run(b, chromedp.Evaluate(`(() => { const d = document.getElementById("decide"); if (!d || !d.contentDocument || !d.contentDocument.getElementById("approve")) return ""; `+js+` })()`, &out))
			if out != "" {
				return out
			}
		}
		t.Fatal("the decision form never showed beneath the graph")
		return ""
	}
	inFrame(`d.contentDocument.getElementById("input-ticket").value = "CHG-9"; return "ok"`)
	screenshot(t, b, "execution-approval")
	inFrame(`d.contentDocument.getElementById("approve").click(); return "ok"`)
	waitText(t, b, "✓ SUCCEEDED", "use")
	// The approver still sees the outcome of the click once the graph has moved on.
	var outcome string
	for deadline := time.Now().Add(30 * time.Second); outcome == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_ = chromedp.Run(b, chromedp.Evaluate(`(() => { const d = document.getElementById("decide"); const o = d && d.contentDocument && d.contentDocument.getElementById("result"); return o ? o.textContent : ""; })()`, &outcome))
	}
	if !strings.Contains(outcome, "APPROVE recorded") {
		t.Errorf("the decision's outcome beneath the graph after the step ended: %q", outcome)
	}
	var class string
	if err := chromedp.Run(b, chromedp.Evaluate(`document.querySelector('.node[data-path="gate.gate"]').className`, &class)); err != nil || !strings.Contains(class, "s-SUCCEEDED") {
		t.Errorf("the approval's node after the approval: %q %v", class, err)
	}
	// Its outputs are a table: the vote in words, its time in UTC, the JSON behind a toggle.
	var vote string
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(vote, "approved") && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_ = chromedp.Run(b, chromedp.Evaluate(`(() => { const t = document.querySelector("#info .outputs table.votes"); return t ? t.innerText : ""; })()`, &vote))
	}
	if !strings.Contains(vote, "alice") || !strings.Contains(vote, "approved") || !strings.Contains(vote, " UTC") || !strings.Contains(vote, "ticket = CHG-9") {
		t.Errorf("the approval's votes in its outputs: %q", vote)
	}
	res, err := env.starter.Result(ctx, waiting)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("run: %v %v", res, err)
	}
	if out := res.Tree.Find("after.use").Outputs["outputVariables"].(map[string]any); out["t"] != "CHG-9" {
		t.Errorf("the approver's input: %v", out)
	}
}

// treePage opens, in a browser signed in as a developer, the run page of a UI whose every
// execution is tree (the page of execution, with its #selection).
func treePage(t *testing.T, ctx context.Context, tree *workflows.Node, execution string) context.Context {
	t.Helper()
	dir := &identity.Directory{}
	dev, _ := dir.AddUser("dev", "", []string{"developers"})
	user := func(token string) (*identity.User, error) { return dir.Authenticate(token) }
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address, SignIn: webui.UserName(user), User: user,
		Executions: bigTree{Starter: env.starter, tree: tree}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ui.Stop)
	b := browser(t, ctx)
	pageText(t, b, ui.URL+webui.ExecutionsPath+"/"+execution, "Sign in to Gantry")
	if err := chromedp.Run(b, chromedp.SendKeys("#token", dev, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return b
}

// bigTree serves one tree as every execution's.
type bigTree struct {
	*starter.Starter
	tree *workflows.Node
}

func (b bigTree) Tree(context.Context, string) (*workflows.Node, error) { return b.tree, nil }

// A run of 5,000 loop iterations draws at once: the loop's box counts them, failed ones
// first, and shows twenty until asked for the rest.
func TestWebUIExecutionGraphOf5000(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	at := time.Now().Add(-time.Minute)
	loop := &workflows.Node{Path: "big.loop", ID: "loop", Name: "loop", Kind: "strategy", Status: status.Failed, StartedAt: &at, EndedAt: &at}
	for i := 0; i < 5000; i++ {
		st := status.Succeeded
		if i == 4321 {
			st = status.Failed
		}
		loop.Children = append(loop.Children, &workflows.Node{Path: fmt.Sprintf("big.loop_%d", i), ID: fmt.Sprintf("loop_%d", i), Kind: "step", Status: st, StartedAt: &at, EndedAt: &at})
	}
	tree := &workflows.Node{Kind: "pipeline", Name: "big", Status: status.Failed, StartedAt: &at, EndedAt: &at, Children: []*workflows.Node{
		{Path: "big", ID: "big", Name: "big", Kind: "stage", Status: status.Failed, StartedAt: &at, EndedAt: &at, Children: []*workflows.Node{loop}}}}
	t0 := time.Now()
	b := treePage(t, ctx, tree, "big-1")
	text := waitText(t, b, "5000 iterations, 1 failed", "… 4980 more")
	t.Logf("opened, signed in and drawn in %s", time.Since(t0).Round(time.Millisecond))
	if i, j := strings.Index(text, "loop_4321"), strings.Index(text, "loop_0"); i < 0 || j < 0 || i > j {
		t.Errorf("the failed iteration does not come first:\n%.600s", text)
	}
	if err := chromedp.Run(b, chromedp.Click(".node.more", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	waitText(t, b, "loop_4999")
}

// A step queued behind a Queue key says so in the graph, with an hourglass, the key, its
// holder and the place; selected, its details link the holder's run.
func TestWebUIQueuedStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	at := time.Now().Add(-time.Minute)
	step := &workflows.Node{Path: "db.migrate", ID: "migrate", Name: "migrate", Kind: "step", Status: status.Queued, StartedAt: &at,
		Resource: &workflows.ResourceView{Kind: workflows.LockQueue, Key: "orders-db", Holder: "other-7 (db.migrate)", Ahead: 1}}
	tree := &workflows.Node{Kind: "pipeline", Name: "db", Status: status.Running, StartedAt: &at, Children: []*workflows.Node{
		{Path: "db", ID: "db", Name: "db", Kind: "stage", Status: status.Running, StartedAt: &at, Children: []*workflows.Node{step}}}}
	b := treePage(t, ctx, tree, "db-1#db.migrate")
	waitText(t, b, "⧗", "waits for queue key orders-db, held by other-7 (db.migrate), 1 ahead", "the holder's run",
		"Waiting: migrate (db.migrate) waits for queue key orders-db")
	var href string
	if err := chromedp.Run(b, chromedp.Evaluate(`(() => { const a = [...document.querySelectorAll("#info a")].find(a => a.textContent === "the holder's run"); return a ? a.getAttribute("href") : ""; })()`, &href)); err != nil || href != webui.ExecutionsPath+"/other-7" {
		t.Errorf("the holder's link %q (%v)", href, err)
	}
}
