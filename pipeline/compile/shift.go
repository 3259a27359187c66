package compile

import "github.com/gantry-cd/gantry/plan"

// shiftedRules gives each StandAloneTrafficShiftRollback step of a stage the listener rules
// its Standalone EcsBlueGreenTrafficShift steps weigh (spec key listenerRuleArns): the rollback
// restores what those rules forwarded to before, and its own spec names nothing.
func shiftedRules(stage *plan.Node) {
	var rules []any
	seen := map[any]bool{}
	var all []*plan.Node
	walk := func(nodes []*plan.Node) {
		var rec func([]*plan.Node)
		rec = func(ns []*plan.Node) {
			for _, n := range ns {
				if n == nil {
					continue
				}
				all = append(all, n)
				rec(n.Children)
				rec(n.Rollback)
			}
		}
		rec(nodes)
	}
	walk(stage.Children)
	walk(stage.Rollback)
	for _, n := range all {
		if n.Kind != plan.KindStep || n.Type != "EcsBlueGreenTrafficShift" {
			continue
		}
		sp, _ := n.Spec.(map[string]any)
		w, _ := sp["ecsTrafficShiftWrapper"].(map[string]any)
		spec, _ := w["spec"].(map[string]any)
		if w["type"] == "Standalone" && spec["listenerRuleArn"] != nil && !seen[spec["listenerRuleArn"]] {
			seen[spec["listenerRuleArn"]] = true
			rules = append(rules, spec["listenerRuleArn"])
		}
	}
	for _, n := range all {
		if sp, ok := n.Spec.(map[string]any); ok && n.Kind == plan.KindStep && n.Type == "StandAloneTrafficShiftRollback" {
			sp["listenerRuleArns"] = rules
		}
	}
}
