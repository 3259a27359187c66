package entities_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

const prodFreeze = `freeze:
  name: Year end
  identifier: year_end
  entityConfigs:
    - name: production only
      entities:
        - {type: Org, filterType: All}
        - {type: Project, filterType: All}
        - {type: Service, filterType: Equals, entityRefs: [web]}
        - {type: EnvType, filterType: Equals, entityRefs: [Production]}
  status: Enabled
  windows:
    - timeZone: Europe/Berlin
      startTime: 2026-12-20 06:00 PM
      endTime: 2027-01-02 08:00 AM
      recurrence:
        type: Yearly
`

// A freeze whose rules match a Deployment stage reaches its plan; one that matches another
// environment type, or is disabled, does not.
func TestFreezeMatchesDeployments(t *testing.T) {
	dir := copyExample(t, map[string]string{"freeze.yaml": prodFreeze,
		"freeze-off.yaml": strings.NewReplacer("year_end", "off", "status: Enabled", "status: Disabled").Replace(prodFreeze)})
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	dev, prod := r.Plan.Stages[0].Deploy, r.Plan.Stages[2].Deploy
	if len(dev.Freezes) != 0 {
		t.Errorf("the PreProduction stage has freezes %+v", dev.Freezes)
	}
	if len(prod.Freezes) != 1 || prod.Freezes[0].ID != "year_end" || len(prod.Freezes[0].Windows) != 1 {
		t.Fatalf("the Production stage's freezes: %+v", prod.Freezes)
	}
	w := prod.Freezes[0].Windows[0]
	if w.Recurrence != "Yearly" || w.Duration.Hours() != 12*24+14 || w.Start.Hour() != 17 {
		t.Errorf("window %+v", w)
	}
}

// Broken freeze files are errors at the line of what is wrong.
func TestFreezeErrors(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown zone", "Europe/Berlin", "Europe/Atlantis", `freeze.yaml:13:17: unknown time zone "Europe/Atlantis"`},
		{"end before start", "2027-01-02 08:00 AM", "2026-12-19 08:00 AM", "freeze.yaml:15:16: endTime 2026-12-19 08:00 AM is not after startTime"},
		{"bad start", "2026-12-20 06:00 PM", "20.12.2026", `freeze.yaml:14:18: startTime: "20.12.2026" is not a time`},
		{"both ends", "      endTime:", "      duration: 2h\n      endTime:", "needs exactly one of duration and endTime"},
		{"recurrence type", "type: Yearly", "type: Hourly", "freeze.yaml:17:15:"},
		{"until before start", "type: Yearly", "type: Yearly\n        spec: {until: 2025-01-01 10:00 AM}", "freeze.yaml:18:23: the recurrence ends"},
		{"no windows", "  windows:\n", "  windows: []\n  x_windows:\n", "is enabled but has no windows"},
		{"equals without refs", "entityRefs: [web]", "entityRefs: []", "lists no entityRefs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(prodFreeze, c.old, c.new, 1)
			if c.name == "no windows" {
				text = prodFreeze[:strings.Index(prodFreeze, "  windows:")] + "  windows: []\n"
			}
			dir := copyExample(t, map[string]string{"freeze.yaml": text})
			r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
			if err != nil {
				t.Fatal(err)
			}
			out := r.Diags.Render(r.Sources)
			if r.OK() || !strings.Contains(out, c.want) {
				t.Errorf("want an error %q, got OK=%v\n%s", c.want, r.OK(), out)
			}
		})
	}
}

// A freeze's notification rules: DeploymentRejectedDueToFreeze rules reach the plan's rules
// once, selecting only this freeze's events; an unknown event type is an error at its line.
func TestFreezeNotificationRules(t *testing.T) {
	rules := `  notificationRules:
    - name: ops
      identifier: ops
      enabled: true
      events: [{type: DeploymentRejectedDueToFreeze}, {type: FreezeWindowEnabled}]
      notificationMethod: {type: Webhook, spec: {webhookUrl: "http://127.0.0.1:9/hook"}}
    - name: off
      identifier: off
      enabled: false
      events: [{type: DeploymentRejectedDueToFreeze}]
      notificationMethod: {type: Webhook, spec: {webhookUrl: "http://127.0.0.1:9/off"}}
`
	dir := copyExample(t, map[string]string{"freeze.yaml": prodFreeze + rules})
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	var found int
	for _, rule := range r.Plan.Notifications {
		if strings.HasPrefix(rule.Identifier, "freeze.") {
			found++
			if rule.Identifier != "freeze.year_end.ops" || len(rule.Events) != 1 || rule.Events[0].Type != "DeploymentRejectedDueToFreeze" ||
				rule.Events[0].Freeze != "year_end" || rule.Channel.WebhookURL != "http://127.0.0.1:9/hook" {
				t.Errorf("freeze rule %+v", rule)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d freeze rules in the plan, want the one enabled", found)
	}
	if fs := r.Plan.Stages[2].Deploy.Freezes; len(fs) != 1 || fs[0].Rules != nil {
		t.Errorf("the stage's freeze still carries its rules: %+v", fs)
	}
	if len(r.Diags) != 0 {
		t.Errorf("diagnostics:\n%s", r.Diags.Render(r.Sources))
	}
	dir = copyExample(t, map[string]string{"freeze.yaml": prodFreeze + strings.Replace(rules, "FreezeWindowEnabled", "FreezeEnded", 1)})
	r, _ = load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if out := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(out, "freeze.yaml:22:") || !strings.Contains(out, "FreezeEnded") {
		t.Errorf("an unknown freeze event:\n%s", out)
	}
}
