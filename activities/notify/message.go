package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/status"
)

// NodeStatus is the status word of spec 20.4.1 for an event.
func NodeStatus(ev contract.NotifyEvent) string {
	if ev.Type == contract.EventPipelineResumed {
		return "resumed"
	}
	switch ev.Status {
	case status.Succeeded, status.IgnoreFailed:
		return "completed"
	case status.Failed, status.Errored, status.FreezeFailed:
		return "failed"
	case status.Aborted:
		return "aborted"
	case status.ApprovalRejected:
		return "rejected"
	case status.Expired:
		return "expired"
	case status.Paused:
		return "paused"
	case status.InterventionWaiting, status.ApprovalWaiting, status.InputWaiting:
		return "action_required"
	}
	return "started"
}

// timeText renders a time the way the reference's examples do (EEE MMM dd HH:mm:ss zzz yyyy),
// always in GMT.
func timeText(t time.Time) string { return t.UTC().Format("Mon Jan 02 15:04:05 GMT 2006") }

// Links are the UI pages a message links to; empty without a configured UI.
type Links struct {
	Execution string
	Pipeline  string
}

// LinksFor builds the UI links of an event from the UI's base URL.
func LinksFor(uiURL string, ev contract.NotifyEvent) Links {
	if uiURL == "" || (ev.Pipeline == "" && ev.Freeze != "") { // a freeze's own event has no page
		return Links{}
	}
	ns := ev.Namespace
	if ns == "" {
		ns = "default"
	}
	base := strings.TrimSuffix(uiURL, "/") + "/namespaces/" + url.PathEscape(ns) + "/workflows"
	l := Links{Pipeline: base + "?query=" + url.QueryEscape(fmt.Sprintf("GantryPipeline=%q", ev.Pipeline))}
	if ev.ExecutionID != "" {
		l.Execution = base + "/" + url.PathEscape(ev.ExecutionID)
	}
	return l
}

// WebhookPayload is the body of the Webhook channel: {"eventData": {...}} (spec 20.4.1).
func WebhookPayload(ev contract.NotifyEvent, links Links) map[string]any {
	d := map[string]any{
		"accountIdentifier":  ev.Namespace,
		"orgIdentifier":      ev.Org,
		"projectIdentifier":  ev.Project,
		"pipelineIdentifier": ev.Pipeline,
		"pipelineName":       ev.PipelineName,
		"eventType":          ev.Type,
		"startTime":          timeText(ev.Start),
		"startTs":            ev.Start.Unix(),
	}
	if ev.End != nil {
		d["endTime"], d["endTs"] = timeText(*ev.End), ev.End.Unix()
	}
	if ev.Error != "" {
		d["errorMessage"] = ev.Error
	}
	if ev.Type == contract.EventTriggerFailed {
		d["triggerIdentifier"], d["triggerName"], d["triggerType"] = ev.TriggerID, ev.TriggerName, ev.TriggerType
		return map[string]any{"eventData": d}
	}
	d["planExecutionId"] = ev.ExecutionID
	d["executionUrl"], d["pipelineUrl"] = links.Execution, links.Pipeline
	d["nodeStatus"] = NodeStatus(ev)
	d["triggeredBy"] = map[string]any{"triggerType": ev.TriggerType, "name": ev.TriggeredBy, "email": ev.TriggerMail}
	d["executionMode"] = ev.Mode
	d["moduleInfo"] = map[string]any{}
	if ev.Stage != "" {
		d["stageIdentifier"], d["stageName"] = ev.Stage, ev.StageName
	}
	if ev.Step != "" {
		d["stepIdentifier"], d["stepName"] = ev.Step, ev.StepName
	}
	if ev.Freeze != "" {
		d["freezeIdentifier"] = ev.Freeze
	}
	return map[string]any{"eventData": d}
}

// fact is one labelled line of a message.
type fact struct{ Name, Value string }

// summary is what every channel's message says (spec 20.4.2), in one shape.
type summary struct {
	Title  string // "PipelineFailed: release #12 failed"
	Status string // nodeStatus
	Facts  []fact
	URL    string
	Error  string
	Action string
}

func summarize(ev contract.NotifyEvent, links Links) summary {
	st := NodeStatus(ev)
	run := ev.Pipeline
	if ev.SequenceID > 0 {
		run = fmt.Sprintf("%s #%d", ev.Pipeline, ev.SequenceID)
	}
	what := run
	switch {
	case ev.Step != "":
		what = fmt.Sprintf("step %s of stage %s in %s", ev.StepName, ev.StageName, run)
	case ev.Stage != "":
		what = fmt.Sprintf("stage %s of %s", ev.StageName, run)
	case ev.Type == contract.EventTriggerFailed:
		what = fmt.Sprintf("trigger %s of %s", ev.TriggerName, ev.Pipeline)
	case ev.Pipeline == "" && ev.Freeze != "": // a freeze's own event
		what = "deployment freeze " + ev.Freeze
	}
	s := summary{Title: fmt.Sprintf("%s: %s %s", ev.Type, what, st), Status: st, URL: links.Execution, Error: ev.Error, Action: ev.Action}
	add := func(name, value string) {
		if value != "" {
			s.Facts = append(s.Facts, fact{name, value})
		}
	}
	if ev.Pipeline != "" {
		add("Pipeline", fmt.Sprintf("%s (%s)", ev.PipelineName, ev.Pipeline))
	}
	add("Event", ev.Type)
	add("Status", st)
	add("Execution", ev.ExecutionID)
	if ev.Stage != "" {
		add("Stage", fmt.Sprintf("%s (%s)", ev.StageName, ev.Stage))
	}
	if ev.Step != "" {
		add("Step", fmt.Sprintf("%s (%s)", ev.StepName, ev.StepPath))
	}
	add("Project", ev.Project)
	add("Org", ev.Org)
	if ev.Type == contract.EventTriggerFailed {
		add("Trigger", fmt.Sprintf("%s (%s, %s)", ev.TriggerName, ev.TriggerID, ev.TriggerType))
	} else {
		by := ev.TriggeredBy
		if by == "" {
			by = ev.TriggerType
		} else if ev.TriggerType != "" {
			by += " (" + ev.TriggerType + ")"
		}
		add("Triggered by", by)
	}
	add("Aborted by", ev.AbortedBy)
	add("Freeze", ev.Freeze)
	if ev.Mode != "" && ev.Mode != "NORMAL" {
		add("Mode", ev.Mode)
	}
	add("Started", timeText(ev.Start))
	if ev.End != nil {
		add("Ended", timeText(*ev.End))
		add("Duration", ev.End.Sub(ev.Start).Round(time.Second).String())
	}
	if ev.Category != "" {
		add("Failure", ev.Category)
	}
	return s
}

// color is the status colour of Slack attachments and Teams cards.
func color(st string) string {
	switch st {
	case "completed":
		return "#2EB886"
	case "failed", "aborted", "rejected", "expired":
		return "#D12C2C"
	case "action_required", "paused":
		return "#F2A33A"
	}
	return "#2F80ED"
}

// SlackMessage is an incoming-webhook message: a one-line text, and one attachment coloured by
// the status whose blocks hold the facts.
func SlackMessage(ev contract.NotifyEvent, links Links) map[string]any {
	s := summarize(ev, links)
	line := s.Title
	if s.URL != "" {
		line = fmt.Sprintf("<%s|%s>", s.URL, slackEscape(s.Title))
	} else {
		line = slackEscape(line)
	}
	var blocks []map[string]any
	for i := 0; i < len(s.Facts); i += 10 { // Slack takes at most 10 fields per section
		var fields []map[string]any
		for _, f := range s.Facts[i:min(i+10, len(s.Facts))] {
			fields = append(fields, map[string]any{"type": "mrkdwn", "text": fmt.Sprintf("*%s*\n%s", f.Name, slackEscape(f.Value))})
		}
		blocks = append(blocks, map[string]any{"type": "section", "fields": fields})
	}
	if s.Error != "" {
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "*Error*\n```" + slackEscape(clip(s.Error, 2900)) + "```"}})
	}
	if s.Action != "" {
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": "*To act*\n`" + slackEscape(s.Action) + "`"}})
	}
	return map[string]any{
		"text":        line,
		"attachments": []map[string]any{{"color": color(s.Status), "fallback": s.Title, "blocks": blocks}},
	}
}

func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TeamsMessage is a Microsoft Teams connector MessageCard.
func TeamsMessage(ev contract.NotifyEvent, links Links) map[string]any {
	s := summarize(ev, links)
	var facts []map[string]any
	for _, f := range s.Facts {
		facts = append(facts, map[string]any{"name": f.Name, "value": f.Value})
	}
	if s.Error != "" {
		facts = append(facts, map[string]any{"name": "Error", "value": clip(s.Error, 2000)})
	}
	if s.Action != "" {
		facts = append(facts, map[string]any{"name": "To act", "value": s.Action})
	}
	card := map[string]any{
		"@type":      "MessageCard",
		"@context":   "http://schema.org/extensions",
		"summary":    ev.Type,
		"themeColor": strings.TrimPrefix(color(s.Status), "#"),
		"title":      s.Title,
		"sections":   []map[string]any{{"activityTitle": ev.PipelineName, "activitySubtitle": ev.Type, "facts": facts}},
	}
	if s.URL != "" {
		card["potentialAction"] = []map[string]any{{"@type": "OpenUri", "name": "View execution",
			"targets": []map[string]any{{"os": "default", "uri": s.URL}}}}
	}
	return card
}

// PagerDutyEvent is an Events API v2 trigger event.
func PagerDutyEvent(ev contract.NotifyEvent, links Links, routingKey, dedupKey string) map[string]any {
	s := summarize(ev, links)
	severity := "info"
	switch s.Status {
	case "failed", "expired", "rejected":
		severity = "error"
	case "aborted", "action_required":
		severity = "warning"
	}
	summaryText := fmt.Sprintf("%s: %s, %s", ev.Type, ev.Pipeline, s.Status)
	if ev.Stage != "" {
		summaryText += ", stage " + ev.Stage
	}
	if ev.Step != "" {
		summaryText += ", step " + ev.StepPath
	}
	if ev.Error != "" {
		summaryText += ": " + ev.Error
	}
	details := map[string]any{}
	for _, f := range s.Facts {
		details[f.Name] = f.Value
	}
	if s.Action != "" {
		details["To act"] = s.Action
	}
	at := ev.Start
	if ev.End != nil {
		at = *ev.End
	}
	body := map[string]any{
		"routing_key":  routingKey,
		"event_action": "trigger",
		"dedup_key":    dedupKey,
		"payload": map[string]any{
			"summary":        clip(summaryText, 1024),
			"source":         "gantry/" + ev.Pipeline,
			"severity":       severity,
			"timestamp":      at.UTC().Format(time.RFC3339),
			"component":      ev.Stage,
			"group":          ev.Pipeline,
			"class":          ev.Type,
			"custom_details": details,
		},
		"client": "Gantry",
	}
	if s.URL != "" {
		body["links"] = []map[string]any{{"href": s.URL, "text": "Execution " + ev.ExecutionID}}
		body["client_url"] = s.URL
	}
	return body
}

// DatadogEvent is an Events API v1 event.
func DatadogEvent(ev contract.NotifyEvent, links Links) map[string]any {
	s := summarize(ev, links)
	var text strings.Builder
	text.WriteString("%%% \n")
	for _, f := range s.Facts {
		fmt.Fprintf(&text, "**%s**: %s  \n", f.Name, f.Value)
	}
	if s.Error != "" {
		fmt.Fprintf(&text, "**Error**: %s  \n", clip(s.Error, 3000))
	}
	if s.URL != "" {
		fmt.Fprintf(&text, "[View execution](%s)  \n", s.URL)
	}
	text.WriteString("\n %%%")
	alert := "info"
	switch s.Status {
	case "completed":
		alert = "success"
	case "failed", "expired", "rejected":
		alert = "error"
	case "aborted", "action_required":
		alert = "warning"
	}
	tags := []string{"pipeline:" + ev.Pipeline, "status:" + s.Status, "event_type:" + ev.Type, "source:gantry"}
	if ev.Project != "" {
		tags = append(tags, "project:"+ev.Project)
	}
	if ev.Org != "" {
		tags = append(tags, "org:"+ev.Org)
	}
	if ev.Stage != "" {
		tags = append(tags, "stage:"+ev.Stage)
	}
	at := ev.Start
	if ev.End != nil {
		at = *ev.End
	}
	return map[string]any{
		"title":            clip(s.Title, 100),
		"text":             clip(text.String(), 4000),
		"tags":             tags,
		"aggregation_key":  ev.Pipeline,
		"source_type_name": "gantry",
		"alert_type":       alert,
		"date_happened":    at.Unix(),
	}
}

// Mail is an e-mail's subject and its plain-text and HTML bodies.
type Mail struct {
	Subject string
	Text    string
	HTML    string
}

var mailHTML = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html><body style="font-family:sans-serif">
<h2 style="border-left:6px solid {{.Color}};padding-left:8px">{{.S.Title}}</h2>
<table cellpadding="4">{{range .S.Facts}}
<tr><th align="left">{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}
</table>{{if .S.Error}}
<h3>Error</h3><pre>{{.S.Error}}</pre>{{end}}{{if .S.Action}}
<h3>To act</h3><pre>{{.S.Action}}</pre>{{end}}{{if .S.URL}}
<p><a href="{{.S.URL}}">View execution</a></p>{{end}}
</body></html>
`))

// MailMessage is the e-mail of an event: subject "<pipeline> <event type>".
func MailMessage(ev contract.NotifyEvent, links Links) Mail {
	s := summarize(ev, links)
	var t strings.Builder
	t.WriteString(s.Title + "\n\n")
	for _, f := range s.Facts {
		fmt.Fprintf(&t, "%s: %s\n", f.Name, f.Value)
	}
	if s.Error != "" {
		fmt.Fprintf(&t, "\nError:\n%s\n", s.Error)
	}
	if s.Action != "" {
		fmt.Fprintf(&t, "\nTo act:\n  %s\n", s.Action)
	}
	if s.URL != "" {
		fmt.Fprintf(&t, "\nExecution: %s\n", s.URL)
	}
	var h bytes.Buffer
	_ = mailHTML.Execute(&h, map[string]any{"S": s, "Color": color(s.Status)})
	return Mail{Subject: ev.Pipeline + " " + ev.Type, Text: t.String(), HTML: h.String()}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
