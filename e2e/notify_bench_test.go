package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkNotifications runs a 20-step pipeline alternately without notification rules (the
// baseline) and with a rule selecting every event (start, stage start and success, success and
// end: 5 deliveries to a webhook on loopback), on workers of their own, and reports the
// pipeline's wall time for both, their ratio, and how long after the start the last delivery
// was recorded as delivered.
func BenchmarkNotifications(b *testing.B) {
	var received atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { received.Add(1) }))
	defer hook.Close()
	rig := func(queue, rules string) (*starter.Starter, *plan.Plan) {
		w := worker.New(env.client, worker.Options{TaskQueue: queue, Logs: logs.Store{Dir: b.TempDir()}, Secrets: &secrets.Store{}, Internal: env.internal})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		src := strings.Replace(benchPipeline(20), "identifier: bench\n", "identifier: "+strings.ReplaceAll(queue, "-", "_")+"\n"+rules, 1)
		r := load.Bytes("bench.yaml", []byte(src), load.Options{ForRun: true})
		if r.Plan == nil {
			b.Fatal(r.Diags.Render(r.Sources))
		}
		return &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}, r.Plan
	}
	plainS, plainP := rig("bench-notify-off", "")
	notedS, notedP := rig("bench-notify-on", `  notificationRules:
    - {name: all, identifier: all, enabled: true, pipelineEvents: [{type: AllEvents}], notificationMethod: {type: Webhook, spec: {webhookUrl: "`+hook.URL+`/all"}}}
`)
	ctx := context.Background()
	run := func(s *starter.Starter, p *plan.Plan) (time.Duration, string) {
		t0 := time.Now()
		exec, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Result(ctx, exec.ID)
		if err != nil || res.Status != status.Succeeded {
			b.Fatalf("%v %v", res, err)
		}
		return time.Since(t0), exec.ID
	}
	run(plainS, plainP) // warm both workers
	run(notedS, notedP)
	var off, on, delivered []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, _ := run(plainS, plainP)
		off = append(off, d)
		t0 := time.Now()
		d, id := run(notedS, notedP)
		on = append(on, d)
		for {
			records, done, err := notedS.Notifications(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if done {
				if len(records) != 5 {
					b.Fatalf("%d deliveries: %+v", len(records), records)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		delivered = append(delivered, time.Since(t0))
	}
	b.StopTimer()
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(median(off), "plain-ms")
	b.ReportMetric(median(on), "notified-ms")
	b.ReportMetric(median(on)/median(off), "ratio")
	b.ReportMetric(median(delivered), "all-delivered-ms")
}
