package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// printingPipeline is benchPipeline with steps that print a line each (every step has a log),
// under its own identifier: a pipeline's sequence numbers live on the queue of the worker that
// first ran it, and each benchmark's worker stops at its end.
func printingPipeline(n int, id string) *plan.Plan {
	p := strings.ReplaceAll(benchPipeline(n), "script: exit 0", "script: echo step output")
	r := load.Bytes("bench.yaml", []byte(strings.Replace(p, "identifier: bench\n", "identifier: "+id+"\n", 1)), load.Options{ForRun: true})
	if r.Plan == nil {
		panic(r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// logsRig is a worker of its own queue whose step logs are st, and a starter for it.
type logsRig struct {
	w interface{ Stop() }
	s *starter.Starter
	p *plan.Plan
}

func newLogsRig(b *testing.B, queue string, st logs.Store) *logsRig {
	w := worker.New(env.client, worker.Options{TaskQueue: queue, Logs: st, Secrets: &secrets.Store{}, Internal: env.internal})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	return &logsRig{w: w, s: &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue},
		p: printingPipeline(benchSteps, strings.ReplaceAll(queue, "-", "_"))}
}

// run runs the pipeline once and returns its wall time and execution.
func (r *logsRig) run(b *testing.B) (time.Duration, string) {
	ctx := context.Background()
	t0 := time.Now()
	exec, err := r.s.Start(ctx, r.p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := r.s.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		b.Fatalf("%v %v", res, err)
	}
	return time.Since(t0), exec.ID
}

// BenchmarkLogsToS3 runs the 100-step pipeline of printing steps alternately on a worker whose
// logs stay on disk (the baseline) and on one that also ships them to a real S3-compatible
// server (versitygw on the same machine), and reports both per step and their ratio.
func BenchmarkLogsToS3(b *testing.B) {
	srv, err := s3test.Start(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	if err := srv.Bucket(ctx, "logs"); err != nil {
		b.Fatal(err)
	}
	bucket, err := objstore.Open(ctx, objstore.Config{Location: "logs/bench", Endpoint: srv.Endpoint, Region: s3test.Region,
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "logs")
	shipped := logs.Store{Dir: dir, Remote: &logs.Remote{Bucket: bucket}}
	if err := shipped.Remote.Start(ctx, dir); err != nil {
		b.Fatal(err)
	}
	local := newLogsRig(b, "bench-logs-local", logs.Store{Dir: filepath.Join(b.TempDir(), "logs")})
	defer local.w.Stop()
	s3 := newLogsRig(b, "bench-logs-s3", shipped)
	defer s3.w.Stop()
	local.run(b) // warm both workers
	s3.run(b)
	var onDisk, toS3 []time.Duration
	var last string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, _ := local.run(b)
		onDisk = append(onDisk, d)
		d, last = s3.run(b)
		toS3 = append(toS3, d)
	}
	b.StopTimer()
	shipped.Remote.Stop(ctx)
	var out strings.Builder
	reader := logs.Store{Dir: b.TempDir(), Remote: &logs.Remote{Bucket: bucket}}
	if err := reader.Copy(ctx, &out, last, fmt.Sprintf("s.s%d", benchSteps-1)); err != nil || !strings.Contains(out.String(), "step output") {
		b.Fatalf("the last step's log in the bucket: %q %v", out.String(), err)
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000 / benchSteps
	}
	l, s := median(onDisk), median(toS3)
	b.ReportMetric(l, "local-ms/step")
	b.ReportMetric(s, "s3-ms/step")
	b.ReportMetric(s/l, "ratio")
}
