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
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkGantry100StepsWithUI is BenchmarkGantry100Steps with the Web UI served and a
// headless Chromium watching: with the UI already open, it follows each execution to its page
// as it starts (a click, as a user would, so the UI's own router loads it) and the page polls
// the running execution by itself (describe, history long-polls, the metadata query the worker
// answers). Its ratio to Gantry100Steps is what the UI costs the steps, with the browser's own
// rendering, which would run on the user's machine, on the engine's two cores.
func BenchmarkGantry100StepsWithUI(b *testing.B) {
	var opened atomic.Int64
	watchedRuns(b, func(w *watching) {
		tab := browser(b, context.Background())
		// The user has the UI open before the runs start.
		if err := chromedp.Run(tab, chromedp.Navigate(w.ui.URL+"/namespaces/default/workflows"), chromedp.WaitVisible("table", chromedp.ByQuery)); err != nil {
			b.Fatalf("open the UI: %v", err)
		}
		w.spawn(func() {
			shown := ""
			for {
				select {
				case <-w.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if id := w.current(); id != "" && id != shown {
					shown = id
					js := fmt.Sprintf(`(() => { const a = document.createElement("a"); a.href = %q; document.body.appendChild(a); a.click(); a.remove(); })()`, w.ui.ExecutionURL("default", id))
					if chromedp.Run(tab, chromedp.Evaluate(js, nil)) == nil {
						opened.Add(1)
					}
				}
			}
		})
	})
	b.ReportMetric(float64(opened.Load())/float64(b.N), "pages/run")
}

// BenchmarkGantry100StepsUIPolled is BenchmarkGantry100Steps with the Web UI served and its
// HTTP API called as a browser's execution page calls it (the calls traced from Chromium on
// this benchmark): on opening, the run looked up by ID, describe, history both ways, the
// metadata query (answered by the worker), the task queue and its workers, the rendered
// summary; then history long-polls while it runs and a describe every 10 s. From Go instead
// of a browser, it measures what serving the UI costs the steps without the browser's own
// rendering, which runs on the user's machine, on the engine's two cores.
func BenchmarkGantry100StepsUIPolled(b *testing.B) {
	var p *uiPoller
	watchedRuns(b, func(w *watching) {
		p = newUIPoller(b, w.ui)
		w.spawn(func() { // one open page
			shown, described := "", time.Now()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				id := w.current()
				switch {
				case id == "":
					time.Sleep(20 * time.Millisecond)
				case id != shown:
					shown, described = id, time.Now()
					p.open(id)
				default:
					if time.Since(described) > 10*time.Second {
						described = time.Now()
						p.call(http.MethodGet, "/api/v1/namespaces/default/workflows/"+url.PathEscape(id))
					}
					p.longPoll(id)
				}
			}
		})
	})
	if n := p.failures.Load(); n > 0 {
		b.Fatalf("%d UI API calls failed; last: %v", n, p.last.Load())
	}
	b.ReportMetric(float64(p.calls.Load())/float64(b.N), "ui-calls/run")
}

// watching is what a watcher of watchedRuns gets: the UI, the running execution, the stop.
type watching struct {
	ui      *webui.Server
	stop    chan struct{}
	running atomic.Value
	wg      sync.WaitGroup
}

func (w *watching) current() string { return w.running.Load().(string) }

// spawn runs f until stop closes; watchedRuns waits for it before the UI stops.
func (w *watching) spawn(f func()) {
	w.wg.Add(1)
	go func() { defer w.wg.Done(); f() }()
}

// watchedRuns runs the 100-step pipeline 2*b.N times with the Web UI served, alternately
// watched by what watch starts and unwatched (watchers idle), in ABBA order so that neither
// side runs later on average, and reports both in ms/step: the unwatched runs are the baseline
// measured in the same run, on the same server, with the same database behind them.
func watchedRuns(b *testing.B, watch func(w *watching)) {
	r := load.Bytes("bench.yaml", []byte(benchPipeline(benchSteps)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	ctx := context.Background()
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: env.srv.Address})
	if err != nil {
		b.Fatal(err)
	}
	defer ui.Stop()
	w := &watching{ui: ui, stop: make(chan struct{})}
	w.running.Store("")
	defer w.wg.Wait()
	defer close(w.stop)
	watch(w)
	run := func(watched bool) time.Duration {
		start := time.Now()
		exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		if watched {
			w.running.Store(exec.ID)
		}
		res, err := env.starter.Result(ctx, exec.ID)
		if err != nil || res.Status != status.Succeeded {
			b.Fatalf("%v %v", res, err)
		}
		w.running.Store("")
		return time.Since(start)
	}
	var watched, unwatched time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			watched += run(true)
			unwatched += run(false)
		} else {
			unwatched += run(false)
			watched += run(true)
		}
	}
	b.StopTimer()
	perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*benchSteps) }
	b.ReportMetric(perStep(watched), "ms/step")
	b.ReportMetric(perStep(unwatched), "unwatched-ms/step")
}

// uiPoller calls the UI server's HTTP API with its CSRF cookie, as the UI's pages do.
type uiPoller struct {
	ui              *webui.Server
	client          *http.Client
	csrf            string
	calls, failures atomic.Int64
	last            atomic.Value
}

func newUIPoller(b *testing.B, ui *webui.Server) *uiPoller {
	jar, _ := cookiejar.New(nil)
	p := &uiPoller{ui: ui, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	resp, err := p.client.Get(ui.URL + "/api/v1/settings")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(ui.URL)
	for _, c := range jar.Cookies(u) {
		if c.Name == "_csrf" {
			p.csrf = c.Value
		}
	}
	if p.csrf == "" {
		b.Fatal("the UI server set no CSRF cookie")
	}
	return p
}

func (p *uiPoller) call(method, path string) {
	req, _ := http.NewRequest(method, p.ui.URL+path, strings.NewReader("{}"))
	req.Header.Set("X-CSRF-TOKEN", p.csrf)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	p.calls.Add(1)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			err = fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
	}
	if err != nil {
		p.failures.Add(1)
		p.last.Store(err)
	}
}

func (p *uiPoller) open(id string) {
	const api = "/api/v1/namespaces/default"
	w := api + "/workflows/" + url.PathEscape(id)
	p.call(http.MethodGet, api+"/workflows?pageSize=1&query="+url.QueryEscape(fmt.Sprintf("WorkflowId=%q", id)))
	p.call(http.MethodGet, w)
	p.call(http.MethodGet, w+"/history-reverse?waitNewEvent=false&maximumPageSize=1000")
	p.call(http.MethodGet, w+"/history?waitNewEvent=false&maximumPageSize=1000")
	p.call(http.MethodPost, w+"/query/__temporal_workflow_metadata")
	for _, typ := range []string{"1", "2", "3"} {
		p.call(http.MethodGet, api+"/task-queues/"+workflows.TaskQueue+"?taskQueueType="+typ)
	}
	p.call(http.MethodGet, api+"/worker-count?query="+url.QueryEscape(fmt.Sprintf("TaskQueue=%q", workflows.TaskQueue)))
	p.call(http.MethodGet, "/render?content=gantry.Stage&theme=light&overrideTheme=primary&compact=false&inline=true")
}

func (p *uiPoller) longPoll(id string) {
	p.call(http.MethodGet, "/api/v1/namespaces/default/workflows/"+url.PathEscape(id)+"/history?waitNewEvent=true")
}
