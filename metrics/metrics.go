// Package metrics exposes a process's Temporal SDK metrics and Gantry's own (named in
// workflows: Metric*) in Prometheus form, with health and readiness endpoints, on a listener
// of its own.
package metrics

import (
	"context"
	"io"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"
)

// Metrics is a process's registry.
type Metrics struct {
	// Handler goes into client.Options.MetricsHandler.
	Handler  client.MetricsHandler
	registry *prom.Registry
	closer   io.Closer
}

// New creates a registry reported every second.
func New() *Metrics {
	reg := prom.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rep := tallyprom.NewReporter(tallyprom.Options{Registerer: reg, DefaultTimerType: tallyprom.HistogramTimerType})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  rep,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, time.Second)
	return &Metrics{Handler: sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), registry: reg, closer: closer}
}

// Close flushes and stops reporting.
func (m *Metrics) Close() error { return m.closer.Close() }

// Mux serves /metrics, /healthz (the process is up) and /readyz (Temporal answers ready).
func (m *Metrics) Mux(ready func(context.Context) error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	return mux
}
