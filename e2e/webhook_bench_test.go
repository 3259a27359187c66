package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/server"
)

// BenchmarkWebhookDeliveries posts signed GitHub pushes from 8 concurrent clients and reports
// deliveries per second and the p50/p99 latency from request to workflow started.
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
	const clients = 8
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/github", bytes.NewReader(payload))
				req.Header.Set("X-GitHub-Event", "push")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d-%d", start.UnixNano(), i))
				req.Header.Set("X-Hub-Signature-256", sig)
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				d := time.Since(t0)
				if err != nil || resp.StatusCode != 202 {
					b.Errorf("delivery %d: %v %v", i, err, resp)
					continue
				}
				resp.Body.Close()
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	wall := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(len(lat))/wall.Seconds(), "deliveries/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}
