package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/topotest"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// scaleRuns is how many executions BenchmarkScale keeps running at once.
var scaleRuns = envInt("GANTRY_SCALE_RUNS", 2000)

// scalePipeline waits for one approval and ends.
func scalePipeline(id string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
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
                    approvalMessage: ship it?
                    includePipelineExecutionHistory: false
                    approvers: {userGroups: [release_managers], minimumCount: 1, disallowPipelineExecutor: false}
`
}

// BenchmarkScaleEmbedded keeps scaleRuns executions waiting for an approval at once on the
// embedded server and worker of this process, all started and then approved through the HTTP
// API, and reports the start rate, this process's memory per waiting execution and the time to
// approve them all. Every execution must start, wait and succeed.
func BenchmarkScaleEmbedded(b *testing.B) {
	api, token := releaserAPI(b)
	benchScale(b, api, token, env.client, func() float64 { return rssMiB(os.Getpid()) })
}

// releaserAPI serves the HTTP API of this process's embedded server and worker until the
// benchmark ends, and returns its address and the token of a release manager.
func releaserAPI(b *testing.B) (string, string) {
	idFile := filepath.Join(b.TempDir(), "users.yaml")
	dir := &identity.Directory{}
	token, err := dir.AddUser("releaser", "", []string{"release_managers"})
	if err != nil || dir.Save(idFile) != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile}))
	b.Cleanup(srv.Close)
	return srv.URL, token
}

// BenchmarkScaleTopology does the same on the production topology as processes (PostgreSQL,
// `gantry temporal`, two workers, `gantry server`); memory is the sum over the workers, the
// Temporal server and the API server.
func BenchmarkScaleTopology(b *testing.B) {
	topo, token, c := releaserTopology(b)
	benchScale(b, topo.API, token, c, func() float64 {
		total := 0.0
		for _, name := range append([]string{"temporal", "server"}, topotest.Workers...) {
			if pid, err := topo.PID(name); err == nil {
				total += rssMiB(pid)
			}
		}
		return total
	})
}

// releaserTopology starts the topology as processes for the benchmark, and returns it, a
// release manager's token for its API and a client of its Temporal server.
func releaserTopology(b *testing.B) (*topotest.Topology, string, client.Client) {
	topo, bin := startTopology(b)
	token := addUser(b, bin, filepath.Join(topo.Dir, "server"))
	c, err := client.Dial(client.Options{HostPort: topo.Address, Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return topo, token, c
}

func benchScale(b *testing.B, api, token string, c client.Client, memory func() float64) {
	for i := 0; i < b.N; i++ {
		pipeline := fmt.Sprintf("scale_%d_%d", time.Now().UnixNano(), i)
		yaml := scalePipeline(pipeline)
		before := memory()

		t0 := time.Now()
		ids := make([]string, scaleRuns)
		parallel(b, scaleRuns, func(j int) error {
			var out struct {
				ExecutionID string `json:"executionId"`
			}
			err := call(api, token, "POST", "/api/v1/executions", map[string]any{"yaml": yaml}, http.StatusCreated, &out)
			ids[j] = out.ExecutionID
			return err
		})
		started := time.Since(t0)

		// Every execution waits for its approval (visibility follows the search attribute).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		query := fmt.Sprintf("%s = '%s' AND %s = '%s'", workflows.AttrPipeline.GetName(), pipeline, workflows.AttrStatus.GetName(), status.ApprovalWaiting)
		for {
			n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
			if err == nil && n.GetCount() == int64(scaleRuns) {
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("%d of %d executions wait for approval: %v", n.GetCount(), scaleRuns, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		allWaiting := time.Since(t0)
		perRun := (memory() - before) * 1024 / float64(scaleRuns)
		if f := os.Getenv("GANTRY_SCALE_HEAP"); f != "" {
			writeHeapProfile(b, f)
		}

		t1 := time.Now()
		parallel(b, scaleRuns, func(j int) error {
			return call(api, token, "POST", "/api/v1/executions/"+ids[j]+"/approve", map[string]any{"path": "gate.gate", "comments": "scale"}, http.StatusOK, nil)
		})
		approved := time.Since(t1)
		for _, id := range ids {
			var res workflows.PipelineResult
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != status.Succeeded {
				b.Fatalf("%s: %s %v", id, res.Status, err)
			}
		}
		done := time.Since(t1)
		cancel()
		b.ReportMetric(float64(scaleRuns)/started.Seconds(), "starts/s")
		b.ReportMetric(allWaiting.Seconds(), "s-until-all-wait")
		b.ReportMetric(perRun, "KiB-per-waiting-run")
		b.ReportMetric(approved.Seconds(), "s-to-approve-all")
		b.ReportMetric(done.Seconds(), "s-until-all-succeeded")
	}
}

// parallel runs f(0..n-1) from 8 concurrent clients and fails the benchmark on any error.
func parallel(b *testing.B, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	next := make(chan int)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		b.Fatalf("%d of %d calls failed, the first: %v", len(errs), n, errs[0])
	}
}

// call is one API request that must answer want.
func call(base, token, method, path string, body any, want int, into any) error {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, rb, want)
	}
	if into != nil {
		return json.Unmarshal(rb, into)
	}
	return nil
}

// rssMiB is a process's resident memory.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// writeHeapProfile writes this process's live heap (after a collection) to file and its
// goroutines to file.goroutines, for what a waiting execution keeps in memory.
func writeHeapProfile(b *testing.B, file string) {
	runtime.GC()
	writeProfile(b, file, "heap", 0)
	writeProfile(b, file+".goroutines", "goroutine", 1)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.Logf("heap in use %d MiB, stacks %d MiB, %d goroutines", m.HeapInuse>>20, m.StackInuse>>20, runtime.NumGoroutine())
}

// writeProfile writes the named runtime profile to file.
func writeProfile(b *testing.B, file, name string, debug int) {
	fh, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	if err := pprof.Lookup(name).WriteTo(fh, debug); err != nil {
		b.Fatal(err)
	}
}
