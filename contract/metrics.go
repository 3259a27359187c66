package contract

import (
	"time"

	"github.com/gantry-cd/gantry/plan"
)

// MetricsQuery reads a health source's metrics over a window for a Verify step. LastVerified
// finds the window of a monitored service's last passed verification of another execution (nil
// when none), RecordVerified records a passed one: a load test compares with it.
const (
	MetricsQuery   = "gantry.MetricsQuery"
	LastVerified   = "gantry.LastVerified"
	RecordVerified = "gantry.RecordVerified"
)

// VerifiedKey names a monitored service of a project (org/project); Execution, in a
// LastVerified query, is the execution asking, whose own verifications do not count.
type VerifiedKey struct {
	Project   string `json:"project"`
	Monitored string `json:"monitored"`
	Execution string `json:"execution,omitempty"`
}

// Verified is a passed verification: its execution, step and window.
type Verified struct {
	Execution string    `json:"execution"`
	Step      string    `json:"step"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
}

// RecordVerifiedInput is RecordVerified's record.
type RecordVerifiedInput struct {
	Key      VerifiedKey `json:"key"`
	Verified Verified    `json:"verified"`
}

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

// TicketRequest asks TicketRead for a Jira issue (Key) or a ServiceNow ticket (Table and
// number, Key).
type TicketRequest struct {
	Connector plan.TicketConnector `json:"connector"`
	Key       string               `json:"key"`
	Table     string               `json:"table,omitempty"`
}

// TicketState is an issue or ticket as read: its URL and fields, as the approval's criteria see
// them (<+issue.Status>, <+ticket.state.displayValue>).
type TicketState struct {
	URL    string         `json:"url"`
	Fields map[string]any `json:"fields"`
}
