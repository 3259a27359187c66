package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
)

// chromium is Debian's Chromium (hack/browser/install-chromium.sh installs it for make test).
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GANTRY_BROWSER_OPTIONAL") != "" {
		t.Skip("no Chromium; run hack/browser/install-chromium.sh")
	}
	t.Fatal("no Chromium: run hack/browser/install-chromium.sh (make test does)")
	return ""
}

// browser is a headless Chromium tab for the test.
func browser(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(1440, 900), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancel)
	bctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	if err := chromedp.Run(bctx, network.Enable()); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	// The calls of the page that failed on the server, for the log of a test that fails on the
	// UI's error page; none is logged once the test ends.
	var mu sync.Mutex
	ended := false
	chromedp.ListenTarget(bctx, func(ev any) {
		if r, ok := ev.(*network.EventResponseReceived); ok && r.Response.Status >= 500 {
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				t.Logf("the page's call %s answered %d", r.Response.URL, r.Response.Status)
			}
		}
	})
	t.Cleanup(func() { mu.Lock(); ended = true; mu.Unlock() })
	return bctx
}

// pageText opens a page and waits until its visible text has every string of want, returning
// the text; it fails with the last text seen.
func pageText(t *testing.T, ctx context.Context, pageURL string, want ...string) string {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("open %s: %v", pageURL, err)
	}
	return waitText(t, ctx, want...)
}

// visibleText is the page's text with that of its frames: the UI renders markdown (summaries,
// details) in sandboxed iframes, read here from their srcdoc.
const visibleText = `(() => {
  let t = document.body ? document.body.innerText : "";
  for (const f of document.querySelectorAll("iframe")) {
    try { t += "\n" + f.contentDocument.body.innerText; continue } catch (e) {}
    if (f.srcdoc) t += "\n" + new DOMParser().parseFromString(f.srcdoc, "text/html").body.textContent;
  }
  return t;
})()`

func waitText(t *testing.T, ctx context.Context, want ...string) string {
	t.Helper()
	// The UI's bundle is large: on a loaded 2-core machine (make test runs two e2e shards
	// beside the other packages) Chromium has taken most of a minute to draw a first page.
	start := time.Now()
	deadline, reloaded := start.Add(90*time.Second), false
	var text string
	for {
		err := chromedp.Run(ctx, chromedp.Evaluate(visibleText, &text))
		if strings.TrimSpace(text) == "" && !reloaded && time.Since(start) > 45*time.Second {
			// Nothing drawn yet: reload, as a person looking at a blank page would.
			t.Logf("the page is still blank after %s (%v); reloading", time.Since(start).Round(time.Second), err)
			_ = chromedp.Run(ctx, chromedp.Reload())
			reloaded = true
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed %q (last read: %v); it shows:\n%s", missing, err, text)
		}
		if strings.Contains(text, "Internal Error") && strings.Contains(text, "Try a refresh") {
			// The Temporal UI shows this page, and stays on it, when one of its API calls failed
			// (seen once in a loaded make test, a list call answered 500); a person refreshes.
			t.Logf("the UI showed its error page; reloading:\n%s", text)
			_ = chromedp.Run(ctx, chromedp.Reload())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rowText is the text of the list row that names id.
func rowText(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	var row string
	js := fmt.Sprintf(`(() => { for (const r of document.querySelectorAll('tr, [role=row]')) { if (r.innerText.includes(%q)) return r.innerText } return "" })()`, id)
	deadline := time.Now().Add(30 * time.Second)
	for row == "" && time.Now().Before(deadline) {
		_ = chromedp.Run(ctx, chromedp.Evaluate(js, &row))
		if row == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return row
}

// screenshot saves the page as a test artifact (go test -artifacts keeps them).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("screenshot %s", path)
}

// metadata opens a workflow's User Metadata tab (summary, details and current details) and
// waits for want.
func metadata(t *testing.T, ctx context.Context, pageURL string, want ...string) string {
	t.Helper()
	pageText(t, ctx, pageURL, "User Metadata")
	if err := chromedp.Run(ctx, chromedp.Click("#user-metadata-tab", chromedp.ByQuery)); err != nil {
		t.Fatalf("open the User Metadata tab of %s: %v", pageURL, err)
	}
	return waitText(t, ctx, want...)
}

func listURL(ui *webui.Server, query string) string {
	return ui.URL + "/namespaces/default/workflows?query=" + url.QueryEscape(query)
}

// The Temporal Web UI gantry serves, looked at in a real browser: the list tells failed from
// succeeded pipelines and holds no internal workflows, and a waiting approval's page shows the
// summary and the live tree with the command to run.
func TestWebUIInABrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	failed, _ := runPlan(t, env.starter, compile(t, "ui_failed.yaml", []byte(strings.ReplaceAll(outcomeFailedPipeline, "outcome_failed", "ui_failed")), load.Options{}))
	ok, _ := runPlan(t, env.starter, compile(t, "ui_ok.yaml", []byte(strings.NewReplacer("outcome_failed", "ui_ok", "exit 2", "exit 0").Replace(outcomeFailedPipeline)), load.Options{}))
	waiting := startAndWait(t, ctx, approvalPipeline("ui_gate", "", ""))
	defer env.starter.Abort(context.Background(), waiting, "test", "done")
	b := browser(t, ctx)

	pageText(t, b, listURL(ui, fmt.Sprintf("WorkflowId = '%s' OR WorkflowId = '%s'", failed.ID, ok.ID)), failed.ID, ok.ID)
	if row := rowText(t, b, failed.ID); !strings.Contains(strings.ToLower(row), "failed") {
		t.Errorf("the failed pipeline's row: %q", row)
	}
	if row := rowText(t, b, ok.ID); !strings.Contains(strings.ToLower(row), "completed") {
		t.Errorf("the succeeded pipeline's row: %q", row)
	}
	screenshot(t, b, "list")

	// The default list: pipeline runs and their stages, nothing of Gantry's own.
	text := pageText(t, b, ui.URL+"/namespaces/default/workflows", failed.ID)
	if strings.Contains(text, "gantry-sequence-") || strings.Contains(text, "gantry.Sequence") {
		t.Errorf("the default list shows sequence workflows:\n%s", text)
	}
	time.Sleep(3 * time.Second)
	screenshot(t, b, "default-list")

	// The failed pipeline's page names the failed step.
	pageText(t, b, ui.ExecutionURL("default", failed.ID), "build.compile (ShellScript) FAILED")
	screenshot(t, b, "failed")

	// A waiting approval: the stage's page shows its summary and the live tree with the command.
	metadata(t, b, ui.ExecutionURL("default", waiting+"/gate"), "Stage gate (Approval)", "APPROVAL_WAITING", "gantry approve "+waiting)
	screenshot(t, b, "approval")
	metadata(t, b, ui.ExecutionURL("default", waiting), "Pipeline", "APPROVAL_WAITING")
	screenshot(t, b, "pipeline")
}

// With the payload codec, the UI shows payloads in plain text only to a user who signed in
// with a token of the identity file, and in a group allowed to decrypt.
func TestWebUIDecodesAfterSignIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Setenv(secrets.EnvName("enc_password"), "hunter2-browser-run")
	c, encrypted := encryptedEngine(t, "gantry-browser-encrypted")
	exec, res := runPlan(t, encrypted, compile(t, "enc.yaml", []byte(encryptedPipeline("ui_encrypted")), load.Options{}))
	if res.Status != status.Succeeded {
		t.Fatalf("encrypted run: %s", res.Status)
	}

	dir := &identity.Directory{}
	auditor, err := dir.AddUser("ann", "ann@example.com", []string{"auditors"})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := dir.AddUser("dev", "dev@example.com", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		Codec:  c.Handler(codec.ServerOptions{User: dir.Authenticate, Groups: []string{"auditors"}}),
		SignIn: webui.UserName(dir.Authenticate)})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	b := browser(t, ctx)
	const plain = "pipeline-var-5e2b"           // the pipeline variable, in the workflow's input
	page := ui.ExecutionURL("default", exec.ID) // its Input section shows the plan, variables included
	signIn := func(token string) {
		t.Helper()
		sctx, cancel := context.WithTimeout(b, 30*time.Second)
		defer cancel()
		if err := chromedp.Run(sctx, chromedp.Navigate(ui.URL+webui.SignInPath)); err != nil {
			t.Fatalf("open the sign-in page: %v", err)
		}
		if err := chromedp.Run(sctx, chromedp.SendKeys("#token", token, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery)); err != nil {
			t.Fatalf("sign in: %v", err)
		}
	}
	// Not signed in: ciphertext only.
	text := pageText(t, b, page, "Input", "gantry.Pipeline")
	time.Sleep(2 * time.Second) // give a decode that should not happen its chance
	_ = chromedp.Run(b, chromedp.Evaluate(visibleText, &text))
	if strings.Contains(text, plain) {
		t.Errorf("the history shows plain text before sign-in")
	}
	screenshot(t, b, "encrypted")
	// Signed in, but not in a group allowed to decrypt.
	signIn(dev)
	waitText(t, b, "Signed in as dev")
	text = pageText(t, b, page, "Input", "gantry.Pipeline")
	time.Sleep(2 * time.Second)
	_ = chromedp.Run(b, chromedp.Evaluate(visibleText, &text))
	if strings.Contains(text, plain) {
		t.Errorf("the history shows plain text to a user outside the allowed groups")
	}
	// An auditor sees the plain text.
	signIn(auditor)
	waitText(t, b, "Signed in as ann")
	pageText(t, b, page, plain)
	screenshot(t, b, "decoded")
	// A wrong token is refused on the sign-in page.
	signIn("not-a-token")
	waitText(t, b, "not valid")
}
