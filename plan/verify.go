package plan

// MonitoredService is a monitored service resolved before the run: the metrics a Verify step
// reads for a service in an environment, and where it reads them.
type MonitoredService struct {
	ID string `json:"id"`
	// Project is the org/project the monitored service belongs to: its passed verifications
	// are remembered per project.
	Project     string         `json:"project,omitempty"`
	Name        string         `json:"name,omitempty"`
	Service     string         `json:"service"`
	Environment string         `json:"environment"`
	Sources     []HealthSource `json:"sources"`
}

// HealthSource is one monitoring system of a monitored service and the metrics read from it.
type HealthSource struct {
	ID         string              `json:"id"`
	Name       string              `json:"name,omitempty"`
	Type       string              `json:"type"` // Prometheus
	Prometheus PrometheusConnector `json:"prometheus"`
	Metrics    []Metric            `json:"metrics"`
	Thresholds []MetricThreshold   `json:"thresholds,omitempty"`
}

// PrometheusConnector says how a worker reaches a Prometheus server. Secrets are named, never
// held.
type PrometheusConnector struct {
	ID          string      `json:"id"`
	URL         string      `json:"url"`
	Username    string      `json:"username,omitempty"`
	PasswordRef string      `json:"passwordRef,omitempty"`
	Headers     []NameValue `json:"headers,omitempty"`
	// HeaderRefs are headers whose values are secrets, by header name.
	HeaderRefs []NameValue `json:"headerRefs,omitempty"`
}

// Metric is one metric definition of a health source.
type Metric struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Group string `json:"group,omitempty"`
	// Query is the PromQL query, built from the metric and filters when not written by hand.
	Query string `json:"query"`
	// Category is the reference's risk category (Errors, Performance, Infrastructure, ...).
	Category string `json:"category,omitempty"`
	// Higher and Lower say which change is a regression: a metric that fails when it rises
	// (errors, latency) is Higher, one that fails when it falls (throughput) is Lower; neither
	// set means both.
	Higher bool `json:"higher,omitempty"`
	Lower  bool `json:"lower,omitempty"`
	// InstanceLabel is the label that names the instance a series comes from
	// (serviceInstanceFieldName); "" analyses the service as a whole.
	InstanceLabel string `json:"instanceLabel,omitempty"`
}

// MetricThreshold is a custom threshold of a health source: an Ignore rule (values within it
// are never a regression) or a fail-fast rule (values beyond it fail the step early).
type MetricThreshold struct {
	Kind   string `json:"kind"`             // Ignore or FailFast
	Metric string `json:"metric,omitempty"` // a metric identifier; "" for every metric of Group
	Group  string `json:"group,omitempty"`
	// Action of a fail-fast rule: FailImmediately, FailAfterOccurrence or
	// FailAfterConsecutiveOccurrence, with Count the occurrences.
	Action string `json:"action,omitempty"`
	Count  int    `json:"count,omitempty"`
	// Percentage compares the test's value with the control's (a change in percent) instead
	// of the value itself.
	Percentage  bool     `json:"percentage,omitempty"`
	GreaterThan *float64 `json:"greaterThan,omitempty"`
	LessThan    *float64 `json:"lessThan,omitempty"`
}
