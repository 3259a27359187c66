package compile

import (
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// stageSteps are a stage's steps, in its execution and rollback sections, at any depth.
func stageSteps(stage *plan.Node) []*plan.Node {
	var all []*plan.Node
	var rec func([]*plan.Node)
	rec = func(ns []*plan.Node) {
		for _, n := range ns {
			if n == nil {
				continue
			}
			if n.Kind == plan.KindStep {
				all = append(all, n)
			}
			rec(n.Children)
			rec(n.Rollback)
		}
	}
	rec(stage.Children)
	rec(stage.Rollback)
	return all
}

// shiftedRules gives each StandAloneTrafficShiftRollback step of a stage the listener rules
// its Standalone EcsBlueGreenTrafficShift steps weigh (spec key listenerRuleArns): the rollback
// restores what those rules forwarded to before, and its own spec names nothing.
func shiftedRules(stage *plan.Node) {
	var rules []any
	seen := map[any]bool{}
	all := stageSteps(stage)
	for _, n := range all {
		if n.Type != stepspec.EcsBlueGreenTrafficShift {
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
		if sp, ok := n.Spec.(map[string]any); ok && n.Type == stepspec.StandAloneTrafficShiftRollback {
			sp["listenerRuleArns"] = rules
		}
	}
}

// asgFollowers are, for each ASG step that names a group, the steps after it that act on what
// it deployed and name nothing themselves.
var asgFollowers = map[string][]string{
	stepspec.AsgRollingDeploy:   {stepspec.AsgRollingRollback},
	stepspec.AsgCanaryDeploy:    {stepspec.AsgCanaryDelete},
	stepspec.AsgBlueGreenDeploy: {stepspec.AsgBlueGreenSwapService, stepspec.AsgShiftTraffic, stepspec.AsgBlueGreenRollback},
	stepspec.AsgSetup:           {stepspec.AsgPhasedDeploy, stepspec.AsgRollback},
}

// asgNames gives those followers the group's asgName and, from AsgBlueGreenDeploy, its load
// balancers as a loadBalancers list: the reference passes them along from the deploy step.
func asgNames(stage *plan.Node) {
	all := stageSteps(stage)
	for _, src := range all {
		followers, ok := asgFollowers[src.Type]
		sp, _ := src.Spec.(map[string]any)
		if !ok || sp == nil {
			continue
		}
		lbs := sp["loadBalancers"]
		if lbs == nil && (sp["prodListener"] != nil || sp["prodListenerRuleArn"] != nil) {
			lb := map[string]any{}
			for _, k := range []string{"loadBalancer", "prodListener", "prodListenerRuleArn", "stageListener", "stageListenerRuleArn"} {
				if v, ok := sp[k]; ok {
					lb[k] = v
				}
			}
			lbs = []any{lb}
		}
		for _, n := range all {
			dst, _ := n.Spec.(map[string]any)
			if dst == nil || !contains(followers, n.Type) {
				continue
			}
			if _, set := dst["asgName"]; !set && sp["asgName"] != nil {
				dst["asgName"] = sp["asgName"]
			}
			if _, set := dst["loadBalancers"]; !set && lbs != nil && src.Type == stepspec.AsgBlueGreenDeploy {
				dst["loadBalancers"] = lbs
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
