package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/server"
)

// aliasBomb is levels of nine-way aliases ending in a pipeline's delegateSelectors: under a
// kilobyte, it stands for 9^(levels+1) nodes once its aliases are followed.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", "))
	}
	fmt.Fprintf(&b, "pipeline:\n  name: bomb\n  identifier: bomb\n  delegateSelectors: *a%d\n  stages:\n    - stage: {name: s, identifier: s, type: Custom, spec: {execution: {steps: [{step: {type: Wait, name: w, identifier: w, spec: {duration: 1s}}}]}}}\n", levels)
	return b.String()
}

// serverWithReleaseManager serves the API on the shared starter with one user, carol, a
// release manager, whose token it returns.
func serverWithReleaseManager(tb testing.TB) (*httptest.Server, string) {
	idFile := filepath.Join(tb.TempDir(), "users.yaml")
	dir := &identity.Directory{}
	carol, _ := dir.AddUser("carol", "", []string{"release_managers"})
	if err := dir.Save(idFile); err != nil {
		tb.Fatal(err)
	}
	return httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile})), carol
}

// An alias bomb sent as a pipeline is refused (422, naming the limit) at once, and the server
// allocates a bounded amount for it, however many nodes it stands for: seven levels once took
// the server to 0.9 GB and a 502, ten levels to 18.6 GB.
func TestAPIRefusesAliasBombs(t *testing.T) {
	srv, carol := serverWithReleaseManager(t)
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	const execs = "/api/v1/executions"
	for _, levels := range []int{7, 10} {
		bomb := aliasBomb(levels)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		code, out := c.call("POST", execs, execs, carol, map[string]any{"yaml": bomb})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d levels (%d bytes): %d in %s, %.1f MiB allocated by the test process meanwhile", levels, len(bomb), code, took, float64(allocated)/(1<<20))
		if code != 422 || !strings.Contains(fmt.Sprint(out["details"]), "with its aliases followed the document stands for more than") {
			t.Errorf("%d levels: %d %v", levels, code, out)
		}
		if took > 10*time.Second {
			t.Errorf("%d levels: refused after %s", levels, took)
		}
		// The process's whole allocation while the request ran (the worker polls meanwhile): a
		// bomb the server read would allocate gigabytes.
		if allocated > 32<<20 {
			t.Errorf("%d levels: %d MiB allocated while refusing it", levels, allocated>>20)
		}
	}
}

// A webhook body that is valid JSON nested 100,000 levels deep (under the 1 MiB body limit) is
// refused as an invalid payload at once, with a bounded allocation: decoding stops at a depth
// limit instead of recursing through it.
func TestWebhookRefusesDeepJSON(t *testing.T) {
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter}))
	defer srv.Close()
	const depth = 100_000
	for name, body := range map[string]string{
		"arrays":  strings.Repeat("[", depth) + strings.Repeat("]", depth),
		"objects": strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth),
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/github", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "push")
			req.Header.Set("X-GitHub-Delivery", "deep-"+name)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s, %d bytes: %d in %s, %.1f MiB allocated meanwhile: %s", name, len(body), resp.StatusCode, took, float64(allocated)/(1<<20), answer)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "invalid-payload") {
				t.Errorf("%d %s", resp.StatusCode, answer)
			}
			if took > 5*time.Second {
				t.Errorf("refused after %s", took)
			}
			if allocated > 64<<20 {
				t.Errorf("%d MiB allocated for a %d byte body", allocated>>20, len(body))
			}
		})
	}
}

// BenchmarkRefuseAliasBomb reports what refusing the largest alias bomb (ten levels, under
// 1 KiB, standing for 9^11 nodes) costs the process that serves the API: the bytes allocated
// and the peak heap while the request runs, beside its baseline, the same request with a small
// pipeline in which nothing is an alias (which the server decodes, validates and then refuses
// too: its stage has no steps).
func BenchmarkRefuseAliasBomb(b *testing.B) {
	srv, carol := serverWithReleaseManager(b)
	defer srv.Close()
	plain := "pipeline:\n  name: plain\n  identifier: plain\n  delegateSelectors: [x, x, x, x, x, x, x, x, x]\n  stages:\n    - stage: {name: s, identifier: s, type: Custom, spec: {execution: {steps: []}}}\n"
	post := func(doc string, want int) (alloc, peak uint64) {
		body, _ := json.Marshal(map[string]any{"yaml": doc})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		sampled := make(chan uint64)
		go func() { // the heap's peak, sampled every millisecond while the request runs
			var top uint64
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				top = max(top, m.HeapAlloc)
				select {
				case <-done:
					sampled <- top
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/executions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+carol)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		close(done)
		peak = <-sampled
		runtime.ReadMemStats(&after)
		if resp.StatusCode != want {
			b.Fatalf("answered %d, want %d", resp.StatusCode, want)
		}
		return after.TotalAlloc - before.TotalAlloc, peak - min(peak, before.HeapAlloc)
	}
	var bombAlloc, bombPeak, plainAlloc, plainPeak uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, p := post(aliasBomb(10), http.StatusUnprocessableEntity)
		bombAlloc, bombPeak = bombAlloc+a, max(bombPeak, p)
		a, p = post(plain, http.StatusUnprocessableEntity)
		plainAlloc, plainPeak = plainAlloc+a, max(plainPeak, p)
	}
	kib := func(v uint64) float64 { return float64(v) / (1 << 10) }
	b.ReportMetric(kib(bombAlloc)/float64(b.N), "bomb-alloc-KiB")
	b.ReportMetric(kib(bombPeak), "bomb-peak-heap-KiB")
	b.ReportMetric(kib(plainAlloc)/float64(b.N), "plain-alloc-KiB")
	b.ReportMetric(kib(plainPeak), "plain-peak-heap-KiB")
}
