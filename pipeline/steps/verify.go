package steps

import (
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/stepspec"
)

// VerifyTypes are the analysis types: the reference's names, and the spellings its
// documentation also uses (BlueGreen, Simple).
var VerifyTypes = []string{"Auto", "Canary", "Bluegreen", "BlueGreen", "Rolling", "LoadTest", "SimpleVerification", "Simple"}

// Sensitivities are the sensitivity values, in any case.
var Sensitivities = []string{"Low", "Medium", "High"}

// The Verify step's spec, shared with the workflow that runs it (stepspec).
type (
	Verify              = stepspec.VerifySpec
	VerifyJob           = stepspec.VerifyJob
	VerifyMonitored     = stepspec.VerifyMonitored
	VerifyMonitoredSpec = stepspec.VerifyMonitoredSpec
)

// checkVerify checks the analysis type, sensitivity and monitored service, and warns of what
// the step accepts but does not act on.
func checkVerify(v *Verify, c Checker) {
	c.Enum(v.Node, "type", string(v.Type), VerifyTypes, "verification type")
	c.Boolean(v.Node, "isMultiServicesOrEnvs", v.IsMultiServicesOrEnvs)
	c.Ignored(v.ConfigurableProperties, "configurableProperties", "the analysis starts when the step starts, with the control before the stage started")
	if j := v.Spec; j != nil {
		c.Duration(j.Node, "duration", string(j.Duration), "verification duration")
		if s := string(j.Sensitivity); s != "" && !strings.Contains(s, "<+") && !validSensitivity(s) {
			c.Enum(j.Node, "sensitivity", s, Sensitivities, "sensitivity")
		}
		c.Boolean(j.Node, "failOnNoAnalysis", string(j.FailOnNoAnalysis))
		c.Ignored(pipeline.Field(j.Node, "trafficSplitPercentage"), "trafficSplitPercentage", "the canary's traffic is whatever the deployment gave it")
		if j.Baseline == "PINNED" {
			c.Unsupported(pipeline.ValueAt(j.Node, "baseline"), "unsupported-field", "a PINNED baseline is not supported yet: Gantry compares a load test with the last successful verification (LAST)")
		} else {
			c.Enum(j.Node, "baseline", j.Baseline, []string{"LAST", "PINNED"}, "baseline")
		}
		for _, t := range j.SupportedDataTypesForVerification {
			if t == "LOG" {
				c.Ignored(pipeline.Field(j.Node, "supportedDataTypesForVerification"), "supportedDataTypesForVerification LOG", "Gantry analyses metrics (TIME_SERIES), not logs")
			}
		}
	}
	if m := v.MonitoredService; m != nil {
		c.Enum(m.Node, "type", m.Type, []string{"Default", "Configured", "Template"}, "monitored service type")
		switch m.Type {
		case "Configured":
			if m.Spec == nil || m.Spec.MonitoredServiceRef == "" {
				c.Error(m.Node, "missing-field", "a Configured monitored service needs spec.monitoredServiceRef").
					SetHint("monitoredService: {type: Configured, spec: {monitoredServiceRef: web_prod}}")
			}
		case "Template":
			if m.Spec == nil || m.Spec.MonitoredServiceTemplateRef == "" {
				c.Error(m.Node, "missing-field", "a Template monitored service needs spec.monitoredServiceTemplateRef and versionLabel").
					SetHint("monitoredService: {type: Template, spec: {monitoredServiceTemplateRef: prom_ms, versionLabel: v1, templateInputs: {...}}}")
			}
		}
	}
}

// validSensitivity reports a sensitivity in any case (the reference's YAML writes MEDIUM).
func validSensitivity(s string) bool {
	for _, v := range Sensitivities {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}
