package asg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/gantry-cd/gantry/activities/listeners"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// Blue-green keeps two groups, NAME__1 and NAME__2, each with its own target groups. The one
// tagged BG_VERSION=BLUE serves the prod listener; a deploy updates (or creates) the other one
// behind the stage listener, tagged GREEN, and the swap exchanges what the listeners forward
// to. The first deploy, with no group yet, goes straight behind the prod listener. With no
// stage listener the prod rule forwards to two target groups by weight, and AsgShiftTraffic
// moves the weight to the new group's.

const (
	blue, green = "BLUE", "GREEN"
	tagDeployed = "gantry-bg-deployed" // the execution that deployed the group
	tagSwapped  = "gantry-bg-swapped"  // the execution that sent it prod traffic
)

// lbConfig is one load balancer's listeners (the step's own fields, or a loadBalancers item).
type lbConfig = stepspec.AsgLoadBalancer

// shifting reports load balancers without stage listeners: traffic moves by weight.
func shifting(lbs []lbConfig) bool {
	for _, lb := range lbs {
		if lb.StageListener != "" || lb.StageListenerRuleArn != "" {
			return false
		}
	}
	return true
}

// forward returns each target group a listener rule (or the listener) forwards to, weighted.
func (r *run) forward(ctx context.Context, listener, rule string) (map[string]int32, error) {
	return listeners.Forwards(ctx, r.elb, listener, rule, r.fail)
}

// setForward makes a listener rule (or the listener) forward by weights.
func (r *run) setForward(ctx context.Context, listener, rule string, weights map[string]int32) error {
	if err := listeners.Set(ctx, r.elb, listener, rule, weights, r.fail); err != nil {
		return err
	}
	r.logf("listener %s rule %s now forwards to %s", listener, rule, listeners.String(weights))
	return nil
}

// pair returns the blue-green groups of a base name: the one serving prod (nil: none yet) and
// the other, which the next deploy updates (nil: it does not exist yet), with its name.
func (r *run) pair(ctx context.Context, base string) (prod, other *astypes.AutoScalingGroup, otherName string, err error) {
	var gs [2]*astypes.AutoScalingGroup
	for i := range gs {
		if gs[i], err = r.describe(ctx, fmt.Sprintf("%s__%d", base, i+1)); err != nil {
			return nil, nil, "", err
		}
	}
	switch {
	case gs[0] == nil && gs[1] == nil:
		return nil, nil, base + "__1", nil
	case gs[1] == nil:
		return gs[0], nil, base + "__2", nil
	case gs[0] == nil:
		return gs[1], nil, base + "__1", nil
	case tag(gs[1], tagBG) == blue && tag(gs[0], tagBG) != blue:
		return gs[1], gs[0], base + "__1", nil
	}
	return gs[0], gs[1], base + "__2", nil
}

// deployed returns the group this execution's AsgBlueGreenDeploy deployed and the other one.
func (r *run) deployed(ctx context.Context, base string) (mine, other *astypes.AutoScalingGroup, err error) {
	a, b, _, err := r.pair(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case b != nil && tag(b, tagDeployed) == r.in.ExecutionID:
		return b, a, nil
	case a != nil && tag(a, tagDeployed) == r.in.ExecutionID:
		return a, b, nil
	}
	return nil, nil, nil
}

// blueGreenDeploy deploys the new version to the group not serving prod, behind the stage
// listener's target groups (or, when traffic shifts by weight, the prod rule's target group
// the live group is not in).
func (r *run) blueGreenDeploy(ctx context.Context, sp *stepspec.AsgBlueGreenDeploySpec) (map[string]any, error) {
	lbs := sp.Listeners()
	if len(lbs) == 0 {
		return nil, contract.Fail(contract.Verification, "AsgBlueGreenDeploy needs a load balancer: prodListener and prodListenerRuleArn (and stage ones), or loadBalancers")
	}
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	cfg, err := r.configuration()
	if err != nil {
		return nil, err
	}
	prod, other, name, err := r.pair(ctx, base)
	if err != nil {
		return nil, err
	}
	var tgs []string
	for _, lb := range lbs {
		prodW, err := r.forward(ctx, lb.ProdListener, lb.ProdListenerRuleArn)
		if err != nil {
			return nil, err
		}
		switch {
		case prod == nil:
			tgs = append(tgs, listeners.Heaviest(prodW))
		case shifting(lbs):
			free := ""
			for _, tg := range listeners.Groups(prodW) {
				if !contains(prod.TargetGroupARNs, tg) && free == "" {
					free = tg
				}
			}
			if free == "" {
				return nil, contract.Fail(contract.Verification, "prod listener rule %s forwards only to the target groups of %s: to shift traffic by weight it must forward to a second target group for the new group",
					lb.ProdListenerRuleArn, aws.ToString(prod.AutoScalingGroupName))
			}
			tgs = append(tgs, free)
		default:
			stageW, err := r.forward(ctx, lb.StageListener, lb.StageListenerRuleArn)
			if err != nil {
				return nil, err
			}
			tgs = append(tgs, listeners.Heaviest(stageW))
		}
	}
	z, err := desiredSize(sp.Instances, sp.UseAlreadyRunningInstances, prod, cfg)
	if err != nil {
		return nil, err
	}
	role := green
	if prod == nil {
		role = blue
	}
	tags := map[string]string{tagBG: role, tagDeployed: r.in.ExecutionID}
	var create map[string]string
	if other != nil {
		if err := r.record(ctx, other); err != nil {
			return nil, err
		}
	} else {
		create = map[string]string{tagExecution: r.in.ExecutionID, tagTemplate: "none", tagCapacity: "0,0,0", tagBG: role, tagDeployed: r.in.ExecutionID}
	}
	version, err := r.launchTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.put(ctx, name, version, z, other, cfg, tgs, create); err != nil {
		return nil, err
	}
	if other != nil {
		if err := r.setTags(ctx, name, tags); err != nil {
			return nil, err
		}
	}
	if err := r.policies(ctx, name); err != nil {
		return nil, err
	}
	ids, err := r.steady(ctx, name)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"asgName": name, "launchTemplateVersion": version, "targetGroups": tgs, "instances": ids, "prodAsgName": ""}
	if prod != nil {
		out["prodAsgName"] = aws.ToString(prod.AutoScalingGroupName)
	}
	return out, nil
}

// blueGreenSwap sends prod traffic to the group this execution deployed and stage traffic to
// the other, whose instances it stops when downsizeOldAsg.
func (r *run) blueGreenSwap(ctx context.Context, sp *stepspec.AsgBlueGreenSwapServiceSpec) (map[string]any, error) {
	mine, old, err := r.deployedFor(ctx, sp.AsgName)
	if err != nil {
		return nil, err
	}
	name := aws.ToString(mine.AutoScalingGroupName)
	if old == nil {
		r.logf("%s is the only blue-green group and already serves prod traffic: nothing to swap", name)
		return map[string]any{"prodAsgName": name, "swapped": false}, nil
	}
	if tag(mine, tagSwapped) != r.in.ExecutionID {
		if err := r.swap(ctx, sp.LoadBalancers); err != nil {
			return nil, err
		}
		if err := r.roles(ctx, mine, old, map[string]string{tagSwapped: r.in.ExecutionID}); err != nil {
			return nil, err
		}
	}
	if err := r.downsize(ctx, old, truthy(sp.DownsizeOldAsg)); err != nil {
		return nil, err
	}
	return map[string]any{"prodAsgName": name, "stageAsgName": aws.ToString(old.AutoScalingGroupName), "swapped": true}, nil
}

// deployedFor is deployed for a step's base name, failing when no deploy ran.
func (r *run) deployedFor(ctx context.Context, asgName string) (mine, other *astypes.AutoScalingGroup, err error) {
	base, err := r.baseName(asgName)
	if err != nil {
		return nil, nil, err
	}
	if mine, other, err = r.deployed(ctx, base); err == nil && mine == nil {
		err = contract.Fail(contract.Verification, "%s: no group %s__1 or %s__2 was deployed by this execution: AsgBlueGreenDeploy comes first", r.in.Type, base, base)
	}
	return mine, other, err
}

// swap exchanges what each load balancer's prod and stage listeners forward to.
func (r *run) swap(ctx context.Context, lbs []lbConfig) error {
	for _, lb := range lbs {
		prodW, err := r.forward(ctx, lb.ProdListener, lb.ProdListenerRuleArn)
		if err != nil {
			return err
		}
		stageW, err := r.forward(ctx, lb.StageListener, lb.StageListenerRuleArn)
		if err != nil {
			return err
		}
		if err := r.setForward(ctx, lb.ProdListener, lb.ProdListenerRuleArn, stageW); err != nil {
			return err
		}
		if err := r.setForward(ctx, lb.StageListener, lb.StageListenerRuleArn, prodW); err != nil {
			return err
		}
	}
	return nil
}

// roles tags prod BLUE and stage GREEN, with extra tags on prod.
func (r *run) roles(ctx context.Context, prod, stage *astypes.AutoScalingGroup, extra map[string]string) error {
	tags := map[string]string{tagBG: blue}
	for k, v := range extra {
		tags[k] = v
	}
	if err := r.setTags(ctx, aws.ToString(prod.AutoScalingGroupName), tags); err != nil {
		return err
	}
	return r.setTags(ctx, aws.ToString(stage.AutoScalingGroupName), map[string]string{tagBG: green})
}

// downsize stops the old group's instances, recording its capacity first, when asked.
func (r *run) downsize(ctx context.Context, old *astypes.AutoScalingGroup, yes bool) error {
	if !yes {
		return nil
	}
	if err := r.record(ctx, old); err != nil {
		return err
	}
	return r.resize(ctx, aws.ToString(old.AutoScalingGroupName), size{})
}

// shiftTraffic gives the group this execution deployed a weight (of 100) on each prod rule,
// the old group the rest; at 100 the new group becomes BLUE, and downsizeOldAsg stops the old.
func (r *run) shiftTraffic(ctx context.Context, sp *stepspec.AsgShiftTrafficSpec) (map[string]any, error) {
	w, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(sp.Weight)))
	if err != nil || w < 0 || w > 100 {
		return nil, contract.Fail(contract.Verification, "AsgShiftTraffic weight %v is not a whole number from 0 to 100", sp.Weight)
	}
	mine, old, err := r.deployedFor(ctx, sp.AsgName)
	if err != nil {
		return nil, err
	}
	name := aws.ToString(mine.AutoScalingGroupName)
	if old == nil {
		r.logf("%s is the only blue-green group and already receives all traffic", name)
		return map[string]any{"asgName": name, "weight": 100}, nil
	}
	if err := r.setTags(ctx, name, map[string]string{tagSwapped: r.in.ExecutionID}); err != nil {
		return nil, err
	}
	if err := r.weigh(ctx, sp.LoadBalancers, mine, int32(w)); err != nil {
		return nil, err
	}
	if w == 100 {
		if err := r.roles(ctx, mine, old, nil); err != nil {
			return nil, err
		}
		if err := r.downsize(ctx, old, truthy(sp.DownsizeOldAsg)); err != nil {
			return nil, err
		}
	}
	return map[string]any{"asgName": name, "weight": w, "oldAsgName": aws.ToString(old.AutoScalingGroupName)}, nil
}

// weigh gives the target groups of g weight w on each prod rule, the others 100-w.
func (r *run) weigh(ctx context.Context, lbs []lbConfig, g *astypes.AutoScalingGroup, w int32) error {
	for _, lb := range lbs {
		prodW, err := r.forward(ctx, lb.ProdListener, lb.ProdListenerRuleArn)
		if err != nil {
			return err
		}
		next := map[string]int32{}
		for tg := range prodW {
			next[tg] = 100 - w
			if contains(g.TargetGroupARNs, tg) {
				next[tg] = w
			}
		}
		if err := r.setForward(ctx, lb.ProdListener, lb.ProdListenerRuleArn, next); err != nil {
			return err
		}
	}
	return nil
}

// blueGreenRollback sends prod traffic back to the old group if this execution moved it, gives
// the old group back its capacity, and deletes (or restores) the group this execution deployed.
func (r *run) blueGreenRollback(ctx context.Context, sp *stepspec.AsgFollowerSpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	mine, old, err := r.deployed(ctx, base)
	if err != nil {
		return nil, err
	}
	if mine == nil {
		r.logf("no blue-green group of %s was deployed by this execution: nothing to roll back", base)
		return map[string]any{"rolledBack": false}, nil
	}
	name := aws.ToString(mine.AutoScalingGroupName)
	lbs := sp.LoadBalancers
	if old != nil && tag(mine, tagSwapped) == r.in.ExecutionID {
		var err error
		if shifting(lbs) {
			err = r.weigh(ctx, lbs, old, 100)
		} else {
			err = r.swap(ctx, lbs)
		}
		if err == nil {
			err = r.roles(ctx, old, mine, map[string]string{tagSwapped: ""})
		}
		if err != nil {
			return nil, err
		}
	}
	if old != nil && tag(old, tagExecution) == r.in.ExecutionID {
		z, _ := parseSize(tag(old, tagCapacity))
		if err := r.resize(ctx, aws.ToString(old.AutoScalingGroupName), z); err != nil {
			return nil, err
		}
		if _, err := r.steady(ctx, aws.ToString(old.AutoScalingGroupName)); err != nil {
			return nil, err
		}
	}
	if err := r.setTags(ctx, name, map[string]string{tagDeployed: ""}); err != nil {
		return nil, err
	}
	out, err := r.restore(ctx, mine)
	if err != nil {
		return nil, err
	}
	if old != nil {
		out["prodAsgName"] = aws.ToString(old.AutoScalingGroupName)
	}
	return out, nil
}
