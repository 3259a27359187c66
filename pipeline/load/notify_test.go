package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

const notifyPipeline = `pipeline:
  name: release
  identifier: release
  variables:
    - {name: team, type: String, value: payments}
  notificationRules:
RULES
  stages:
    - stage:
        name: s1
        identifier: s1
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        strategy: {matrix: {r: [eu, us]}}
        spec:
          execution:
            steps:
              - stepGroup:
                  name: g
                  identifier: g
                  steps:
                    - step: {type: ShellScript, name: x, identifier: x, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "true"}}}}
`

func loadRules(t *testing.T, rules string) *load.Result {
	t.Helper()
	return load.Bytes("p.yaml", []byte(strings.Replace(notifyPipeline, "RULES", rules, 1)), load.Options{ForRun: true})
}

// Spec 20.1: rules are parsed strictly, compiled into the plan when enabled, and every save
// check of the spec is an error, a warning or unsupported at the rule's own position.
func TestNotificationRules(t *testing.T) {
	r := loadRules(t, `    - name: release failures
      identifier: release_failures
      enabled: true
      pipelineEvents:
        - type: PipelineFailed
        - {type: StageFailed, forStages: [deploy, s1]}
        - {type: StepFailed, forSteps: [deploy.g.x]}
      notificationMethod:
        type: Webhook
        spec:
          webhookUrl: https://hooks.example.internal/cd/<+pipeline.variables.team>
          headers: {Authorization: 'Bearer <+secrets.getValue("cd_hook_token")>'}
    - name: off
      identifier: off_rule
      enabled: false
      pipelineEvents: [{type: AllEvents}]
      notificationMethod: {type: Email, spec: {recipients: [ops@example.org]}}`)
	if !r.OK() || len(r.Diags) != 0 {
		t.Fatalf("%s", r.Diags.Render(r.Sources))
	}
	rules := r.Plan.Notifications
	if len(rules) != 1 || rules[0].Identifier != "release_failures" || rules[0].Channel.Type != "Webhook" ||
		rules[0].Events[2].Steps[0] != "deploy.g.x" || rules[0].Channel.Headers["Authorization"] == "" {
		t.Fatalf("plan rules: %+v", rules)
	}
	for name, c := range map[string]struct {
		rules, code string
		sev         diag.Severity
		line        int
	}{
		"no enabled (C110)": {`    - {name: r, identifier: r, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"rule-disabled", diag.Warning, 7},
		"unknown stage (C111)": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: StageFailed, forStages: [nope]}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"unknown-stage", diag.Warning, 7}, // issue 50: the reference keeps such rules
		"stage event without forStages (C111)": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: StageStart}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"no-stages", diag.Warning, 7}, // the reference keeps such rules, which never fire
		"runtime input (C115)": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: <+input>}}}`,
			"runtime-input", diag.Error, 7},
		"forSteps on a stage event": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: StageFailed, forStages: [AllStages], forSteps: [s1.a]}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"event-filter", diag.Error, 7},
		"forStages on a pipeline event": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd, forStages: [s1]}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"event-filter", diag.Error, 7},
		"unknown step": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: StepFailed, forSteps: [deploy.x]}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"unknown-step", diag.Warning, 7},
		"unknown event": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineFail}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"event-type", diag.Error, 7},
		"no target": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Email, spec: {}}}`,
			"missing-field", diag.Error, 7},
		"field of another channel": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Email, spec: {recipients: [a@b.c], webhookUrl: "http://h"}}}`,
			"unknown-key", diag.Warning, 7},
		"datadog needs an apiKey": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Datadog, spec: {url: "https://api.datadoghq.com/api/v1/events"}}}`,
			"missing-field", diag.Error, 7},
		"not a URL": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Slack, spec: {webhookUrl: "hooks/x"}}}`,
			"url", diag.Error, 7},
		"custom template": {`    - {name: r, identifier: r, enabled: true, template: {templateRef: t, versionLabel: v1}, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"unsupported-notification-template", diag.Unsupported, 7},
		"identifier required": {`    - {name: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"missing-field", diag.Error, 7},
		"duplicate identifier": {`    - {name: r, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}
    - {name: r2, identifier: r, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "http://h"}}}`,
			"duplicate-identifier", diag.Error, 8},
	} {
		r := loadRules(t, c.rules)
		found := codes(r.Diags, c.sev, c.code)
		if len(found) == 0 || found[0].Pos.Line != c.line {
			t.Errorf("%s: want %s %s at line %d, got:\n%s", name, c.sev, c.code, c.line, r.Diags.Render(r.Sources))
		}
	}
}
