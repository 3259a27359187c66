package entities

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/pipeline/templates"
	"github.com/gantry-cd/gantry/plan"
)

// stageMonitored gives the deployments of a Deployment stage with a Verify step that reads
// the monitored service of the stage's service and environment (Default) that monitored
// service, and reports the step when there is none. Stages without one resolve none: a
// monitored service is read only where it is used.
func (r *resolver) stageMonitored(s *pipeline.Stage, deploys []*plan.Deployment) {
	var step *pipeline.Step
	if ex := s.Execution(); ex != nil {
		visit := func(v pipeline.StepVisit) {
			if st := v.Step; step == nil && st != nil && steps.Traits(st.Type).Builtin == "verify" && st.Spec != nil && defaultMonitored(st.Spec) {
				step = st
			}
		}
		pipeline.WalkSteps(ex.Steps, false, nil, nil, visit)
		pipeline.WalkSteps(ex.RollbackSteps, true, nil, nil, visit)
	}
	if step == nil {
		return
	}
	for _, d := range deploys {
		if d.Service == nil || d.Environment == nil {
			continue
		}
		if f := r.monitoredOf(d, r.c.Monitored, true); f != nil {
			d.Monitored = r.monitoredService(f)
			continue
		}
		if f := r.monitoredOf(d, r.c.Unsupported, false); f != nil {
			r.diags.Unsupportedf(r.at(r.file, step.Node), "unsupported-entity", "step %s verifies with monitored service %s (%s), which uses what Gantry cannot run yet",
				step.Identifier, f.Monitored.Identifier, f.Name).SetHint("the diagnostics of %s name what", f.Name)
			return
		}
		r.diags.Errorf(r.at(r.file, step.Node), "missing-entity", "step %s verifies service %s in environment %s, which no monitored service watches",
			step.Identifier, d.Service.ID, d.Environment.ID).
			SetHint("%s", r.hint("monitoredService")+fmt.Sprintf(", with serviceRef: %s and environmentRef: %s", d.Service.ID, d.Environment.ID))
		return
	}
}

// defaultMonitored reports whether a Verify step reads the monitored service of its stage's
// service and environment: type Default, or no monitored service named at all.
func defaultMonitored(spec *yaml.Node) bool {
	if ms := pipeline.Field(spec, "monitoredService"); ms != nil {
		t := pipeline.Field(ms, "type")
		return t == nil || t.Value == "Default"
	}
	return pipeline.Field(spec, "monitoredServiceRef") == nil
}

// monitoredOf is the file among files of the monitored service watching a deployment's
// service in its environment; with unique, a second one is reported.
func (r *resolver) monitoredOf(d *plan.Deployment, files map[string]*pipeline.File, unique bool) *pipeline.File {
	var found *pipeline.File
	for _, key := range slices.Sorted(maps.Keys(files)) {
		f := files[key]
		m := f.Monitored
		if m == nil || pipeline.LocalRef(m.ServiceRef) != d.Service.ID ||
			!slices.ContainsFunc(m.Environments(), func(e string) bool { return pipeline.LocalRef(e) == d.Environment.ID }) {
			continue
		}
		if found == nil {
			found = f
			if !unique {
				break
			}
			continue
		}
		r.diags.Errorf(r.at(f.Name, m.Node), "duplicate-entity", "monitored services %s and %s both watch service %s in environment %s",
			found.Monitored.Identifier, m.Identifier, d.Service.ID, d.Environment.ID).
			SetHint("a service has one monitored service per environment; merge their health sources")
	}
	return found
}

// configuredMonitored resolves the monitored service a Verify step names (type Configured).
func (r *resolver) configuredMonitored(spec *yaml.Node, ref string, refs *plan.StepRefs) {
	f, ok := r.c.Monitored[pipeline.LocalRef(ref)]
	if !ok {
		at := pipeline.ValueAt(pipeline.Field(pipeline.Field(spec, "monitoredService"), "spec"), "monitoredServiceRef")
		if pipeline.Field(spec, "monitoredServiceRef") != nil {
			at = pipeline.ValueAt(spec, "monitoredServiceRef")
		}
		r.missing(r.at(r.file, at), "monitored service", ref, "monitoredService")
		return
	}
	refs.Monitored = r.monitoredService(f)
}

// monitoredService turns a monitored service file into what a Verify step reads: each
// Prometheus health source with its connector, metrics and thresholds.
func (r *resolver) monitoredService(f *pipeline.File) *plan.MonitoredService {
	m := f.Monitored
	out := &plan.MonitoredService{ID: m.Identifier, Name: m.Name, Service: pipeline.LocalRef(m.ServiceRef)}
	if envs := m.Environments(); len(envs) > 0 {
		out.Environment = pipeline.LocalRef(envs[0])
	}
	if m.Sources == nil {
		return out
	}
	for _, h := range m.Sources.HealthSources {
		p := h.Prometheus
		if p == nil {
			continue // unsupported types were reported when the file was read
		}
		src := plan.HealthSource{ID: h.Identifier, Name: h.Name, Type: h.Type}
		conn, ok := r.prometheusConnector(f.Name, p)
		if !ok {
			continue
		}
		src.Prometheus = conn
		for _, md := range p.MetricDefinitions {
			if !md.Verified() {
				continue
			}
			src.Metrics = append(src.Metrics, planMetric(md))
		}
		for _, pack := range p.MetricPacks {
			for _, t := range pack.MetricThresholds {
				src.Thresholds = append(src.Thresholds, planThreshold(t))
			}
		}
		out.Sources = append(out.Sources, src)
	}
	return out
}

// prometheusConnector resolves a health source's connector, which must be a Prometheus one.
func (r *resolver) prometheusConnector(file string, p *pipeline.PrometheusHealthSpec) (plan.PrometheusConnector, bool) {
	cf, ok := r.c.Connectors[pipeline.LocalRef(p.ConnectorRef)]
	if !ok {
		r.missing(r.at(file, pipeline.ValueAt(p.Node, "connectorRef")), "connector", p.ConnectorRef, "connector")
		return plan.PrometheusConnector{}, false
	}
	k := cf.Connector
	if k.Prometheus == nil {
		r.diags.Errorf(r.at(file, pipeline.ValueAt(p.Node, "connectorRef")), "connector",
			"connector %s is a %s connector; a Prometheus health source needs a Prometheus connector", k.Identifier, k.Type)
		return plan.PrometheusConnector{}, false
	}
	out := plan.PrometheusConnector{ID: k.Identifier, URL: k.Prometheus.URL, Username: k.Prometheus.Username, PasswordRef: k.Prometheus.PasswordRef}
	for _, h := range k.Prometheus.Headers {
		if h.EncryptedValueRef != "" || h.ValueEncrypted == "true" {
			out.HeaderRefs = append(out.HeaderRefs, plan.NameValue{Name: h.Key, Value: cmp.Or(h.EncryptedValueRef, h.Value)})
			continue
		}
		out.Headers = append(out.Headers, plan.NameValue{Name: h.Key, Value: h.Value})
	}
	return out, true
}

// planMetric is a metric definition as the step reads it: its query (built from the metric
// and filters when not written by hand) and which change of it is a regression.
func planMetric(md pipeline.PrometheusMetric) plan.Metric {
	out := plan.Metric{ID: md.ID(), Name: md.MetricName, Group: md.GroupName, Query: md.Query, InstanceLabel: md.InstanceField()}
	if out.Query == "" {
		out.Query = builtQuery(md)
	}
	if p := md.Profile(); p != nil {
		out.Category = cmp.Or(p.RiskCategory, p.Category)
		out.Higher = slices.Contains(p.ThresholdTypes, "ACT_WHEN_HIGHER")
		out.Lower = slices.Contains(p.ThresholdTypes, "ACT_WHEN_LOWER")
	}
	return out
}

// builtQuery is the query of a metric given by name and filters, as the reference builds it:
// aggregation(metric{filters}).
func builtQuery(md pipeline.PrometheusMetric) string {
	var matchers []string
	for _, list := range [][]pipeline.PrometheusFilter{md.ServiceFilter, md.EnvFilter, md.AdditionalFilters} {
		for _, f := range list {
			matchers = append(matchers, f.LabelName+"="+strconv.Quote(f.LabelValue))
		}
	}
	q := md.PrometheusMetric
	if len(matchers) > 0 {
		q += "{" + strings.Join(matchers, ",") + "}"
	}
	if md.Aggregation != "" {
		by := ""
		if l := md.InstanceField(); l != "" {
			by = " by (" + l + ")" // keep the instances apart
		}
		q = md.Aggregation + by + "(" + q + ")"
	}
	return q
}

// planThreshold is a custom threshold as the step applies it.
func planThreshold(t pipeline.MetricThreshold) plan.MetricThreshold {
	out := plan.MetricThreshold{Kind: "Ignore", Metric: t.MetricIdentifier, Group: t.GroupName}
	if t.Type == "FailImmediately" {
		out.Kind, out.Action, out.Count = "FailFast", "FailImmediately", 1
		if t.Spec != nil && t.Spec.Action != "" {
			out.Action = t.Spec.Action
			if t.Spec.Spec != nil {
				if n, err := strconv.Atoi(t.Spec.Spec.Count); err == nil {
					out.Count = n
				}
			}
		}
	}
	if c := t.Criteria; c != nil {
		out.Percentage = c.Type == "Percentage"
		if c.Spec != nil {
			out.GreaterThan, out.LessThan = number(c.Spec.GreaterThan), number(c.Spec.LessThan)
		}
	}
	return out
}

func number(s string) *float64 {
	v, err := strconv.ParseFloat(s, 64)
	if s == "" || err != nil {
		return nil
	}
	return &v
}

// templateMonitored resolves a Verify step's monitored service from a MonitoredService template
// (type Template): the template's spec with the step's templateInputs filled in. Its service
// and environment, when left to runtime inputs or expressions, are the stage's.
func (r *resolver) templateMonitored(spec *yaml.Node, refs *plan.StepRefs) {
	ms := pipeline.Field(pipeline.Field(spec, "monitoredService"), "spec")
	ref, version := pipeline.Field(ms, "monitoredServiceTemplateRef"), pipeline.Field(ms, "versionLabel")
	if ref == nil || strings.Contains(ref.Value, "<+") {
		return // required by validation; an expression is resolved by nobody before the run
	}
	pos := r.at(r.file, ref)
	label := ""
	if version != nil {
		label = version.Value
	}
	doc, e := r.c.Templates.Lookup(ref.Value, label)
	if e != nil {
		r.diags.Errorf(pos, map[bool]string{true: "missing-entity", false: e.Code}[e.Code == templates.MissingTemplate], "the Verify step's monitored service: %s", e.Message).SetHint("%s", e.Hint)
		return
	}
	if doc.T.Type != "MonitoredService" {
		r.diags.Errorf(pos, "template-type", "template %s is a %s template, not a MonitoredService one", doc.Key(), doc.T.Type)
		return
	}
	r.checkTemplate(doc)
	body := pipeline.CopyNode(doc.T.Spec)
	if in := pipeline.Field(ms, "templateInputs"); in != nil && in.Kind == yaml.MappingNode {
		r.diags.Add(templates.Fill(r.src, "", body, in, "templateInputs")...)
	}
	applyDefaults(body)
	for _, key := range []string{"serviceRef", "environmentRef"} {
		if v := pipeline.Field(body, key); v != nil && strings.Contains(v.Value, "<+") {
			v.Value = "" // the stage's own
		}
	}
	if open := openInputs(body, "templateInputs"); len(open) > 0 {
		r.diags.Errorf(pos, "missing-input", "template %s has no value for its runtime input %s", doc.Key(), open[0].path).
			SetHint("give it in the step's templateInputs, or a .default() in the template")
		return
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "monitoredService"}, pipeline.WithIdentity(body, doc.T.Identifier, doc.T.Name)}}
	f := &pipeline.File{Name: doc.File, Src: doc.Src, Root: root}
	if d := f.Decode(); d.HasErrors() {
		r.diags.Add(d...)
		return
	}
	refs.Monitored = r.monitoredService(f)
}

// monitoredRef is the monitored service a Verify step's spec names (Configured), or "".
func monitoredRef(spec *yaml.Node) string {
	ms := pipeline.Field(spec, "monitoredService")
	if ms == nil {
		if ref := pipeline.Field(spec, "monitoredServiceRef"); ref != nil {
			return ref.Value
		}
		return ""
	}
	if t := pipeline.Field(ms, "type"); t == nil || t.Value != "Configured" {
		return ""
	}
	if ref := pipeline.Field(pipeline.Field(ms, "spec"), "monitoredServiceRef"); ref != nil {
		return ref.Value
	}
	return ""
}
