// Notifications (spec 20): the events of an execution, the matching of notification rules
// against them, and the deliveries they cause, each with a stable idempotency key. Pure
// functions, so workflows raise events; activities/notify formats and sends the messages.

package contract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
)

// Notification event types (spec 20.2.1).
const (
	EventAllEvents            = "AllEvents"
	EventPipelineStart        = "PipelineStart"
	EventPipelineSuccess      = "PipelineSuccess"
	EventPipelineFailed       = "PipelineFailed"
	EventPipelineEnd          = "PipelineEnd"
	EventPipelinePaused       = "PipelinePaused"
	EventPipelineResumed      = "PipelineResumed"
	EventWaitingForUserAction = "WaitingForUserAction"
	EventStageStart           = "StageStart"
	EventStageSuccess         = "StageSuccess"
	EventStageFailed          = "StageFailed"
	EventStepFailed           = "StepFailed"
	EventTriggerFailed        = "TriggerFailed"
	// Deployment freezes' events: a freeze file's rules select them, never a pipeline's. A
	// Deployment stage the freeze refused; a window of it beginning; the freeze switched on.
	EventDeploymentRejected   = "DeploymentRejectedDueToFreeze"
	EventFreezeWindowEnabled  = "FreezeWindowEnabled"
	EventOnEnableFreezeWindow = "OnEnableFreezeWindow"
)

// FreezeEvent reports whether an event is a deployment freeze's.
func FreezeEvent(eventType string) bool {
	return eventType == EventDeploymentRejected || eventType == EventFreezeWindowEnabled || eventType == EventOnEnableFreezeWindow
}

// EventTypes lists the event types a rule may select, EventAllEvents first.
var EventTypes = []string{EventAllEvents, EventPipelineStart, EventPipelineSuccess, EventPipelineFailed, EventPipelineEnd, EventPipelinePaused, EventPipelineResumed,
	EventWaitingForUserAction, EventStageStart, EventStageSuccess, EventStageFailed, EventStepFailed, EventTriggerFailed}

// NotifyEvent is one thing that happened in an execution, with what messages about it tell.
type NotifyEvent struct {
	Type         string `json:"type"`
	ExecutionID  string `json:"executionId,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	Pipeline     string `json:"pipeline"`
	PipelineName string `json:"pipelineName,omitempty"`
	Org          string `json:"org,omitempty"`
	Project      string `json:"project,omitempty"`
	SequenceID   int    `json:"sequenceId,omitempty"`
	// Node is the node execution the event is about: "pipeline", a stage's or a step's path.
	Node string `json:"node"`
	// Occurrence tells apart events of one type on one node (retried attempts, repeated waits).
	Occurrence int    `json:"occurrence,omitempty"`
	Stage      string `json:"stage,omitempty"`     // the stage (iteration) identifier
	StageName  string `json:"stageName,omitempty"` // its name
	StageBase  string `json:"stageBase,omitempty"` // the identifier written in the YAML
	Step       string `json:"step,omitempty"`
	StepName   string `json:"stepName,omitempty"`
	StepType   string `json:"stepType,omitempty"`
	// StepPath is the step's base path (stage, groups, step; loop postfixes omitted).
	StepPath string        `json:"stepPath,omitempty"`
	Status   status.Status `json:"status"`
	Start    time.Time     `json:"start"`
	End      *time.Time    `json:"end,omitempty"`
	Category string        `json:"category,omitempty"`
	Error    string        `json:"error,omitempty"` // masked failure message(s)
	// Trigger is who or what started the execution.
	TriggerType string `json:"triggerType,omitempty"`
	TriggeredBy string `json:"triggeredBy,omitempty"`
	TriggerMail string `json:"triggerEmail,omitempty"`
	AbortedBy   string `json:"abortedBy,omitempty"`
	Mode        string `json:"mode,omitempty"` // NORMAL or PIPELINE_ROLLBACK
	// Action is, for EventWaitingForUserAction, the command that acts on the wait.
	Action string `json:"action,omitempty"`
	// TriggerID and TriggerName name the trigger of a EventTriggerFailed event.
	TriggerID   string `json:"triggerId,omitempty"`
	TriggerName string `json:"triggerName,omitempty"`
	// Freeze is the deployment freeze that refused the stage (EventDeploymentRejected).
	Freeze string `json:"freeze,omitempty"`
}

// EventLevel is the level of an event type: pipeline, stage, step or trigger.
func EventLevel(eventType string) string {
	switch eventType {
	case EventStageStart, EventStageSuccess, EventStageFailed, EventDeploymentRejected:
		return "stage"
	case EventStepFailed, EventWaitingForUserAction:
		return "step"
	case EventTriggerFailed:
		return "trigger"
	}
	return "pipeline"
}

// Matches reports whether a rule selects an event (spec 20.2.2).
func Matches(r plan.NotificationRule, ev NotifyEvent) bool {
	for _, e := range r.Events {
		switch {
		case e.Type == EventAllEvents:
			if !FreezeEvent(ev.Type) { // a pipeline's events, not a freeze's
				return true
			}
		case e.Type != ev.Type, e.Freeze != "" && e.Freeze != ev.Freeze:
			continue
		case EventLevel(e.Type) == "stage":
			if slices.Contains(e.Stages, "AllStages") || slices.Contains(e.Stages, ev.StageBase) {
				return true
			}
		case e.Type == EventStepFailed:
			if len(e.Steps) == 0 || slices.Contains(e.Steps, "AllSteps") || slices.Contains(e.Steps, ev.StepPath) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// Wants reports whether any rule could select events of a level, so an engine can skip
// preparing events nobody asked for.
func Wants(rules []plan.NotificationRule, level string) bool {
	for _, r := range rules {
		for _, e := range r.Events {
			if e.Type == EventAllEvents || EventLevel(e.Type) == level {
				return true
			}
		}
	}
	return false
}

// Delivery is one message to one target of one rule about one event (spec 20.5). Its target
// fields are rendered, with secrets still references: only a delivery attempt resolves them.
type Delivery struct {
	Key      string `json:"key"`
	Rule     string `json:"rule"`
	RuleName string `json:"ruleName,omitempty"`
	Target   int    `json:"target"`
	Channel  string `json:"channel"`
	URL      string `json:"url,omitempty"` // webhook URL (Slack, Teams, Webhook) or Datadog endpoint
	// Headers are extra request headers (Webhook, Datadog).
	Headers    map[string]string `json:"headers,omitempty"`
	Recipients []string          `json:"recipients,omitempty"` // Email
	// Groups are user groups resolved when sending: every group of an Email rule, or the one
	// group this target is for.
	Groups []string `json:"groups,omitempty"`
	// Key is PagerDuty's routing key or Datadog's API key.
	RoutingKey string      `json:"routingKey,omitempty"`
	Selectors  []string    `json:"selectors,omitempty"`
	Event      NotifyEvent `json:"event"`
	// Unresolved, when set, says why the delivery fails without being sent: a target field
	// that rendered to nothing (UNRESOLVED_EXPRESSION).
	Unresolved string `json:"unresolved,omitempty"`
}

// UnresolvedExpression is the failure of a delivery whose target did not render.
const UnresolvedExpression = "UNRESOLVED_EXPRESSION"

// secretMask replaces secrets in text (as activities/secrets does).
const secretMask = "**************"

var secretRefRe = regexp.MustCompile(`<\+secrets\.getValue\("([^"]+)"\)>`)

// Target describes where a delivery goes, with secrets masked, for records and logs.
func (d Delivery) Describe() string {
	var what string
	switch {
	case d.Channel == "Email":
		what = strings.Join(append(append([]string(nil), d.Recipients...), groupNames(d.Groups)...), ", ")
	case len(d.Groups) > 0:
		what = groupNames(d.Groups)[0]
	case d.Channel == "PagerDuty":
		what = "routing key " + secretMask
	default:
		what = d.URL
	}
	return d.Channel + " " + MaskRefs(what)
}

func groupNames(gs []string) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = "group " + g
	}
	return out
}

// MaskRefs replaces secret references in text with the mask.
func MaskRefs(s string) string { return secretRefRe.ReplaceAllString(s, secretMask) }

// Deliveries are the deliveries an event causes under rules: one per target of every rule
// that matches. render renders a field's expressions in the scope of the node that raised the
// event (secret references stay references).
func Deliveries(rules []plan.NotificationRule, ev NotifyEvent, render func(string) (string, error)) []Delivery {
	var out []Delivery
	for _, r := range rules {
		if !Matches(r, ev) {
			continue
		}
		for i, d := range notifyTargets(r.Channel) {
			d.Rule, d.RuleName, d.Target, d.Channel, d.Event = r.Identifier, r.Name, i, r.Channel.Type, ev
			d.Selectors = r.Channel.Selectors
			d.Key = deliveryKey(ev, r.Identifier, i)
			d.Unresolved = d.render(render)
			out = append(out, d)
		}
	}
	return out
}

// deliveryKey is the delivery's idempotency key:
// <executionId>:<node>:<eventType>[:<occurrence>]:<rule>:<target> (spec 20.5).
func deliveryKey(ev NotifyEvent, rule string, target int) string {
	k := ev.ExecutionID + ":" + ev.Node + ":" + ev.Type
	if ev.Occurrence > 1 {
		k += fmt.Sprintf(":%d", ev.Occurrence)
	}
	return fmt.Sprintf("%s:%s:%d", k, rule, target)
}

// notifyTargets splits a channel into its targets (spec 20.3): its own URL, key or addresses, then
// one per user group (e-mail sends one message to every address).
func notifyTargets(ch plan.NotificationChannel) []Delivery {
	var out []Delivery
	perGroup := func() {
		for _, g := range ch.UserGroups {
			out = append(out, Delivery{Groups: []string{g}})
		}
	}
	switch ch.Type {
	case "Email":
		out = append(out, Delivery{Recipients: ch.Recipients, Groups: ch.UserGroups})
	case "Slack":
		if ch.WebhookURL != "" {
			out = append(out, Delivery{URL: ch.WebhookURL})
		}
		perGroup()
	case "MsTeams":
		for _, u := range ch.MsTeamKeys {
			out = append(out, Delivery{URL: u})
		}
		perGroup()
	case "PagerDuty":
		if ch.IntegrationKey != "" {
			out = append(out, Delivery{RoutingKey: ch.IntegrationKey})
		}
		perGroup()
	case "Webhook":
		out = append(out, Delivery{URL: ch.WebhookURL, Headers: ch.Headers})
	case "Datadog":
		out = append(out, Delivery{URL: ch.URL, RoutingKey: ch.APIKey, Headers: ch.Headers})
	}
	return out
}

// render renders the target fields in place and returns why one did not resolve, or "".
func (d *Delivery) render(render func(string) (string, error)) string {
	var problems []string
	one := func(field, v string) string {
		if v == "" {
			return ""
		}
		out, err := render(v)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", field, err))
		case strings.TrimSpace(out) == "" || out == "null":
			problems = append(problems, fmt.Sprintf("%s %q rendered to nothing", field, MaskRefs(v)))
		}
		return strings.TrimSpace(out)
	}
	d.URL = one("url", d.URL)
	d.RoutingKey = one("key", d.RoutingKey)
	if len(d.Headers) > 0 {
		h := make(map[string]string, len(d.Headers))
		for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
			h[k] = one("header "+k, d.Headers[k])
		}
		d.Headers = h
	}
	var rcpt []string
	for _, r := range d.Recipients {
		if v := one("recipient", r); v != "" {
			rcpt = append(rcpt, v)
		}
	}
	d.Recipients = rcpt
	if len(problems) == 0 {
		return ""
	}
	return UnresolvedExpression + ": " + MaskRefs(strings.Join(problems, "; "))
}

// DeliveryFailure is what a failed delivery attempt tells the notifier workflow, as the
// details of its error.
type DeliveryFailure struct {
	Retryable  bool          `json:"retryable"`
	Code       int           `json:"code,omitempty"`
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// DeliveryResult is a delivered message: the receiver's status code and what is worth
// recording of its answer.
type DeliveryResult struct {
	Code   int    `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}
