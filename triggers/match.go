package triggers

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/pipeline"
)

// Processing statuses of spec 13.6.
const (
	StatusRequested        = "TARGET_EXECUTION_REQUESTED"
	StatusDidNotExecute    = "TARGET_DID_NOT_EXECUTE"
	StatusInvalidPayload   = "INVALID_PAYLOAD"
	StatusNoRepo           = "NO_MATCHING_TRIGGER_FOR_REPO"
	StatusNoAction         = "NO_MATCHING_TRIGGER_FOR_EVENT_ACTION"
	StatusNoPayload        = "NO_MATCHING_TRIGGER_FOR_PAYLOAD_CONDITIONS"
	StatusNoHeader         = "NO_MATCHING_TRIGGER_FOR_HEADER_CONDITIONS"
	StatusNoJexl           = "NO_MATCHING_TRIGGER_FOR_JEXL_CONDITIONS"
	StatusNoFilepath       = "NO_MATCHING_TRIGGER_FOR_FILEPATH_CONDITIONS"
	StatusNoCustom         = "NO_ENABLED_CUSTOM_TRIGGER_FOUND"
	StatusAuthFailed       = "TRIGGER_AUTHENTICATION_FAILED"
	StatusException        = "EXCEPTION_WHILE_PROCESSING"
	StatusInvalidInputYaml = "INVALID_RUNTIME_INPUT_YAML"
	// StatusForbidden: the trigger's service identity (or a custom webhook's caller) may not
	// start the pipeline (Gantry's roles; the reference has no such status).
	StatusForbidden = "TRIGGER_NOT_AUTHORIZED"
)

// Verdict is a trigger's decision on an event.
type Verdict struct {
	Match  bool
	Status string // a spec 13.6 status when it does not match
	Reason string
}

var headerKeyRe = regexp.MustCompile(`header\[['"]([^'"]*)['"]\]`)

// Evaluate decides whether a trigger fires for an event (spec 13.2 steps 2-6).
func Evaluate(t *pipeline.Trigger, ev *Event) Verdict {
	if strings.EqualFold(t.Enabled, "false") {
		return Verdict{Status: StatusDidNotExecute, Reason: "trigger is disabled"}
	}
	var src pipeline.WebhookSource
	if !decode(t.Source.Spec, &src) || src.Type != ev.Provider {
		return Verdict{Status: StatusNoRepo, Reason: fmt.Sprintf("trigger listens to %s, not %s", src.Type, ev.Provider)}
	}
	var payloadConds, headerConds []pipeline.Condition
	var jexl string
	if ev.Provider == "Custom" {
		var c pipeline.CustomEvent
		decode(src.Spec, &c)
		payloadConds, headerConds, jexl = c.PayloadConditions, c.HeaderConditions, c.JexlCondition
	} else {
		var g pipeline.GitEvent
		decode(src.Spec, &g)
		if g.Type != ev.Type {
			return Verdict{Status: StatusNoAction, Reason: fmt.Sprintf("trigger wants %s events, got %s", g.Type, ev.Type)}
		}
		if g.Spec != nil {
			if g.Spec.RepoName != "" && ev.RepoName != "" && !strings.EqualFold(g.Spec.RepoName, ev.RepoName) {
				return Verdict{Status: StatusNoRepo, Reason: fmt.Sprintf("repository %s is not %s", ev.RepoName, g.Spec.RepoName)}
			}
			if !actionMatches(g.Spec.Actions, ev) {
				return Verdict{Status: StatusNoAction, Reason: fmt.Sprintf("action %s is not one of %s", ev.Action, strings.Join(g.Spec.Actions, ", "))}
			}
			payloadConds, headerConds, jexl = g.Spec.PayloadConditions, g.Spec.HeaderConditions, g.Spec.JexlCondition
		}
	}
	data := map[string]any{"trigger": ev.Data(), "eventPayload": ev.Payload}
	for _, c := range payloadConds {
		ok, status, err := payloadCondition(c, ev, data)
		if err != nil {
			return Verdict{Status: StatusException, Reason: err.Error()}
		}
		if !ok {
			return Verdict{Status: status, Reason: fmt.Sprintf("payload condition %s %s %q is false", c.Key, c.Operator, c.Value)}
		}
	}
	for _, c := range headerConds {
		key := headerKeyRe.ReplaceAllStringFunc(c.Key, strings.ToLower)
		v, err := render(key, data)
		if err != nil {
			return Verdict{Status: StatusException, Reason: err.Error()}
		}
		if ok, err := Match(c.Operator, v, c.Value); err != nil || !ok {
			return Verdict{Status: StatusNoHeader, Reason: fmt.Sprintf("header condition %s %s %q is false", c.Key, c.Operator, c.Value)}
		}
	}
	if strings.TrimSpace(jexl) != "" {
		v, err := expressions.Render(headerKeyRe.ReplaceAllStringFunc(jexl, strings.ToLower), expressions.Condition, expressions.NewScope(data, ""), expressions.Options{})
		if err != nil {
			return Verdict{Status: StatusNoJexl, Reason: fmt.Sprintf("jexlCondition: %v", err)}
		}
		if b, _ := v.(bool); !b {
			return Verdict{Status: StatusNoJexl, Reason: "jexlCondition is false"}
		}
	}
	return Verdict{Match: true, Status: StatusRequested}
}

// actionMatches applies spec 13.2 step 3: an empty list takes every action but GitHub
// ReadyForReview; otherwise exact, then case-insensitive membership.
func actionMatches(actions []string, ev *Event) bool {
	if ev.Action == "" {
		return true
	}
	if len(actions) == 0 {
		return !(ev.Provider == "Github" && ev.Action == "ReadyForReview")
	}
	return slices.ContainsFunc(actions, func(a string) bool { return strings.EqualFold(a, ev.Action) })
}

// payloadCondition evaluates one payload condition (spec 13.2 step 4).
func payloadCondition(c pipeline.Condition, ev *Event, data map[string]any) (bool, string, error) {
	switch c.Key {
	case "sourceBranch":
		if ev.SourceBranch == "" { // pushes have none: satisfied
			return true, "", nil
		}
		ok, err := Match(c.Operator, ev.SourceBranch, c.Value)
		return ok, StatusNoPayload, err
	case "targetBranch":
		ok, err := Match(c.Operator, ev.TargetBranch, c.Value)
		return ok, StatusNoPayload, err
	case "changedFiles":
		for _, f := range ev.ChangedFiles {
			if ok, err := Match(c.Operator, f, c.Value); err != nil || ok {
				return ok, StatusNoFilepath, err
			}
		}
		return false, StatusNoFilepath, nil
	}
	v, err := render(c.Key, data)
	if err != nil {
		return false, StatusException, err
	}
	ok, err := Match(c.Operator, v, c.Value)
	return ok, StatusNoPayload, err
}

func render(text string, data map[string]any) (string, error) {
	if !expressions.Has(text) {
		return text, nil
	}
	v, err := expressions.Render(text, expressions.Text, expressions.NewScope(data, ""), expressions.Options{})
	if err != nil {
		return "", fmt.Errorf("condition key %s: %v", text, err)
	}
	if v == nil {
		return "", nil
	}
	return expressions.ToString(v), nil
}
