package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// burstSize is how many starts one round of BenchmarkWebhookDeliveries makes each way.
const burstSize = 200

// BenchmarkWebhookDeliveries measures signed GitHub pushes posted from 8 concurrent clients
// against its baseline, the same pipeline started with plain StartWorkflowExecution calls from
// 8 concurrent clients (with the start options gantry uses: search attributes, summary and
// details; no HTTP, signature, trigger or sequence number in between), on the same server and
// worker. Each of the b.N rounds makes 200 starts each way, in alternating order,
// and waits until the executions of a burst finished before the next burst, so both see the
// same machine. A delivery's latency runs from the request to the answer, which comes once
// the execution started. It reports the medians over rounds of starts per second and p50, the
// median ratio of the two rates, and the worst p99 of any round.
func BenchmarkWebhookDeliveries(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "on-push.yaml"), []byte(hookPipeline), 0o600)
	os.WriteFile(filepath.Join(dir, "main-push.yaml"), []byte(hookTrigger), 0o600)
	os.Setenv(secrets.EnvName("hook_secret"), "hush")
	defer os.Unsetenv(secrets.EnvName("hook_secret"))
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: filepath.Join(dir, "none.yaml"),
		PipelinesDir: dir, Secrets: &secrets.Store{}}))
	defer srv.Close()
	payload, err := os.ReadFile("../triggers/testdata/github-push.json")
	if err != nil {
		b.Fatal(err)
	}
	sig := sign(payload, "hush")
	deliver := func(key string) (string, error) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/github", bytes.NewReader(payload))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", key)
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var out struct {
			Results []struct {
				ExecutionID string `json:"executionId"`
			} `json:"results"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 202 || len(out.Results) != 1 || out.Results[0].ExecutionID == "" {
			return "", fmt.Errorf("HTTP %d %+v %v", resp.StatusCode, out, err)
		}
		return out.Results[0].ExecutionID, nil
	}

	r := load.Bytes("on-push.yaml", []byte(strings.Replace(hookPipeline, "<+input>", "abc123", 1)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	start := func(id string) (string, error) {
		_, err := env.client.ExecuteWorkflow(context.Background(), starter.StartOptions(r.Plan, id, workflows.TaskQueue, 1, "WEBHOOK"),
			workflows.PipelineName, workflows.PipelineInput{Plan: r.Plan, SequenceID: 1, Trigger: workflows.Trigger{Type: "WEBHOOK"}})
		return id, err
	}

	stamp := time.Now().UnixNano()
	var hookRate, rawRate, ratio, hookP50, rawP50 []float64
	worstP99, rawWorstP99 := 0.0, 0.0
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		run := func(f func(string) (string, error), prefix string) burstResult {
			return burst(b, func(i int) (string, error) { return f(fmt.Sprintf("%s-%d-%d-%d", prefix, stamp, round, i)) })
		}
		var hook, raw burstResult
		if round%2 == 0 {
			hook, raw = run(deliver, "bench"), run(start, "raw")
		} else {
			raw, hook = run(start, "raw"), run(deliver, "bench")
		}
		hookRate, rawRate = append(hookRate, hook.rate), append(rawRate, raw.rate)
		ratio = append(ratio, hook.rate/raw.rate)
		hookP50, rawP50 = append(hookP50, hook.p50), append(rawP50, raw.p50)
		worstP99, rawWorstP99 = max(worstP99, hook.p99), max(rawWorstP99, raw.p99)
		b.Logf("round %d: deliveries %.0f/s p50 %.1f p99 %.1f ms, raw starts %.0f/s p50 %.1f p99 %.1f ms",
			round, hook.rate, hook.p50, hook.p99, raw.rate, raw.p50, raw.p99)
	}
	b.StopTimer()
	b.ReportMetric(median(hookRate), "deliveries/s")
	b.ReportMetric(median(rawRate), "raw-starts/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(median(hookP50), "p50-ms")
	b.ReportMetric(median(rawP50), "raw-p50-ms")
	b.ReportMetric(worstP99, "worst-p99-ms")
	b.ReportMetric(rawWorstP99, "raw-worst-p99-ms")
}

type burstResult struct{ rate, p50, p99 float64 }

// burst calls start burstSize times from 8 concurrent clients, then waits until the
// executions it started finished.
func burst(b *testing.B, start func(i int) (string, error)) burstResult {
	const clients = 8
	var mu sync.Mutex
	var lat []float64
	var ids []string
	t0 := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				id, err := start(i)
				if err != nil {
					b.Errorf("start %d: %v", i, err)
					continue
				}
				d := ms(time.Since(t))
				mu.Lock()
				lat, ids = append(lat, d), append(ids, id)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < burstSize; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, id := range ids {
		if err := env.client.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			b.Fatalf("execution %s: %v", id, err)
		}
	}
	if len(lat) == 0 {
		b.Fatal("nothing started")
	}
	slices.Sort(lat)
	return burstResult{rate: float64(len(lat)) / wall.Seconds(), p50: lat[len(lat)/2], p99: lat[min(len(lat)-1, len(lat)*99/100)]}
}
