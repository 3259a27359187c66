package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/metrics"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/worker"
)

// A worker's /metrics shows Gantry's execution and step counters and the SDK's step latency
// after a pipeline ran; /healthz and /readyz answer.
func TestMetricsAndHealth(t *testing.T) {
	m := metrics.New()
	defer m.Close()
	c, err := client.Dial(client.Options{HostPort: env.srv.Address, Namespace: env.srv.Namespace, Logger: quiet{}, MetricsHandler: m.Handler})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const queue = "gantry-metrics"
	ic := internalOf(t, c)
	w := worker.New(c, worker.Options{TaskQueue: queue, Logs: env.logs, Internal: ic})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	src := strings.Replace(encryptedPipeline("metrics_run"), "{name: PASS, type: Secret, value: enc_password}", "{name: PASS, type: String, value: x}", 1)
	runPlan(t, &starter.Starter{Client: c, Internal: ic, TaskQueue: queue}, compile(t, "metrics.yaml", []byte(src), load.Options{}))

	ready := func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
	srv := httptest.NewServer(m.Mux(ready))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Each wanted series: its name and labels it must carry (Prometheus orders labels itself).
	want := [][]string{
		{"gantry_executions_started_total{", `pipeline="metrics_run"`, `trigger="MANUAL"`},
		{"gantry_executions_finished_total{", `pipeline="metrics_run"`, `status="SUCCEEDED"`},
		{"gantry_steps_finished_total{", `status="SUCCEEDED"`, `step_type="ShellScript"`},
		{"gantry_step_duration_seconds_bucket{", `status="SUCCEEDED"`, `step_type="ShellScript"`},
		{"temporal_activity_execution_latency_seconds_bucket{", `activity_type="gantry_ShellScript"`},
		{"temporal_workflow_task_schedule_to_start_latency_seconds_bucket{", `workflow_type="gantry_Stage"`},
	}
	has := func(body string, w []string) bool {
		for _, line := range strings.Split(body, "\n") {
			ok := strings.HasPrefix(line, w[0])
			for _, l := range w[1:] {
				ok = ok && strings.Contains(line, l)
			}
			if ok {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); ; { // the reporter flushes every second
		_, body := get("/metrics")
		var missing []string
		for _, w := range want {
			if !has(body, w) {
				missing = w
			}
		}
		if missing == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %v", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz %d", code)
	}
	down := httptest.NewServer(m.Mux(func(context.Context) error { return errors.New("frontend unreachable") }))
	defer down.Close()
	resp, err := http.Get(down.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Temporal down: %v %v", resp.StatusCode, err)
	}
}
