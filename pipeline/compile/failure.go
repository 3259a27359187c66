package compile

import (
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// level decodes one failureStrategies list into category → action (spec 5.4 overlay of one
// level: AllErrors fills every category the level does not name). group names the declaring
// step group, "" for stage and step lists. A list left as an unresolved runtime input is empty.
func (c *compiler) level(n *yaml.Node, group string) map[string]*plan.Action {
	if n == nil || (n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value)) {
		return nil
	}
	var list []pipeline.FailureStrategy
	d := &pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &c.diags}
	d.Decode(n, &list, "failure strategy")
	out := map[string]*plan.Action{}
	var all *plan.Action
	for _, fs := range list {
		if fs.OnFailure == nil || fs.OnFailure.Action == nil {
			continue
		}
		a := c.action(fs.OnFailure.Action, group)
		for _, e := range fs.OnFailure.Errors {
			cat := pipeline.Canonical(pipeline.ErrorCategories, e)
			if cat == "AllErrors" {
				all = a
			} else if cat != "" {
				out[cat] = a
			}
		}
	}
	if all != nil {
		for _, cat := range plan.Categories {
			if _, ok := out[cat]; !ok {
				out[cat] = all
			}
		}
	}
	return out
}

func (c *compiler) action(a *pipeline.Action, group string) *plan.Action {
	out := &plan.Action{Type: pipeline.Canonical(pipeline.ActionTypes, a.Type), Group: group}
	d := &pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &c.diags}
	switch out.Type {
	case "Retry", "RetryStepGroup":
		var rs pipeline.RetrySpec
		d.Decode(a.Spec, &rs, "retry spec")
		out.RetryCount, _ = strconv.Atoi(rs.RetryCount)
		if rs.RetryIntervals != nil {
			for _, iv := range rs.RetryIntervals.Content {
				out.RetryIntervals = append(out.RetryIntervals, iv.Value)
			}
			if rs.RetryIntervals.Kind == yaml.ScalarNode {
				out.RetryIntervals = []string{rs.RetryIntervals.Value}
			}
		}
		if rs.OnRetryFailure != nil && rs.OnRetryFailure.Action != nil {
			out.OnRetryFailure = c.action(rs.OnRetryFailure.Action, group)
		}
	case "ManualIntervention":
		var ms pipeline.ManualInterventionSpec
		d.Decode(a.Spec, &ms, "manual intervention spec")
		out.Timeout = ms.Timeout
		if ms.OnTimeout != nil && ms.OnTimeout.Action != nil {
			out.OnTimeout = c.action(ms.OnTimeout.Action, group)
		}
	case "PipelineRollback":
		if a.Spec != nil {
			var ps pipeline.PipelineRollbackSpec
			d.Decode(a.Spec, &ps, "pipeline rollback spec")
			out.FailAll = ps.FailAll == "true"
		}
	}
	return out
}

// overlay returns base with the level's entries replacing inherited ones category by category.
func overlay(base, level map[string]*plan.Action) map[string]*plan.Action {
	if len(level) == 0 {
		return base
	}
	out := make(map[string]*plan.Action, len(base)+len(level))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range level {
		out[k] = v
	}
	return out
}
