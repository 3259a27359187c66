package entities_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

const promConnector = `connector:
  name: Prometheus
  identifier: prom
  type: Prometheus
  spec:
    url: http://127.0.0.1:9090/
    username: reader
    passwordRef: prom_password
    headers:
      - key: X-Scope-OrgID
        value: team-a
        valueEncrypted: false
`

const webProd = `monitoredService:
  name: web prod
  identifier: web_prod
  type: Application
  serviceRef: web
  environmentRef: prod
  sources:
    healthSources:
      - name: Prometheus
        identifier: prom_metrics
        type: Prometheus
        spec:
          connectorRef: prom
          feature: apm
          metricDefinitions:
            - identifier: errors
              metricName: Error rate
              groupName: web
              query: sum by (pod) (rate(http_requests_total{code=~"5.."}[1m]))
              analysis:
                deploymentVerification:
                  enabled: true
                  serviceInstanceFieldName: pod
                riskProfile:
                  riskCategory: Errors
                  thresholdTypes: [ACT_WHEN_HIGHER]
            - metricName: Requests
              prometheusMetric: http_requests_total
              serviceFilter: [{labelName: app, labelValue: web}]
              aggregation: sum
              riskProfile:
                category: Performance
                thresholdTypes: [ACT_WHEN_LOWER]
          metricPacks:
            - identifier: Custom
              metricThresholds:
                - type: IgnoreThreshold
                  spec: {action: Ignore}
                  criteria: {type: Absolute, spec: {lessThan: 0.01}}
                  metricType: Custom
                  metricIdentifier: errors
                - type: FailImmediately
                  spec: {action: FailAfterConsecutiveOccurrence, spec: {count: 2}}
                  criteria: {type: Percentage, spec: {greaterThan: 200}}
                  metricType: Custom
                  metricIdentifier: errors
    changeSources:
      - name: Harness CD
        identifier: harness_cd
        type: HarnessCDNextGen
        enabled: true
        spec: {}
        category: Deployment
`

const verifyPipeline = `pipeline:
  name: Verified
  identifier: verified
  stages:
    - stage:
        name: Deploy prod
        identifier: deploy_prod
        type: Deployment
        spec:
          deploymentType: Kubernetes
          service:
            serviceRef: web
          environment:
            environmentRef: prod
            infrastructureDefinitions:
              - identifier: prod_cluster
          execution:
            steps:
              - step:
                  type: Verify
                  name: Verify
                  identifier: verify
                  timeout: 2h
                  spec:
                    isMultiServicesOrEnvs: false
                    type: Canary
                    monitoredService:
                      type: Default
                      spec: {}
                    spec:
                      sensitivity: MEDIUM
                      duration: 5m
                      deploymentTag: <+serviceConfig.artifacts.primary.tag>
                      failOnNoAnalysis: true
            rollbackSteps: []
        failureStrategies:
          - onFailure:
              errors: [AllErrors]
              action:
                type: StageRollback
`

// A Verify step reads the monitored service of its stage's service and environment, resolved
// before the run with its connector, metrics (a built query among them) and thresholds.
func TestVerifyResolvesMonitoredService(t *testing.T) {
	dir := copyExample(t, map[string]string{"prom.yaml": promConnector, "web-prod.yaml": webProd, "verify.yaml": verifyPipeline})
	r, err := load.File(filepath.Join(dir, "verify.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	if out := r.Diags.Render(r.Sources); !strings.Contains(out, "changeSources is ignored") {
		t.Errorf("no warning that change sources are not read:\n%s", out)
	}
	ms := r.Plan.Stages[0].Deploy.Monitored
	if ms == nil || ms.ID != "web_prod" || len(ms.Sources) != 1 {
		t.Fatalf("monitored service %+v", ms)
	}
	src := ms.Sources[0]
	if src.Prometheus.URL != "http://127.0.0.1:9090/" || src.Prometheus.PasswordRef != "prom_password" || len(src.Prometheus.Headers) != 1 {
		t.Errorf("connector %+v", src.Prometheus)
	}
	if len(src.Metrics) != 2 || src.Metrics[0].InstanceLabel != "pod" || !src.Metrics[0].Higher || src.Metrics[0].Category != "Errors" {
		t.Fatalf("metrics %+v", src.Metrics)
	}
	if m := src.Metrics[1]; m.ID != "Requests" || m.Query != `sum(http_requests_total{app="web"})` || !m.Lower {
		t.Errorf("built metric %+v", m)
	}
	if len(src.Thresholds) != 2 || src.Thresholds[0].Kind != "Ignore" || *src.Thresholds[0].LessThan != 0.01 ||
		src.Thresholds[1].Action != "FailAfterConsecutiveOccurrence" || src.Thresholds[1].Count != 2 || !src.Thresholds[1].Percentage {
		t.Errorf("thresholds %+v", src.Thresholds)
	}
	// A Configured monitored service is resolved onto the step.
	configured := strings.Replace(verifyPipeline, "type: Default\n                      spec: {}", "type: Configured\n                      spec: {monitoredServiceRef: web_prod}", 1)
	dir = copyExample(t, map[string]string{"prom.yaml": promConnector, "web-prod.yaml": strings.Replace(webProd, "environmentRef: prod", "environmentRef: dev", 1), "verify.yaml": configured})
	r, err = load.File(filepath.Join(dir, "verify.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	step := r.Plan.Stages[0].Children[0]
	if step.Refs == nil || step.Refs.Monitored == nil || step.Refs.Monitored.ID != "web_prod" {
		t.Fatalf("configured step refs %+v", step.Refs)
	}
}

const msTemplate = `template:
  name: Prometheus monitored service
  identifier: prom_ms
  versionLabel: v1
  type: MonitoredService
  spec:
    serviceRef: <+input>
    environmentRef: <+input>
    type: Application
    sources:
      healthSources:
        - name: Prometheus
          identifier: prom_metrics
          type: Prometheus
          spec:
            connectorRef: <+input>
            metricDefinitions:
              - identifier: errors
                metricName: Errors
                query: sum by (pod) (rate(http_requests_total{code=~"5.."}[1m]))
                riskProfile: {category: Errors, thresholdTypes: [ACT_WHEN_HIGHER]}
`

// A Template monitored service is the template's spec with the step's templateInputs filled
// in; its service and environment, given as expressions, are the stage's.
func TestVerifyMonitoredServiceTemplate(t *testing.T) {
	step := strings.Replace(verifyPipeline, "type: Default\n                      spec: {}", `type: Template
                      spec:
                        monitoredServiceTemplateRef: account.prom_ms
                        versionLabel: v1
                        templateInputs:
                          serviceRef: <+service.identifier>
                          environmentRef: <+env.identifier>
                          sources:
                            healthSources:
                              - identifier: prom_metrics
                                type: Prometheus
                                spec: {connectorRef: prom}`, 1)
	dir := copyExample(t, map[string]string{"prom.yaml": promConnector, "ms-template.yaml": msTemplate, "verify.yaml": step})
	r, err := load.File(filepath.Join(dir, "verify.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	ms := r.Plan.Stages[0].Children[0].Refs.Monitored
	if ms == nil || ms.ID != "prom_ms" || len(ms.Sources) != 1 || ms.Sources[0].Prometheus.URL != "http://127.0.0.1:9090/" ||
		len(ms.Sources[0].Metrics) != 1 || !ms.Sources[0].Metrics[0].Higher {
		t.Fatalf("monitored service from the template: %+v", ms)
	}
}

// Broken monitored services and Verify steps are errors at their line; other health sources
// are unsupported by name.
func TestVerifyErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
		ok    bool // unsupported, not broken
	}{
		{"bad PromQL", map[string]string{"web-prod.yaml": strings.Replace(webProd, `[1m]))`, `[1m]`, 1)}, "web-prod.yaml:19:22: metric errors: the query is not valid PromQL", false},
		{"empty metrics", map[string]string{"web-prod.yaml": webProd[:strings.Index(webProd, "          metricDefinitions:")] + "          metricDefinitions: []\n"}, "web-prod.yaml:15:30: the Prometheus health source lists no metrics", false},
		{"missing connector", map[string]string{"prom.yaml": ""}, `web-prod.yaml:13:25: connector "prom" is not defined`, false},
		{"no monitored service", map[string]string{"web-prod.yaml": ""}, "verify.yaml:20:19: step verify verifies service web in environment prod, which no monitored service watches", false},
		{"configured not found", map[string]string{"verify.yaml": strings.Replace(verifyPipeline, "type: Default\n                      spec: {}", "type: Configured\n                      spec: {monitoredServiceRef: nope}", 1)}, `monitored service "nope" is not defined`, false},
		{"unknown threshold metric", map[string]string{"web-prod.yaml": strings.Replace(webProd, "metricIdentifier: errors\n                - type: FailImmediately", "metricIdentifier: nope\n                - type: FailImmediately", 1)}, `names metric "nope"`, false},
		{"count missing", map[string]string{"web-prod.yaml": strings.Replace(webProd, ", spec: {count: 2}}", "}", 1)}, "needs a count of at least 1", false},
		{"verification type", map[string]string{"verify.yaml": strings.Replace(verifyPipeline, "type: Canary", "type: Kanary", 1)}, `verification type "Kanary" is not one of`, false},
		{"sensitivity", map[string]string{"verify.yaml": strings.Replace(verifyPipeline, "MEDIUM", "EXTREME", 1)}, `sensitivity "EXTREME" is not one of`, false},
		{"Datadog", map[string]string{"web-prod.yaml": strings.Replace(webProd, "type: Prometheus\n        spec:", "type: DatadogMetrics\n        spec:", 1)}, "health source type DatadogMetrics: Gantry does not use it yet", true},
		{"template not found", map[string]string{"verify.yaml": strings.Replace(verifyPipeline, "type: Default\n                      spec: {}", "type: Template\n                      spec: {monitoredServiceTemplateRef: nope, versionLabel: v1, templateInputs: {}}", 1)}, "the Verify step's monitored service: template nope", false},
		{"template input missing", map[string]string{"ms-template.yaml": msTemplate, "verify.yaml": strings.Replace(verifyPipeline, "type: Default\n                      spec: {}", "type: Template\n                      spec: {monitoredServiceTemplateRef: account.prom_ms, versionLabel: v1, templateInputs: {}}", 1)},
			"template prom_ms@v1 has no value for its runtime input templateInputs.sources.healthSources", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"prom.yaml": promConnector, "web-prod.yaml": webProd, "verify.yaml": verifyPipeline}
			for k, v := range c.files {
				files[k] = v
			}
			dir := copyExample(t, files)
			r, err := load.File(filepath.Join(dir, "verify.yaml"), load.Options{ForRun: true})
			if err != nil {
				t.Fatal(err)
			}
			out := r.Diags.Render(r.Sources)
			if r.OK() || !strings.Contains(out, c.want) {
				t.Fatalf("want %q, got OK=%v\n%s", c.want, r.OK(), out)
			}
			if c.ok && len(r.Diags.Invalid()) > 0 {
				t.Errorf("valid reference YAML reported broken:\n%s", out)
			}
		})
	}
}
