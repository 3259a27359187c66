package e2e

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// throughputRuns executions of a 3-step pipeline are started at once (by throughputStarters
// concurrent callers) and awaited, per benchmark iteration.
const (
	throughputRuns     = 200
	throughputStarters = 20
)

// BenchmarkThroughputTopology measures the production topology as processes: PostgreSQL,
// `gantry temporal`, two `gantry worker` processes.
func BenchmarkThroughputTopology(b *testing.B) {
	topo, _ := startTopology(b)
	c, err := client.Dial(client.Options{HostPort: topo.Address, Logger: quiet{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	benchThroughput(b, &starter.Starter{Client: c})
}

// BenchmarkThroughputEmbedded is the baseline: the same workload on the embedded server
// (SQLite file) with one in-process worker, as `gantry server` runs without --address.
func BenchmarkThroughputEmbedded(b *testing.B) {
	benchThroughput(b, env.starter)
}

// benchThroughput reports started/s (throughputRuns over the time until the last start call
// returned), completed/s (over the time until the last execution finished) and the per-step
// latency percentiles: each step node's start to end in workflow time, which includes waiting
// for a worker's task slot and the queue.
func benchThroughput(b *testing.B, s *starter.Starter) {
	r := load.Bytes("throughput.yaml", []byte(benchPipeline(3)), load.Options{ForRun: true})
	if r.Plan == nil {
		b.Fatal(r.Diags.Render(r.Sources))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var startedPerSec, completedPerSec float64
	var steps []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ids := make(chan string, throughputRuns)
		var wg sync.WaitGroup
		errs := make(chan error, throughputRuns)
		for w := 0; w < throughputStarters; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < throughputRuns/throughputStarters; j++ {
					e, err := s.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
					if err != nil {
						errs <- err
						return
					}
					ids <- e.ID
				}
			}()
		}
		wg.Wait()
		started := time.Since(t0)
		close(ids)
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var done sync.WaitGroup
		failed := 0
		for id := range ids {
			done.Add(1)
			go func() {
				defer done.Done()
				res, err := s.Result(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				if err != nil || res.Status != status.Succeeded {
					failed++
					return
				}
				res.Tree.Walk(func(n *workflows.Node) {
					if n.Kind == "step" && n.StartedAt != nil && n.EndedAt != nil {
						steps = append(steps, n.EndedAt.Sub(*n.StartedAt))
					}
				})
			}()
		}
		done.Wait()
		completed := time.Since(t0)
		if failed > 0 {
			b.Fatalf("%d of %d executions did not succeed", failed, throughputRuns)
		}
		startedPerSec += throughputRuns / started.Seconds()
		completedPerSec += throughputRuns / completed.Seconds()
	}
	b.StopTimer()
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	pct := func(p float64) float64 {
		return float64(steps[int(p*float64(len(steps)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(startedPerSec/float64(b.N), "started/s")
	b.ReportMetric(completedPerSec/float64(b.N), "completed/s")
	b.ReportMetric(pct(0.50), "step-p50-ms")
	b.ReportMetric(pct(0.99), "step-p99-ms")
	b.ReportMetric(0, "ns/op")
}
