package validate

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/plan/duration"
)

// fsCtx says where a failureStrategies list sits, for the placement rules of spec 5.3.
type fsCtx struct {
	level    string // stage, stepGroup or step
	rollback bool   // inside a rollbackSteps tree
	inGroup  bool   // a step inside a step group, or the group itself
}

// failureStrategies checks a list against spec 5.1-5.3 (validation rules 1-7).
func (c *checker) failureStrategies(n *yaml.Node, ctx fsCtx) {
	if n == nil || (n.Kind == yaml.ScalarNode && inputs.IsRuntimeInput(n.Value)) {
		return
	}
	var list []pipeline.FailureStrategy
	c.dec.Decode(n, &list, "failure strategy")
	type mapping struct {
		action string
		at     *yaml.Node
	}
	byCategory := map[string]mapping{}
	for _, fs := range list {
		of := fs.OnFailure
		if of == nil {
			continue
		}
		action := ""
		if of.Action != nil {
			action = c.action(of.Action, ctx, "")
		}
		errorsNode := pipeline.Field(of.Node, "errors")
		if len(of.Errors) == 0 && errorsNode != nil && errorsNode.Kind == yaml.SequenceNode {
			c.diags.Errorf(c.pos(errorsNode), "empty", "onFailure.errors needs at least one error category").
				SetHint("use [AllErrors] to match every failure")
		}
		for i, e := range of.Errors {
			at := errorsNode.Content[i]
			cat := pipeline.Canonical(pipeline.ErrorCategories, e)
			if cat == "" {
				d := c.diags.Errorf(c.pos(at), "error-category", "unknown error category %q", e)
				if s := pipeline.Closest(e, pipeline.ErrorCategories); s != "" {
					d.SetHint("did you mean %q? categories: %s", s, strings.Join(pipeline.ErrorCategories, ", "))
				} else {
					d.SetHint("categories: %s", strings.Join(pipeline.ErrorCategories, ", "))
				}
				continue
			}
			if cat == "AllErrors" && len(of.Errors) > 1 {
				c.diags.Errorf(c.pos(at), "all-errors-mixed", "AllErrors cannot be combined with other categories in one errors list").
					SetHint("split it into two onFailure entries, or keep only AllErrors")
			}
			prev, seen := byCategory[cat]
			switch {
			case !seen:
				byCategory[cat] = mapping{action, at}
			case cat == "AllErrors":
				c.diags.Errorf(c.pos(at), "duplicate-category", "AllErrors appears twice in one failureStrategies list (first at line %d)", prev.at.Line)
			case prev.action != action && action != "" && prev.action != "":
				c.diags.Errorf(c.pos(at), "conflicting-category", "error category %s is mapped to %s here and to %s at line %d", cat, action, prev.action, prev.at.Line).
					SetHint("a category may map to only one action per level; remove one of the entries")
			}
		}
	}
}

// action checks one action and returns its canonical type ("" when invalid). nested is the key
// it sits under (onRetryFailure, onTimeout) or "" for a primary action.
func (c *checker) action(a *pipeline.Action, ctx fsCtx, nested string) string {
	typ := pipeline.Canonical(pipeline.ActionTypes, a.Type)
	at := c.pos(pipeline.ValueAt(a.Node, "type"))
	if typ == "" {
		if a.Type != "" {
			d := c.diags.Errorf(at, "action-type", "unknown failure action %q", a.Type)
			if s := pipeline.Closest(a.Type, pipeline.ActionTypes); s != "" {
				d.SetHint("did you mean %q? actions: %s", s, strings.Join(pipeline.ActionTypes, ", "))
			} else {
				d.SetHint("actions: %s", strings.Join(pipeline.ActionTypes, ", "))
			}
		}
		return ""
	}
	switch {
	case nested == "onRetryFailure" && (typ == "Retry" || typ == "ProceedWithDefaultValues" || typ == "RetryStepGroup"):
		c.diags.Errorf(at, "nested-action", "onRetryFailure cannot be %s", typ).
			SetHint("after retries run out, choose Ignore, MarkAsSuccess, MarkAsFailure, Abort, ManualIntervention or a rollback")
	case nested == "onTimeout" && (typ == "ManualIntervention" || typ == "Retry" || typ == "ProceedWithDefaultValues" ||
		typ == "PipelineRollback" || typ == "RetryStepGroup"):
		c.diags.Errorf(at, "nested-action", "ManualIntervention onTimeout cannot be %s", typ).
			SetHint("on timeout choose Ignore, MarkAsSuccess, MarkAsFailure, Abort, StageRollback or StepGroupRollback")
	case ctx.rollback && (typ == "StageRollback" || typ == "StepGroupRollback"):
		c.diags.Errorf(at, "rollback-action", "%s is not allowed inside rollbackSteps", typ).
			SetHint("a failing rollback step can Ignore, MarkAsFailure, Retry or Abort")
	case typ == "RetryStepGroup" && ctx.level != "stepGroup":
		c.diags.Errorf(at, "action-placement", "RetryStepGroup is only allowed in a step group's own failureStrategies")
	case typ == "StepGroupRollback" && !ctx.inGroup:
		c.diags.Errorf(at, "action-placement", "StepGroupRollback is only allowed on a step group or a step inside one")
	}
	switch typ {
	case "Retry", "RetryStepGroup":
		var spec pipeline.RetrySpec
		if c.needSpec(a, typ) {
			c.dec.Decode(a.Spec, &spec, typ+" spec")
			c.integer(spec.Node, "retryCount", spec.RetryCount, 0, true, "retryCount")
			c.retryIntervals(spec.RetryIntervals)
			switch {
			case typ == "Retry" && spec.OnRetryFailure == nil && spec.Node != nil:
				c.diags.Errorf(c.pos(spec.Node), "missing-field", "Retry spec is missing required field \"onRetryFailure\"").
					SetHint("say what happens when retries run out, e.g. onRetryFailure: {action: {type: MarkAsFailure}}")
			case typ == "RetryStepGroup" && spec.OnRetryFailure != nil:
				c.diags.Errorf(c.pos(pipeline.Key(spec.Node, "onRetryFailure")), "stage-spec", "RetryStepGroup has no onRetryFailure; when retries run out the next matching strategy applies")
			case spec.OnRetryFailure != nil && spec.OnRetryFailure.Action != nil:
				c.action(spec.OnRetryFailure.Action, ctx, "onRetryFailure")
			}
		}
	case "ManualIntervention":
		var spec pipeline.ManualInterventionSpec
		if c.needSpec(a, typ) {
			c.dec.Decode(a.Spec, &spec, "ManualIntervention spec")
			if dynamic(spec.Timeout) {
				c.diags.Errorf(c.pos(pipeline.ValueAt(spec.Node, "timeout")), "fixed-value", "ManualIntervention timeout must be a fixed duration")
			} else {
				c.duration(spec.Node, "timeout", spec.Timeout, "ManualIntervention timeout")
			}
			if spec.OnTimeout != nil && spec.OnTimeout.Action != nil {
				c.action(spec.OnTimeout.Action, ctx, "onTimeout")
			}
		}
	case "PipelineRollback":
		if a.Spec != nil {
			var spec pipeline.PipelineRollbackSpec
			c.dec.Decode(a.Spec, &spec, "PipelineRollback spec")
			c.boolean(spec.Node, "failAll", spec.FailAll)
		}
	default:
		if a.Spec != nil && !(a.Spec.Kind == yaml.MappingNode && len(a.Spec.Content) == 0) && a.Spec.Tag != "!!null" {
			c.diags.Errorf(c.pos(a.Spec), "action-spec", "%s takes no spec", typ).SetHint("remove the spec block")
		}
	}
	return typ
}

func (c *checker) needSpec(a *pipeline.Action, typ string) bool {
	if a.Spec == nil {
		c.diags.Errorf(c.pos(a.Node), "missing-field", "%s action is missing required field \"spec\"", typ)
		return false
	}
	return true
}

func (c *checker) retryIntervals(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode {
		if dynamic(n.Value) {
			c.diags.Errorf(c.pos(n), "fixed-value", "retryIntervals must be a fixed list of durations, not an expression or runtime input").
				SetHint("for example retryIntervals: [10s, 30s]")
		} else {
			c.diags.Errorf(c.pos(n), "type", "retryIntervals must be a list of durations").SetHint("for example retryIntervals: [10s, 30s]")
		}
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.diags.Errorf(c.pos(n), "type", "retryIntervals must be a list of durations")
		return
	}
	if len(n.Content) == 0 {
		c.diags.Errorf(c.pos(n), "empty", "retryIntervals needs at least one duration")
	}
	for _, iv := range n.Content {
		if dynamic(iv.Value) {
			c.diags.Errorf(c.pos(iv), "fixed-value", "retry intervals must be fixed durations")
			continue
		}
		if _, err := duration.Parse(iv.Value); err != nil {
			c.diags.Errorf(c.pos(iv), "duration", "retry interval: %v", err).SetHint("write durations like 10s, 1m or 1h")
		}
	}
}
