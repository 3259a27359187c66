// Package listeners reads and sets where an Elastic Load Balancing listener rule (or, without
// a rule, a listener's default action) forwards: the target groups and their weights. The
// blue-green and traffic-shift steps of ECS and ASG deployments swap and weigh traffic with it.
package listeners

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/gantry-cd/gantry/contract"
)

// Fail turns an AWS error, from what was being done, into the step's failure.
type Fail func(err error, format string, args ...any) error

// Forwards returns each target group a rule (or the listener) forwards to, with its weight: a
// plain forward to one group is that group at 100.
func Forwards(ctx context.Context, c *elb.Client, listener, rule string, fail Fail) (map[string]int32, error) {
	var actions []elbtypes.Action
	if rule != "" {
		out, err := c.DescribeRules(ctx, &elb.DescribeRulesInput{RuleArns: []string{rule}})
		if err != nil {
			return nil, fail(err, "read listener rule %s", rule)
		}
		if len(out.Rules) > 0 {
			actions = out.Rules[0].Actions
		}
	} else {
		out, err := c.DescribeListeners(ctx, &elb.DescribeListenersInput{ListenerArns: []string{listener}})
		if err != nil {
			return nil, fail(err, "read listener %s", listener)
		}
		if len(out.Listeners) > 0 {
			actions = out.Listeners[0].DefaultActions
		}
	}
	for _, a := range actions {
		if a.Type != elbtypes.ActionTypeEnumForward {
			continue
		}
		out := map[string]int32{}
		if a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) > 0 {
			for _, tg := range a.ForwardConfig.TargetGroups {
				out[aws.ToString(tg.TargetGroupArn)] = aws.ToInt32(tg.Weight)
			}
		} else if tg := aws.ToString(a.TargetGroupArn); tg != "" {
			out[tg] = 100
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, contract.Fail(contract.Verification, "listener %s (rule %s) does not forward to a target group", listener, rule)
}

// Set makes a rule (or the listener) forward by weights: to the one group, or weighted.
func Set(ctx context.Context, c *elb.Client, listener, rule string, weights map[string]int32, fail Fail) error {
	action := elbtypes.Action{Type: elbtypes.ActionTypeEnumForward}
	tgs := Groups(weights)
	if len(tgs) == 1 {
		action.TargetGroupArn = aws.String(tgs[0])
	} else {
		fc := &elbtypes.ForwardActionConfig{}
		for _, tg := range tgs {
			fc.TargetGroups = append(fc.TargetGroups, elbtypes.TargetGroupTuple{TargetGroupArn: aws.String(tg), Weight: aws.Int32(weights[tg])})
		}
		action.ForwardConfig = fc
	}
	if rule != "" {
		if _, err := c.ModifyRule(ctx, &elb.ModifyRuleInput{RuleArn: aws.String(rule), Actions: []elbtypes.Action{action}}); err != nil {
			return fail(err, "point listener rule %s at %s", rule, String(weights))
		}
		return nil
	}
	if _, err := c.ModifyListener(ctx, &elb.ModifyListenerInput{ListenerArn: aws.String(listener), DefaultActions: []elbtypes.Action{action}}); err != nil {
		return fail(err, "point listener %s at %s", listener, String(weights))
	}
	return nil
}

// Groups are the target groups of weights, sorted.
func Groups(weights map[string]int32) []string {
	out := make([]string, 0, len(weights))
	for tg := range weights {
		out = append(out, tg)
	}
	sort.Strings(out)
	return out
}

// Heaviest is the target group with the most weight (the first in order on a tie).
func Heaviest(weights map[string]int32) string {
	best := ""
	for _, tg := range Groups(weights) {
		if best == "" || weights[tg] > weights[best] {
			best = tg
		}
	}
	return best
}

// String describes weights for a log: "tg-a (100), tg-b (0)", or the group alone.
func String(weights map[string]int32) string {
	tgs := Groups(weights)
	if len(tgs) == 1 {
		return tgs[0]
	}
	var parts []string
	for _, tg := range tgs {
		parts = append(parts, fmt.Sprintf("%s (%d)", tg, weights[tg]))
	}
	return strings.Join(parts, ", ")
}
