package validate

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Values of a monitored service's fields, as the reference names them.
var (
	monitoredTypes    = []string{"Application", "Infrastructure"}
	thresholdTypes    = []string{"ACT_WHEN_HIGHER", "ACT_WHEN_LOWER"}
	metricThresholds  = []string{"IgnoreThreshold", "FailImmediately"}
	thresholdActions  = []string{"Ignore", "FailImmediately", "FailAfterOccurrence", "FailAfterConsecutiveOccurrence"}
	thresholdCriteria = []string{"Absolute", "Percentage"}
)

// promql parses PromQL queries as Prometheus does.
var promql = parser.NewParser(parser.Options{})

// monitoredService checks a monitored service: the environments it watches, its health
// sources and their metrics (each query must parse as PromQL) and thresholds.
func (c *checker) monitoredService(m *pipeline.MonitoredService) {
	c.identifier(m.Node, "identifier", m.Identifier, "monitored service")
	c.name(m.Node, m.Name, "monitored service")
	c.monitoredBody(m)
}

// monitoredTemplate checks a MonitoredService template's spec: a monitored service without
// identity, runtime inputs allowed.
func (c *checker) monitoredTemplate(t *pipeline.Template) {
	var m pipeline.MonitoredService
	c.dec.Decode(pipeline.WithIdentity(t.Spec, t.Identifier, t.Name), &m, "MonitoredService template spec")
	m.DecodeSources(c.dec)
	c.monitoredBody(&m)
}

// monitoredBody checks what a monitored service file and a monitored service template share.
func (c *checker) monitoredBody(m *pipeline.MonitoredService) {
	c.enum(m.Node, "type", m.Type, monitoredTypes, "monitored service type")
	c.boolean(m.Node, "enabled", m.Enabled)
	if len(m.Environments()) == 0 {
		c.diags.Errorf(c.pos(m.Node), "missing-field", "monitored service %s names no environment", cmp.Or(m.Identifier, "template")).
			SetHint("set environmentRef (or environmentRefList) to the environment the service runs in")
	}
	for _, key := range []string{"dependencies", "notificationRuleRefs"} {
		c.ignoredField(m.Node, key, "Gantry reads monitored services for Verify steps only")
	}
	if m.Sources == nil {
		return
	}
	c.ignoredField(m.Sources.Node, "changeSources", "Gantry records its own deployments; other change sources are not read")
	seen := map[string]bool{}
	for _, h := range m.Sources.HealthSources {
		if seen[h.Identifier] {
			c.diags.Errorf(c.pos(pipeline.ValueAt(h.Node, "identifier")), "duplicate-identifier", "health source %q is defined twice", h.Identifier)
		}
		seen[h.Identifier] = true
		if h.Prometheus != nil {
			c.prometheusSource(h.Prometheus)
		}
	}
}

// ignoredField warns that a field with a value is not acted on.
func (c *checker) ignoredField(obj *yaml.Node, key, why string) {
	specChecker{c}.Ignored(pipeline.Field(obj, key), key, why)
}

// prometheusSource checks a Prometheus health source.
func (c *checker) prometheusSource(s *pipeline.PrometheusHealthSpec) {
	if !dynamic(s.ConnectorRef) { // a template's runtime input
		c.reference(s.Node, "connectorRef", s.ConnectorRef, "connector")
	}
	if len(s.MetricDefinitions) == 0 {
		c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "metricDefinitions")), "empty", "the Prometheus health source lists no metrics").
			SetHint("add a metric definition: {identifier: errors, metricName: Errors, query: 'sum(rate(http_requests_total{code=~\"5..\"}[1m]))'}")
	}
	metrics, groups := map[string]bool{}, map[string]bool{}
	for _, m := range s.MetricDefinitions {
		id := m.ID()
		if metrics[id] {
			c.diags.Errorf(c.pos(m.Node), "duplicate-identifier", "metric %q is defined twice", id)
		}
		metrics[id], groups[m.GroupName] = true, true
		c.prometheusMetric(m)
	}
	for _, p := range s.MetricPacks {
		for _, t := range p.MetricThresholds {
			c.metricThreshold(t, metrics, groups)
		}
	}
}

// prometheusMetric checks one metric definition: a query that parses, or a metric to build
// one from, and its risk profile.
func (c *checker) prometheusMetric(m pipeline.PrometheusMetric) {
	c.boolean(m.Node, "isManualQuery", m.IsManualQuery)
	switch {
	case m.Query != "":
		if !dynamic(m.Query) {
			if _, err := promql.ParseExpr(m.Query); err != nil {
				c.diags.Errorf(c.pos(pipeline.ValueAt(m.Node, "query")), "promql", "metric %s: the query is not valid PromQL: %v", m.ID(), err).
					SetHint("Prometheus would refuse it; try it in Prometheus's expression browser")
			}
		}
	case m.PrometheusMetric == "":
		c.diags.Errorf(c.pos(m.Node), "missing-field", "metric %s has no query", m.ID()).
			SetHint("write the PromQL in `query`, or name the metric in `prometheusMetric` with its filters")
	}
	if p := m.Profile(); p != nil {
		for _, t := range p.ThresholdTypes {
			c.enum(p.Node, "thresholdTypes", t, thresholdTypes, "threshold type")
		}
	}
	if a := m.Analysis; a != nil {
		if dv := a.DeploymentVerification; dv != nil {
			c.boolean(dv.Node, "enabled", dv.Enabled)
		}
		if lm := a.LiveMonitoring; lm != nil {
			if e := pipeline.Field(lm, "enabled"); e != nil && e.Value == "true" {
				specChecker{c}.Ignored(e, "liveMonitoring", "Gantry analyses metrics in Verify steps, not continuously")
			}
		}
	}
	if sli := pipeline.Field(m.Sli, "enabled"); sli != nil && sli.Value == "true" {
		specChecker{c}.Ignored(sli, "sli", "Gantry has no service-level objectives")
	}
}

// metricThreshold checks a custom threshold: its type, action and bounds, and that it names
// metrics the health source has.
func (c *checker) metricThreshold(t pipeline.MetricThreshold, metrics, groups map[string]bool) {
	c.enum(t.Node, "type", t.Type, metricThresholds, "threshold type")
	if s := t.Spec; s != nil {
		c.enum(s.Node, "action", s.Action, thresholdActions, "threshold action")
		fail := t.Type == "FailImmediately"
		if fail && s.Action == "Ignore" || !fail && s.Action != "" && s.Action != "Ignore" {
			c.diags.Errorf(c.pos(pipeline.ValueAt(s.Node, "action")), "enum", "a %s threshold cannot have action %s", t.Type, s.Action).
				SetHint("IgnoreThreshold takes action Ignore; FailImmediately takes FailImmediately, FailAfterOccurrence or FailAfterConsecutiveOccurrence")
		}
		if strings.HasPrefix(s.Action, "FailAfter") {
			count := ""
			if s.Spec != nil {
				count = s.Spec.Count
			}
			if n, err := strconv.Atoi(count); err != nil || n < 1 {
				c.diags.Errorf(c.pos(s.Node), "invalid-value", "action %s needs a count of at least 1", s.Action).
					SetHint("spec: {action: %s, spec: {count: 2}}", s.Action)
			}
		}
	}
	if cr := t.Criteria; cr != nil {
		c.enum(cr.Node, "type", cr.Type, thresholdCriteria, "criteria type")
		if cr.Spec == nil || cr.Spec.GreaterThan == "" && cr.Spec.LessThan == "" {
			c.diags.Errorf(c.pos(cr.Node), "missing-field", "the threshold's criteria set no bound").
				SetHint("criteria: {type: Absolute, spec: {greaterThan: 0.05}}")
		} else {
			for key, v := range map[string]string{"greaterThan": cr.Spec.GreaterThan, "lessThan": cr.Spec.LessThan} {
				if _, err := strconv.ParseFloat(v, 64); v != "" && err != nil {
					c.diags.Errorf(c.pos(pipeline.ValueAt(cr.Spec.Node, key)), "invalid-value", "%s %q is not a number", key, v)
				}
			}
		}
	}
	switch {
	case t.MetricIdentifier != "" && !metrics[t.MetricIdentifier]:
		c.diags.Errorf(c.pos(pipeline.ValueAt(t.Node, "metricIdentifier")), "missing-entity", "the threshold names metric %q, which the health source does not define", t.MetricIdentifier)
	case t.MetricIdentifier == "" && t.GroupName != "" && !groups[t.GroupName]:
		c.diags.Errorf(c.pos(pipeline.ValueAt(t.Node, "groupName")), "missing-entity", "the threshold names group %q, which no metric of the health source is in", t.GroupName)
	}
}
