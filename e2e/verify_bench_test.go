package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkVerify100: 100 Verify steps (Rolling, one metric, one minute) running at once
// against one Prometheus. queries is what Prometheus served (its own count of range queries),
// expected-queries what 100 steps ask (the window before, then one a minute: 200): none lost,
// none doubled. cpu-ms-per-metric-minute is this process's CPU (server, worker, analysis)
// for the 100 runs less that of the baseline, the same 100 runs with a one-minute Wait step
// in place of the Verify step, per metric-minute analysed; the baseline's own CPU per run is
// baseline-cpu-ms/run.
func BenchmarkVerify100(b *testing.B) {
	const runs = 100
	file, _, prom := rollingSetup(b, "bench-verify", false)
	text := strings.Replace(readFile(file), "duration: 2m", "duration: 1m", 1)
	writeFile(b, file, text)
	// The baseline: the same pipeline with a one-minute Wait step in place of the Verify step.
	from, to := strings.Index(text, "              - step:\n                  type: Verify"), strings.Index(text, "        failureStrategies:")
	waitFile := filepath.Join(filepath.Dir(file), "wait.yaml")
	writeFile(b, waitFile, strings.Replace(text[:from], "identifier: verified_rolling", "identifier: waited_rolling", 1)+
		"              - step: {type: Wait, name: Wait, identifier: wait, spec: {duration: 1m}}\n"+text[to:])
	var verifyCPU, waitCPU []float64
	var lastQueries float64
	for range b.N {
		before := rangeQueries(b, prom.URL)
		cpu := runAll(b, file, runs, func(res *workflows.PipelineResult) {
			n := res.Tree.Find("deploy_dev.verify")
			if n.Status != status.Succeeded || n.Outputs["analysedMinutes"] != float64(1) || n.Outputs["missingAnswers"] != nil {
				b.Errorf("verify %s: %v", n.Status, n.Outputs)
			}
		})
		lastQueries = rangeQueries(b, prom.URL) - before
		if lastQueries != 2*runs {
			b.Errorf("Prometheus served %v range queries for %d Verify steps, want %d", lastQueries, runs, 2*runs)
		}
		verifyCPU = append(verifyCPU, cpu)
		waitCPU = append(waitCPU, runAll(b, waitFile, runs, nil))
	}
	b.ReportMetric(lastQueries, "queries")
	b.ReportMetric(2*runs, "expected-queries")
	b.ReportMetric((median(verifyCPU)-median(waitCPU))/runs, "cpu-ms-per-metric-minute")
	b.ReportMetric(median(waitCPU)/runs, "baseline-cpu-ms/run")
	b.ReportMetric(0, "ns/op")
}

// runAll starts n executions of a pipeline at once, waits for them all and returns the CPU
// milliseconds this process spent meanwhile.
func runAll(b *testing.B, file string, n int, check func(*workflows.PipelineResult)) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := loadRun(b, file)
	cpu0 := processCPU()
	ids := make([]string, n)
	for i := range ids {
		exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = exec.ID
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := env.starter.Result(ctx, id)
			if err != nil || res.Status != status.Succeeded {
				b.Errorf("%s: %v %v", id, res, err)
				return
			}
			if check != nil {
				check(res)
			}
		}()
	}
	wg.Wait()
	return float64((processCPU() - cpu0).Microseconds()) / 1000
}

// rangeQueries is how many range queries Prometheus has served (its own metrics).
func rangeQueries(b *testing.B, url string) float64 {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "prometheus_http_requests_total{") && strings.Contains(line, `handler="/api/v1/query_range"`) {
			fields := strings.Fields(line)
			v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
			total += v
		}
	}
	return total
}
