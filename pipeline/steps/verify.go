package steps

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
)

// Verify judges a deployment by its metrics: for its duration it reads the monitored service's
// health sources for the new instances and a control, and fails when they regressed
// (docs/verification.md).
type Verify struct {
	Node             *yaml.Node       `yaml:"-"`
	Type             string           `yaml:"type" gantry:"required"`
	Spec             *VerifyJob       `yaml:"spec" gantry:"required"`
	MonitoredService *VerifyMonitored `yaml:"monitoredService"`
	// MonitoredServiceRef is how older pipelines named a Configured monitored service.
	MonitoredServiceRef    string     `yaml:"monitoredServiceRef"`
	ConfigurableProperties *yaml.Node `yaml:"configurableProperties"`
	IsMultiServicesOrEnvs  string     `yaml:"isMultiServicesOrEnvs"`
}

// VerifyJob is how a Verify step analyses: for how long, how sensitively, and what happens
// when there is nothing to analyse.
type VerifyJob struct {
	Node                              *yaml.Node `yaml:"-"`
	Duration                          string     `yaml:"duration" gantry:"required"`
	Sensitivity                       string     `yaml:"sensitivity"`
	DeploymentTag                     string     `yaml:"deploymentTag"`
	FailOnNoAnalysis                  string     `yaml:"failOnNoAnalysis"`
	TrafficSplitPercentage            string     `yaml:"trafficSplitPercentage"`
	Baseline                          string     `yaml:"baseline"`
	SupportedDataTypesForVerification []string   `yaml:"supportedDataTypesForVerification"`
}

// VerifyMonitored names the monitored service: Default (the one of the stage's service and
// environment), Configured (by identifier) or Template.
type VerifyMonitored struct {
	Node *yaml.Node           `yaml:"-"`
	Type string               `yaml:"type" gantry:"required"`
	Spec *VerifyMonitoredSpec `yaml:"spec"`
}

// VerifyMonitoredSpec is the monitored service of a Configured or Template choice.
type VerifyMonitoredSpec struct {
	Node                        *yaml.Node `yaml:"-"`
	MonitoredServiceRef         string     `yaml:"monitoredServiceRef"`
	Branch                      string     `yaml:"branch"`
	MonitoredServiceTemplateRef string     `yaml:"monitoredServiceTemplateRef"`
	VersionLabel                string     `yaml:"versionLabel"`
	Label                       string     `yaml:"label"`
	TemplateInputs              *yaml.Node `yaml:"templateInputs"`
}

// VerifyTypes are the analysis types: the reference's names, and the spellings its
// documentation also uses (BlueGreen, Simple).
var VerifyTypes = []string{"Auto", "Canary", "Bluegreen", "BlueGreen", "Rolling", "LoadTest", "SimpleVerification", "Simple"}

// Sensitivities are the sensitivity values, in any case.
var Sensitivities = []string{"Low", "Medium", "High"}

// Check checks the analysis type, sensitivity and monitored service, and warns of what the
// step accepts but does not act on.
func (v *Verify) Check(c Checker) {
	c.Enum(v.Node, "type", v.Type, VerifyTypes, "verification type")
	c.Boolean(v.Node, "isMultiServicesOrEnvs", v.IsMultiServicesOrEnvs)
	c.Ignored(v.ConfigurableProperties, "configurableProperties", "the analysis starts when the step starts, with the control before the stage started")
	if j := v.Spec; j != nil {
		c.Duration(j.Node, "duration", j.Duration, "verification duration")
		if s := j.Sensitivity; s != "" && !strings.Contains(s, "<+") && !validSensitivity(s) {
			c.Enum(j.Node, "sensitivity", s, Sensitivities, "sensitivity")
		}
		c.Boolean(j.Node, "failOnNoAnalysis", j.FailOnNoAnalysis)
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
