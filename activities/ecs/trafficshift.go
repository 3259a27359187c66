package ecs

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// EcsBlueGreenTrafficShift weighs a listener rule's forward action between target groups.
// Standalone, it sets the step's forwardConfig on the rule it names, recording the rule's
// forward action before the first shift of the execution as tags on the rule, from which
// StandAloneTrafficShiftRollback restores it. Inherit, it gives the green service of this
// execution's EcsBlueGreenCreateService weightPercentage of the prod rule's traffic and the blue
// one the rest, and marks the green service so that EcsBlueGreenRollback points the rule back.
const (
	tagShiftExecution = "gantry-shift-execution"
	tagShiftPrevious  = "gantry-shift-previous-" // + index: "targetGroupArn=weight"
)

// shiftSpec is EcsBlueGreenTrafficShift's spec.
type weighted struct {
	tg     string
	weight int32
}

// weighRule sets a rule's forward action to the weighted target groups.
func (r *run) weighRule(ctx context.Context, rule string, groups []weighted) error {
	var tuples []elbtypes.TargetGroupTuple
	var desc []string
	for _, g := range groups {
		tuples = append(tuples, elbtypes.TargetGroupTuple{TargetGroupArn: aws.String(g.tg), Weight: aws.Int32(g.weight)})
		desc = append(desc, fmt.Sprintf("%s %d", g.tg, g.weight))
	}
	action := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, ForwardConfig: &elbtypes.ForwardActionConfig{TargetGroups: tuples}}}
	if _, err := r.elb.ModifyRule(ctx, &elb.ModifyRuleInput{RuleArn: aws.String(rule), Actions: action}); err != nil {
		return r.fail(err, "weigh listener rule %s", rule)
	}
	r.logf("listener rule %s forwards to %s", rule, strings.Join(desc, ", "))
	return nil
}

// ruleForward reads a rule's forward action as weighted target groups.
func (r *run) ruleForward(ctx context.Context, rule string) ([]weighted, error) {
	out, err := r.elb.DescribeRules(ctx, &elb.DescribeRulesInput{RuleArns: []string{rule}})
	if err != nil {
		return nil, r.fail(err, "read listener rule %s", rule)
	}
	if len(out.Rules) == 0 {
		return nil, contract.Fail(contract.Verification, "listener rule %s does not exist", rule)
	}
	for _, a := range out.Rules[0].Actions {
		if a.Type != elbtypes.ActionTypeEnumForward {
			continue
		}
		if fc := a.ForwardConfig; fc != nil && len(fc.TargetGroups) > 0 {
			var gs []weighted
			for _, t := range fc.TargetGroups {
				gs = append(gs, weighted{tg: aws.ToString(t.TargetGroupArn), weight: aws.ToInt32(t.Weight)})
			}
			return gs, nil
		}
		if tg := aws.ToString(a.TargetGroupArn); tg != "" {
			return []weighted{{tg: tg, weight: 1}}, nil
		}
	}
	return nil, contract.Fail(contract.Verification, "listener rule %s does not forward to a target group", rule)
}

func (r *run) ruleTags(ctx context.Context, rule string) (map[string]string, error) {
	out, err := r.elb.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: []string{rule}})
	if err != nil {
		return nil, r.fail(err, "read the tags of listener rule %s", rule)
	}
	tags := map[string]string{}
	for _, d := range out.TagDescriptions {
		for _, t := range d.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return tags, nil
}

func percentage(v any, what string) (int32, error) {
	n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(v)))
	if err != nil || n < 0 || n > 100 {
		return 0, contract.Fail(contract.Verification, "%s %v is not a whole number from 0 to 100", what, v)
	}
	return int32(n), nil
}

func (r *run) trafficShift(ctx context.Context, spec *stepspec.EcsBlueGreenTrafficShiftSpec) (map[string]any, error) {
	w := spec.EcsTrafficShiftWrapper
	if w == nil || w.Spec == nil {
		return nil, contract.Fail(contract.Verification, "%s needs ecsTrafficShiftWrapper with its spec", r.in.Type)
	}
	switch w.Type {
	case "Standalone":
		return r.standaloneShift(ctx, spec)
	case "Inherit":
		return r.inheritShift(ctx, w.Spec.WeightPercentage)
	}
	return nil, contract.Fail(contract.Verification, "ecsTrafficShiftWrapper type %q is not Standalone or Inherit", w.Type)
}

func (r *run) standaloneShift(ctx context.Context, spec *stepspec.EcsBlueGreenTrafficShiftSpec) (map[string]any, error) {
	s := spec.EcsTrafficShiftWrapper.Spec
	if s.ListenerRuleArn == "" || len(s.Forward) == 0 {
		return nil, contract.Fail(contract.Verification, "a Standalone traffic shift needs listenerRuleArn and forwardConfig")
	}
	var groups []weighted
	for _, f := range s.Forward {
		n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(f.Weight)))
		if err != nil || n < 0 || n > 999 {
			return nil, contract.Fail(contract.Verification, "forwardConfig weight %v of %s is not a whole number from 0 to 999", f.Weight, f.TargetGroupArn)
		}
		groups = append(groups, weighted{tg: f.TargetGroupArn, weight: int32(n)})
	}
	tags, err := r.ruleTags(ctx, s.ListenerRuleArn)
	if err != nil {
		return nil, err
	}
	if tags[tagShiftExecution] != r.in.ExecutionID {
		before, err := r.ruleForward(ctx, s.ListenerRuleArn)
		if err != nil {
			return nil, err
		}
		record := []elbtypes.Tag{{Key: aws.String(tagShiftExecution), Value: aws.String(r.in.ExecutionID)}}
		for i, g := range before {
			record = append(record, elbtypes.Tag{Key: aws.String(tagShiftPrevious + strconv.Itoa(i+1)), Value: aws.String(fmt.Sprintf("%s=%d", g.tg, g.weight))})
		}
		// Entries a longer earlier record left are blanked, so the record is exactly this one.
		for i := len(before) + 1; tags[tagShiftPrevious+strconv.Itoa(i)] != ""; i++ {
			record = append(record, elbtypes.Tag{Key: aws.String(tagShiftPrevious + strconv.Itoa(i)), Value: aws.String("")})
		}
		if _, err := r.elb.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{s.ListenerRuleArn}, Tags: record}); err != nil {
			return nil, r.fail(err, "record the forward action of listener rule %s", s.ListenerRuleArn)
		}
	}
	if err := r.weighRule(ctx, s.ListenerRuleArn, groups); err != nil {
		return nil, err
	}
	return map[string]any{"listenerRuleArn": s.ListenerRuleArn, "forwardConfig": describeGroups(groups)}, nil
}

func describeGroups(gs []weighted) map[string]any {
	out := map[string]any{}
	for _, g := range gs {
		out[g.tg] = g.weight
	}
	return out
}

// standaloneRollback restores the forward action of each rule this execution shifted: the
// rules the stage's Standalone shift steps name, which the compiler gives the rollback step.
func (r *run) standaloneRollback(ctx context.Context, rules []string) (map[string]any, error) {
	var restored []any
	for _, rule := range rules {
		tags, err := r.ruleTags(ctx, rule)
		if err != nil {
			return nil, err
		}
		if tags[tagShiftExecution] != r.in.ExecutionID {
			r.logf("listener rule %s was not shifted by this execution", rule)
			continue
		}
		var groups []weighted
		for i := 1; tags[tagShiftPrevious+strconv.Itoa(i)] != ""; i++ {
			tg, weight, _ := strings.Cut(tags[tagShiftPrevious+strconv.Itoa(i)], "=")
			n, _ := strconv.Atoi(weight)
			groups = append(groups, weighted{tg: tg, weight: int32(n)})
		}
		if len(groups) == 0 {
			continue
		}
		if err := r.weighRule(ctx, rule, groups); err != nil {
			return nil, err
		}
		if _, err := r.elb.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{rule}, Tags: []elbtypes.Tag{{Key: aws.String(tagShiftExecution), Value: aws.String("")}}}); err != nil {
			return nil, r.fail(err, "clear the record of listener rule %s", rule)
		}
		restored = append(restored, rule)
	}
	sort.Slice(restored, func(i, j int) bool { return fmt.Sprint(restored[i]) < fmt.Sprint(restored[j]) })
	return map[string]any{"rolledBack": len(restored) > 0, "listenerRuleArns": restored}, nil
}

// inheritShift weighs the prod rule of this execution's blue-green deployment.
func (r *run) inheritShift(ctx context.Context, pct any) (map[string]any, error) {
	weight, err := percentage(pct, "weightPercentage")
	if err != nil {
		return nil, err
	}
	green, tags, err := r.greenOf(ctx)
	if err != nil {
		return nil, err
	}
	if green == nil {
		return nil, contract.Fail(contract.Verification, "an Inherit traffic shift needs this execution's EcsBlueGreenCreateService first: it has no green service")
	}
	rule := tags[tagProdRule]
	if rule == "" {
		return nil, contract.Fail(contract.Verification, "an Inherit traffic shift weighs the prod listener's rule: EcsBlueGreenCreateService needs prodListenerRuleArn")
	}
	groups := []weighted{{tg: tags[tagStageTG], weight: weight}, {tg: tags[tagProdTG], weight: 100 - weight}}
	if err := r.weighRule(ctx, rule, groups); err != nil {
		return nil, err
	}
	if err := r.tag(ctx, green, map[string]string{tagSwapped: "true"}); err != nil {
		return nil, err
	}
	return map[string]any{"listenerRuleArn": rule, "greenServiceName": aws.ToString(green.ServiceName), "greenWeight": weight, "blueWeight": 100 - weight}, nil
}
