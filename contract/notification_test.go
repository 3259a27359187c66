package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

func rule(id string, ch plan.NotificationChannel, events ...plan.NotificationEvent) plan.NotificationRule {
	return plan.NotificationRule{Identifier: id, Name: id, Events: events, Channel: ch}
}

// Spec 20.2.2: stage events match base identifiers or AllStages, StepFailed matches step base
// paths (absent, empty or AllSteps: every step), AllEvents everything.
func TestMatches(t *testing.T) {
	hook := plan.NotificationChannel{Type: "Webhook", WebhookURL: "http://h"}
	stageFail := contract.NotifyEvent{Type: contract.EventStageFailed, Stage: "deploy_1", StageBase: "deploy"}
	stepFail := contract.NotifyEvent{Type: contract.EventStepFailed, StepPath: "deploy.g.x"}
	for _, c := range []struct {
		name string
		r    plan.NotificationRule
		ev   contract.NotifyEvent
		want bool
	}{
		{"base identifier", rule("r", hook, plan.NotificationEvent{Type: "StageFailed", Stages: []string{"deploy"}}), stageFail, true},
		{"iteration identifier is not the base", rule("r", hook, plan.NotificationEvent{Type: "StageFailed", Stages: []string{"deploy_1"}}), stageFail, false},
		{"AllStages", rule("r", hook, plan.NotificationEvent{Type: "StageFailed", Stages: []string{"AllStages"}}), stageFail, true},
		{"no forStages never matches", rule("r", hook, plan.NotificationEvent{Type: "StageFailed"}), stageFail, false},
		{"other type", rule("r", hook, plan.NotificationEvent{Type: "StageSuccess", Stages: []string{"AllStages"}}), stageFail, false},
		{"step path", rule("r", hook, plan.NotificationEvent{Type: "StepFailed", Steps: []string{"deploy.g.x"}}), stepFail, true},
		{"other step", rule("r", hook, plan.NotificationEvent{Type: "StepFailed", Steps: []string{"deploy.g.y"}}), stepFail, false},
		{"every step", rule("r", hook, plan.NotificationEvent{Type: "StepFailed"}), stepFail, true},
		{"AllSteps", rule("r", hook, plan.NotificationEvent{Type: "StepFailed", Steps: []string{"AllSteps"}}), stepFail, true},
		{"AllEvents", rule("r", hook, plan.NotificationEvent{Type: "AllEvents"}), stepFail, true},
		{"pipeline type alone", rule("r", hook, plan.NotificationEvent{Type: "PipelineEnd"}), contract.NotifyEvent{Type: "PipelineEnd"}, true},
		{"a freeze's rule, its freeze", rule("r", hook, plan.NotificationEvent{Type: "DeploymentRejectedDueToFreeze", Stages: []string{"AllStages"}, Freeze: "f"}), rejected("f"), true},
		{"a freeze's rule, another freeze", rule("r", hook, plan.NotificationEvent{Type: "DeploymentRejectedDueToFreeze", Stages: []string{"AllStages"}, Freeze: "f"}), rejected("g"), false},
		{"a pipeline's AllEvents, a freeze's event", rule("r", hook, plan.NotificationEvent{Type: "AllEvents"}), rejected("f"), false},
	} {
		if got := contract.Matches(c.r, c.ev); got != c.want {
			t.Errorf("%s: Matches = %v, want %v", c.name, got, c.want)
		}
	}
}

func rejected(freeze string) contract.NotifyEvent {
	return contract.NotifyEvent{Type: contract.EventDeploymentRejected, Stage: "deploy", StageBase: "deploy", Freeze: freeze}
}

// Spec 20.3, 20.5.2, 20.5.5: one delivery per target, keys stable and distinct, fields rendered,
// secrets kept as references, a field that renders to nothing fails its target only.
func TestDeliveries(t *testing.T) {
	rules := []plan.NotificationRule{
		rule("slack", plan.NotificationChannel{Type: "Slack", WebhookURL: "https://hooks/<+team>", UserGroups: []string{"ops", "org.sre"}},
			plan.NotificationEvent{Type: "PipelineFailed"}),
		rule("hook", plan.NotificationChannel{Type: "Webhook", WebhookURL: `https://h/<+missing>`, Headers: map[string]string{"X-Token": `<+secrets.getValue("tok")>`}},
			plan.NotificationEvent{Type: "AllEvents"}),
		rule("mail", plan.NotificationChannel{Type: "Email", Recipients: []string{"a@x.io"}, UserGroups: []string{"ops"}},
			plan.NotificationEvent{Type: "PipelineEnd"}),
	}
	render := func(s string) (string, error) {
		s = strings.ReplaceAll(s, "<+team>", "payments")
		if strings.Contains(s, "<+missing>") {
			return "", errors.New("pipeline.variables.missing is not defined")
		}
		return s, nil
	}
	ev := contract.NotifyEvent{Type: contract.EventPipelineFailed, ExecutionID: "p-7", Node: "pipeline", Occurrence: 1}
	ds := contract.Deliveries(rules, ev, render)
	var keys []string
	for _, d := range ds {
		keys = append(keys, d.Key)
	}
	want := []string{"p-7:pipeline:PipelineFailed:slack:0", "p-7:pipeline:PipelineFailed:slack:1", "p-7:pipeline:PipelineFailed:slack:2", "p-7:pipeline:PipelineFailed:hook:0"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if ds[0].URL != "https://hooks/payments" || ds[1].Groups[0] != "ops" || ds[2].Groups[0] != "org.sre" {
		t.Errorf("targets: %+v", ds[:3])
	}
	if !strings.HasPrefix(ds[3].Unresolved, contract.UnresolvedExpression) || ds[3].Headers["X-Token"] != `<+secrets.getValue("tok")>` {
		t.Errorf("webhook delivery: %+v", ds[3])
	}
	if got := ds[3].Describe(); strings.Contains(got, "tok") {
		t.Errorf("Describe shows a secret reference: %s", got)
	}
	ev.Occurrence = 2
	if k := contract.Deliveries(rules[:1], ev, render)[0].Key; k != "p-7:pipeline:PipelineFailed:2:slack:0" {
		t.Errorf("second occurrence key %s", k)
	}
	mail := contract.Deliveries(rules, contract.NotifyEvent{Type: "PipelineEnd", ExecutionID: "p-7", Node: "pipeline"}, render)
	if len(mail) != 2 || mail[1].Channel != "Email" || len(mail[1].Recipients) != 1 || mail[1].Groups[0] != "ops" {
		t.Errorf("an Email rule is one delivery to its recipients and groups: %+v", mail)
	}
}
