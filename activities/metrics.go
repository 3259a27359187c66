package activities

import (
	"time"

	"github.com/gantry-cd/gantry/plan"
)

// MetricsQuery reads a health source's metrics over a window for a Verify step.
const MetricsQuery = "gantry.MetricsQuery"

// MetricsRequest asks a health source for its metrics' values from Start to End, one value
// every Step, per instance.
type MetricsRequest struct {
	Source  plan.HealthSource `json:"source"`
	Start   time.Time         `json:"start"`
	End     time.Time         `json:"end"`
	Step    time.Duration     `json:"step"`
	Metrics []string          `json:"metrics,omitempty"` // identifiers; all of Source's when empty
}

// MetricsAnswer holds each metric's series.
type MetricsAnswer struct {
	Metrics []MetricData `json:"metrics"`
}

// MetricData is one metric's values by instance. Rejected holds the monitoring system's message
// when it refused the query (a query that cannot run is the pipeline's fault, not an outage).
type MetricData struct {
	ID       string           `json:"id"`
	Series   []InstanceSeries `json:"series,omitempty"`
	Rejected string           `json:"rejected,omitempty"`
}

// InstanceSeries is one instance's values: [unix seconds, value] pairs in time order. Instance
// is the value of the metric's instance label ("" when it has none).
type InstanceSeries struct {
	Instance string       `json:"instance"`
	Points   [][2]float64 `json:"points"`
}
