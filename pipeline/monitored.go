package pipeline

import (
	"gopkg.in/yaml.v3"
)

// MonitoredService is a `monitoredService:` document: the metrics a Verify step reads for a
// service in an environment (its health sources). Change sources, dependencies and
// notification rules are the reference's service-reliability features, read but not acted on.
type MonitoredService struct {
	Node                 *yaml.Node `yaml:"-"`
	Entity               `yaml:",inline"`
	Type                 string            `yaml:"type"` // Application or Infrastructure
	ServiceRef           string            `yaml:"serviceRef" gantry:"required"`
	EnvironmentRef       string            `yaml:"environmentRef"`
	EnvironmentRefList   []string          `yaml:"environmentRefList"`
	Sources              *MonitoredSources `yaml:"sources"`
	Dependencies         *yaml.Node        `yaml:"dependencies"`
	NotificationRuleRefs *yaml.Node        `yaml:"notificationRuleRefs"`
	Template             *yaml.Node        `yaml:"template"`
	Enabled              string            `yaml:"enabled"`
}

// DecodeSources decodes the specs of the health sources whose types Gantry reads, and reports
// the others unsupported.
func (m *MonitoredService) DecodeSources(d *Decoder) {
	if m.Sources == nil {
		return
	}
	for i := range m.Sources.HealthSources {
		h := &m.Sources.HealthSources[i]
		if HealthSourceKind.Check(d.Diags, d.Pos(ValueAt(h.Node, "type")), h.Type) {
			h.decodeSpec(d)
		}
	}
}

// Environments are the environments the monitored service watches its service in.
func (m *MonitoredService) Environments() []string {
	if m.EnvironmentRef != "" {
		return []string{m.EnvironmentRef}
	}
	return m.EnvironmentRefList
}

// MonitoredSources are a monitored service's health sources (metrics and logs) and change
// sources (deployments, incidents).
type MonitoredSources struct {
	Node          *yaml.Node     `yaml:"-"`
	HealthSources []HealthSource `yaml:"healthSources"`
	ChangeSources *yaml.Node     `yaml:"changeSources"`
}

// HealthSource is one monitoring system a monitored service reads. Its spec is shaped by its
// type; Gantry reads Prometheus.
type HealthSource struct {
	Node       *yaml.Node `yaml:"-"`
	Name       string     `yaml:"name" gantry:"required"`
	Identifier string     `yaml:"identifier" gantry:"required"`
	Type       string     `yaml:"type" gantry:"required"`
	Version    string     `yaml:"version"`
	Spec       *yaml.Node `yaml:"spec" gantry:"required"`

	Prometheus *PrometheusHealthSpec `yaml:"-"` // type Prometheus
}

// HealthSourceKind is the kind of a health source's type. The reference publishes no schema
// that lists them, so every other type is unsupported, never invalid.
var HealthSourceKind = Kind{What: "health source type", Code: "unsupported-health-source", Runs: []string{"Prometheus"},
	Hint: "Gantry reads metrics from Prometheus (`type: Prometheus`, with a Prometheus connector)"}

// decodeSpec decodes the spec of a type Gantry reads.
func (h *HealthSource) decodeSpec(d *Decoder) {
	if h.Spec != nil && h.Type == "Prometheus" {
		h.Prometheus = &PrometheusHealthSpec{}
		d.Decode(h.Spec, h.Prometheus, "health source spec")
	}
}

// PrometheusHealthSpec is a Prometheus health source: the connector and the metrics, each a
// PromQL query (or a metric with filters the query is built from), and custom thresholds.
type PrometheusHealthSpec struct {
	Node              *yaml.Node         `yaml:"-"`
	ConnectorRef      string             `yaml:"connectorRef" gantry:"required"`
	Feature           string             `yaml:"feature"`
	MetricDefinitions []PrometheusMetric `yaml:"metricDefinitions" gantry:"required"`
	MetricPacks       []MetricPack       `yaml:"metricPacks"`
}

// PrometheusMetric is one metric definition of a Prometheus health source.
type PrometheusMetric struct {
	Node                     *yaml.Node         `yaml:"-"`
	Identifier               string             `yaml:"identifier"`
	MetricName               string             `yaml:"metricName" gantry:"required"`
	GroupName                string             `yaml:"groupName"`
	Query                    string             `yaml:"query"`
	IsManualQuery            string             `yaml:"isManualQuery"`
	ServiceInstanceFieldName string             `yaml:"serviceInstanceFieldName"`
	PrometheusMetric         string             `yaml:"prometheusMetric"`
	ServiceFilter            []PrometheusFilter `yaml:"serviceFilter"`
	EnvFilter                []PrometheusFilter `yaml:"envFilter"`
	AdditionalFilters        []PrometheusFilter `yaml:"additionalFilters"`
	Aggregation              string             `yaml:"aggregation"`
	RiskProfile              *RiskProfile       `yaml:"riskProfile"`
	Analysis                 *MetricAnalysis    `yaml:"analysis"`
	Sli                      *yaml.Node         `yaml:"sli"`
}

// PrometheusFilter is a label matcher of a built query.
type PrometheusFilter struct {
	Node       *yaml.Node `yaml:"-"`
	LabelName  string     `yaml:"labelName" gantry:"required"`
	LabelValue string     `yaml:"labelValue"`
}

// RiskProfile says what kind of metric it is and which change of it is a regression.
type RiskProfile struct {
	Node           *yaml.Node `yaml:"-"`
	Category       string     `yaml:"category"`
	RiskCategory   string     `yaml:"riskCategory"`
	MetricType     string     `yaml:"metricType"`
	ThresholdTypes []string   `yaml:"thresholdTypes"`
}

// MetricAnalysis says where the metric is used: live monitoring, deployment verification (with
// the label naming instances), SLIs.
type MetricAnalysis struct {
	Node                   *yaml.Node              `yaml:"-"`
	LiveMonitoring         *yaml.Node              `yaml:"liveMonitoring"`
	DeploymentVerification *DeploymentVerification `yaml:"deploymentVerification"`
	RiskProfile            *RiskProfile            `yaml:"riskProfile"`
}

// DeploymentVerification is a metric's use in Verify steps.
type DeploymentVerification struct {
	Node                      *yaml.Node `yaml:"-"`
	Enabled                   string     `yaml:"enabled"`
	ServiceInstanceFieldName  string     `yaml:"serviceInstanceFieldName"`
	ServiceInstanceMetricPath string     `yaml:"serviceInstanceMetricPath"`
}

// Profile is the metric's risk profile, wherever it is written.
func (m *PrometheusMetric) Profile() *RiskProfile {
	if m.RiskProfile != nil {
		return m.RiskProfile
	}
	if m.Analysis != nil {
		return m.Analysis.RiskProfile
	}
	return nil
}

// InstanceField is the label naming a series' instance, wherever it is written.
func (m *PrometheusMetric) InstanceField() string {
	if a := m.Analysis; a != nil && a.DeploymentVerification != nil && a.DeploymentVerification.ServiceInstanceFieldName != "" {
		return a.DeploymentVerification.ServiceInstanceFieldName
	}
	return m.ServiceInstanceFieldName
}

// Verified reports whether Verify steps analyse the metric (deploymentVerification.enabled,
// true unless set false).
func (m *PrometheusMetric) Verified() bool {
	return m.Analysis == nil || m.Analysis.DeploymentVerification == nil || m.Analysis.DeploymentVerification.Enabled != "false"
}

// ID is the metric's identifier; the reference falls back to its name without punctuation.
func (m *PrometheusMetric) ID() string {
	if m.Identifier != "" {
		return m.Identifier
	}
	out := make([]rune, 0, len(m.MetricName))
	for _, r := range m.MetricName {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			out = append(out, r)
		}
	}
	return string(out)
}

// MetricPack holds a health source's custom thresholds.
type MetricPack struct {
	Node             *yaml.Node        `yaml:"-"`
	Identifier       string            `yaml:"identifier"`
	MetricThresholds []MetricThreshold `yaml:"metricThresholds"`
}

// MetricThreshold is an Ignore rule (IgnoreThreshold) or a fail-fast rule (FailImmediately)
// of some metrics, with its criteria.
type MetricThreshold struct {
	Node             *yaml.Node         `yaml:"-"`
	Identifier       string             `yaml:"identifier"`
	Type             string             `yaml:"type" gantry:"required"`
	Spec             *ThresholdSpec     `yaml:"spec" gantry:"required"`
	Criteria         *ThresholdCriteria `yaml:"criteria" gantry:"required"`
	MetricType       string             `yaml:"metricType"`
	MetricName       string             `yaml:"metricName"`
	MetricIdentifier string             `yaml:"metricIdentifier"`
	GroupName        string             `yaml:"groupName"`
	Enabled          string             `yaml:"enabled"`
	DeploymentType   string             `yaml:"deploymentType"`
}

// ThresholdSpec is a threshold's action, and for the occurrence actions their count.
type ThresholdSpec struct {
	Node   *yaml.Node      `yaml:"-"`
	Action string          `yaml:"action" gantry:"required"`
	Spec   *ThresholdCount `yaml:"spec"`
}

// ThresholdCount is how many occurrences an occurrence action waits for.
type ThresholdCount struct {
	Node  *yaml.Node `yaml:"-"`
	Count string     `yaml:"count"`
}

// ThresholdCriteria bounds a threshold: Absolute values, or a Percentage change from the
// control.
type ThresholdCriteria struct {
	Node *yaml.Node       `yaml:"-"`
	Type string           `yaml:"type" gantry:"required"`
	Spec *ThresholdBounds `yaml:"spec"`
}

// ThresholdBounds are a criterion's bounds; either may be left out.
type ThresholdBounds struct {
	Node        *yaml.Node `yaml:"-"`
	GreaterThan string     `yaml:"greaterThan"`
	LessThan    string     `yaml:"lessThan"`
}

// PrometheusConnectorSpec is a Prometheus connector: the server's URL and an optional basic
// auth (a username and a password secret) and headers.
type PrometheusConnectorSpec struct {
	Node              *yaml.Node     `yaml:"-"`
	URL               string         `yaml:"url" gantry:"required"`
	Username          string         `yaml:"username"`
	PasswordRef       string         `yaml:"passwordRef"`
	Headers           []ConnectorKey `yaml:"headers"`
	DelegateSelectors []string       `yaml:"delegateSelectors"`
}

// ConnectorKey is a header (or parameter) a connector sends: a plain value, or a secret's.
type ConnectorKey struct {
	Node              *yaml.Node `yaml:"-"`
	Key               string     `yaml:"key" gantry:"required"`
	Value             string     `yaml:"value"`
	ValueEncrypted    string     `yaml:"valueEncrypted"`
	EncryptedValueRef string     `yaml:"encryptedValueRef"`
}

// WithIdentity is a template's body as a document of its own: the template's identifier and
// name first, then the body's other keys.
func WithIdentity(body *yaml.Node, id, name string) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Line: body.Line, Column: body.Column, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "identifier"}, {Kind: yaml.ScalarNode, Value: id},
		{Kind: yaml.ScalarNode, Value: "name"}, {Kind: yaml.ScalarNode, Value: name}}}
	for i := 0; i+1 < len(body.Content); i += 2 {
		if k := body.Content[i].Value; k != "identifier" && k != "name" {
			out.Content = append(out.Content, body.Content[i], body.Content[i+1])
		}
	}
	return out
}
