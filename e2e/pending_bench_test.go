package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// pendingRuns is the larger number of executions BenchmarkPendingList lists.
var pendingRuns = envInt("GANTRY_PENDING_RUNS", 10000)

// pendingListings is how many times BenchmarkPendingList lists each size. The repetition is
// inside the benchmark, run with -benchtime 1x: the testing package runs a benchmark once
// with b.N = 1 before any larger b.N, which would start every execution twice.
const pendingListings = 3

// BenchmarkPendingList lists every waiting decision (the starter's pages of 100, as `gantry
// approvals` and the API list them) while 100 and then GANTRY_PENDING_RUNS (10,000)
// executions wait for an approval on the embedded server. Baseline: the same query's pages of
// bare visibility records, without reading any execution's tree.
func BenchmarkPendingList(b *testing.B) {
	ctx := context.Background()
	p := compile(b, "pending_bench.yaml", []byte(approvalPipeline("pending_bench", "", "")), load.Options{})
	var started []string
	var mu sync.Mutex
	startUpTo := func(n int) {
		var wg sync.WaitGroup
		work := make(chan struct{})
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range work {
					exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
					if err != nil {
						b.Error(err)
						continue
					}
					mu.Lock()
					started = append(started, exec.ID)
					mu.Unlock()
				}
			}()
		}
		for i := len(started); i < n; i++ {
			work <- struct{}{}
		}
		close(work)
		wg.Wait()
	}
	defer func() {
		for _, id := range started {
			_ = env.client.TerminateWorkflow(context.Background(), id, "", "bench over")
		}
	}()
	list := func() int {
		n, token := 0, ""
		for {
			page, err := env.starter.PendingPage(ctx, 100, token)
			if err != nil {
				b.Fatal(err)
			}
			for _, pd := range page.Pending {
				if pd.Status == status.ApprovalWaiting {
					n++
				}
			}
			if token = page.NextPageToken; token == "" {
				return n
			}
		}
	}
	raw := func() int {
		n := 0
		var token []byte
		for {
			resp, err := env.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: starter.PendingQuery, PageSize: 100, NextPageToken: token})
			if err != nil {
				b.Fatal(err)
			}
			n += len(resp.GetExecutions())
			if token = resp.GetNextPageToken(); len(token) == 0 {
				return n
			}
		}
	}
	for _, size := range []int{100, pendingRuns} {
		t0 := time.Now()
		startUpTo(size)
		fmt.Fprintf(os.Stderr, "pending bench: %d started in %s\n", size, time.Since(t0).Round(time.Millisecond))
		deadline := time.Now().Add(30 * time.Minute)
		for n := list(); n < size; n = list() { // visibility follows a moment behind
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d listed", n, size)
			}
			fmt.Fprintf(os.Stderr, "pending bench: %d of %d waiting after %s\n", n, size, time.Since(t0).Round(time.Second))
			time.Sleep(5 * time.Second)
		}
		var gantry, bare time.Duration
		for i := 0; i < pendingListings; i++ {
			t0 := time.Now()
			if n := list(); n < size {
				b.Fatalf("listed %d of %d", n, size)
			}
			gantry += time.Since(t0)
			t0 = time.Now()
			raw()
			bare += time.Since(t0)
		}
		b.ReportMetric(float64(gantry.Milliseconds())/pendingListings, fmt.Sprintf("list%d-ms", size))
		b.ReportMetric(float64(bare.Milliseconds())/pendingListings, fmt.Sprintf("raw%d-ms", size))
	}
}
