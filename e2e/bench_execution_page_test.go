package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// pageStagesPipeline is stages of steps `exit 0` steps each: stages*(steps+1) nodes drawn.
func pageStagesPipeline(id string, stages, steps int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline:\n  name: %s\n  identifier: %s\n  stages:\n", id, id)
	for s := 0; s < stages; s++ {
		fmt.Fprintf(&b, "    - stage:\n        name: s%d\n        identifier: s%d\n        type: Custom\n        spec:\n          execution:\n            steps:\n", s, s)
		for i := 0; i < steps; i++ {
			fmt.Fprintf(&b, "              - step: {type: ShellScript, name: t%d, identifier: t%d, spec: {shell: Sh, source: {type: Inline, spec: {script: exit 0}}}}\n", i, i)
		}
	}
	return b.String()
}

// BenchmarkExecutionPage200 measures Gantry's execution page in a headless Chromium against
// the Temporal UI's page of the same execution, in the same minutes: the time from navigation
// until the page has drawn the run of 10 stages of 20 steps (210 nodes), and until the
// Temporal UI's page shows the same run's status, the pages alternating.
func BenchmarkExecutionPage200(b *testing.B) {
	ctx := context.Background()
	ui, token := executionPageUI(b, env.starter)
	p := compile(b, "page200.yaml", []byte(pageStagesPipeline("page200", 10, 20)), load.Options{})
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Succeeded {
		b.Fatalf("%v %v", res, err)
	}
	tab := browser(b, ctx)
	signInTab(b, tab, ui, token)
	gantryPage := ui.URL + webui.ExecutionsPath + "/" + exec.ID
	drawn := `document.querySelectorAll("#flow .node").length >= 210`
	temporal := ui.ExecutionURL("default", exec.ID)
	shown := fmt.Sprintf(`document.body && document.body.innerText.includes(%q) && document.body.innerText.includes("COMPLETED")`, exec.ID)
	load := func(page, done string) float64 {
		t0 := time.Now()
		if err := chromedp.Run(tab, chromedp.Navigate(page)); err != nil {
			b.Fatal(err)
		}
		for ok := false; !ok; time.Sleep(5 * time.Millisecond) {
			if err := chromedp.Run(tab, chromedp.Evaluate(done, &ok)); err != nil {
				b.Fatal(err)
			}
			if time.Since(t0) > time.Minute {
				var text string
				_ = chromedp.Run(tab, chromedp.Evaluate(visibleText, &text))
				b.Fatalf("%s never showed the run:\n%.1500s", page, text)
			}
		}
		return ms(time.Since(t0))
	}
	load(gantryPage, drawn) // both pages' assets cached, as for a user who has opened them before
	load(temporal, shown)
	var g, t []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g = append(g, load(gantryPage, drawn))
		t = append(t, load(temporal, shown))
	}
	b.StopTimer()
	b.ReportMetric(median(g), "ms-to-draw-210")
	b.ReportMetric(median(t), "temporal-ui-ms")
	b.ReportMetric(median(g)/median(t), "x-temporal-ui")
}

// BenchmarkExecutionPageViewers measures what Gantry's execution page costs the server while
// a run is live: viewers poll its tree every second as the page does, for 15 s, and the CPU
// this process spends (the engine, the UI's front, the tree reads) is set against the same
// window with no viewer, the windows alternating; reported per viewer and minute, with the
// tree reads per minute the viewers caused.
func BenchmarkExecutionPageViewers(b *testing.B) {
	ctx := context.Background()
	counted := &countingTrees{Starter: env.starter}
	ui, token := executionPageUI(b, counted)
	p := compile(b, "live.yaml", []byte(`pipeline:
  name: live
  identifier: live
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: wait, identifier: wait, timeout: 1h, spec: {shell: Sh, source: {type: Inline, spec: {script: sleep 3600}}}}
`), load.Options{})
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.starter.Abort(context.Background(), exec.ID, "bench", "done") }()
	waitFor(b, ctx, env.starter, exec.ID, "s.wait", status.Running)
	reads := &counted.reads
	const viewers, window = 20, 15 * time.Second
	watch := func(n int) (cpu time.Duration, treeReads int64) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pollTree(b, ui, token, exec.ID, stop)
			}()
		}
		r0, c0 := reads.Load(), processCPU()
		time.Sleep(window)
		cpu, treeReads = processCPU()-c0, reads.Load()-r0
		close(stop)
		wg.Wait()
		return cpu, treeReads
	}
	var perViewer, readsPerMin []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idle, _ := watch(0)
		busy, n := watch(viewers)
		perMinute := float64(time.Minute) / float64(window)
		perViewer = append(perViewer, ms(busy-idle)/viewers*perMinute)
		readsPerMin = append(readsPerMin, float64(n)*perMinute)
	}
	b.StopTimer()
	b.ReportMetric(median(perViewer), "cpu-ms/viewer-minute")
	b.ReportMetric(median(readsPerMin), "tree-reads/minute")
	b.ReportMetric(float64(viewers), "viewers")
}

// executionPageUI serves the Web UI with the execution pages, and returns it with a token of a
// user who may sign in.
func executionPageUI(b *testing.B, executions webui.ExecutionLister) (*webui.Server, string) {
	dir := &identity.Directory{}
	token, err := dir.AddUser("dev", "", []string{"developers"})
	if err != nil {
		b.Fatal(err)
	}
	user := func(t string) (*identity.User, error) { return dir.Authenticate(t) }
	ui, err := webui.Start(context.Background(), webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address,
		SignIn: webui.UserName(user), User: user, Logs: webui.NewStepLogs(env.logs, env.starter), Executions: executions})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ui.Stop)
	return ui, token
}

// signInTab signs the tab in with token.
func signInTab(b *testing.B, tab context.Context, ui *webui.Server, token string) {
	err := chromedp.Run(tab, chromedp.Navigate(ui.URL+webui.SignInPath), chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", token, chromedp.ByQuery), chromedp.Click("#submit", chromedp.ByQuery), chromedp.Sleep(200*time.Millisecond))
	if err != nil {
		b.Fatalf("sign in: %v", err)
	}
}

// pollTree asks for the execution's tree every second, as an open execution page does,
// until stop closes.
func pollTree(b *testing.B, ui *webui.Server, token, id string, stop chan struct{}) {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(ui.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: codec.TokenCookie, Value: token, Path: "/"}})
	c := &http.Client{Jar: jar}
	for {
		resp, err := c.Get(ui.URL + webui.ExecutionsPath + "/" + id + "?tree")
		if err != nil {
			b.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Errorf("tree: %d", resp.StatusCode)
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// countingTrees is the starter, counting its reads of execution trees.
type countingTrees struct {
	*starter.Starter
	reads atomic.Int64
}

func (c *countingTrees) Tree(ctx context.Context, id string) (*workflows.Node, error) {
	c.reads.Add(1)
	return c.Starter.Tree(ctx, id)
}

// processCPU is the CPU time this process has spent so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
