package asg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// rollingDeploy creates the group (first deploy) or updates it to a new launch template
// version, sets its policies and scheduled actions, and replaces its instances with an
// instance refresh; it waits for the group's steady state.
func (r *run) rollingDeploy(ctx context.Context, sp *stepspec.AsgRollingDeploySpec) (map[string]any, error) {
	name, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	cfg, err := r.configuration()
	if err != nil {
		return nil, err
	}
	live, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	z, err := desiredSize(sp.Instances, sp.UseAlreadyRunningInstances, live, cfg)
	if err != nil {
		return nil, err
	}
	previous, tags := "none", map[string]string(nil)
	if live != nil {
		if err := r.record(ctx, live); err != nil {
			return nil, err
		}
		previous = tag(live, tagTemplate)
	} else {
		tags = map[string]string{tagExecution: r.in.ExecutionID, tagTemplate: "none", tagCapacity: "0,0,0"}
	}
	version, err := r.launchTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.put(ctx, name, version, z, live, cfg, nil, tags); err != nil {
		return nil, err
	}
	if err := r.policies(ctx, name); err != nil {
		return nil, err
	}
	if live != nil && len(live.Instances) > 0 {
		if err := r.refresh(ctx, name, percent(sp.MinimumHealthyPercentage, 90), percent(sp.MaximumHealthyPercentage, 110), sp.InstanceWarmup, truthy(sp.SkipMatching)); err != nil {
			return nil, err
		}
	}
	ids, err := r.steady(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.markDeployed(ctx, name, version, z); err != nil {
		return nil, err
	}
	r.logf("rolling deployment of %s finished: launch template version %s on %d instances", name, version, len(ids))
	return map[string]any{"asgName": name, "launchTemplateVersion": version, "previousLaunchTemplateVersion": previous,
		"desiredCapacity": z.desired, "instances": ids}, nil
}

func percent(v any, dflt int32) int32 {
	if n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(v))); err == nil {
		return int32(n)
	}
	return dflt
}

// refresh replaces a group's instances with its launch template version, and waits for the
// refresh to end.
func (r *run) refresh(ctx context.Context, name string, minHealthy, maxHealthy int32, warmup any, skipMatching bool) error {
	prefs := &astypes.RefreshPreferences{MinHealthyPercentage: aws.Int32(minHealthy), MaxHealthyPercentage: aws.Int32(maxHealthy), SkipMatching: aws.Bool(skipMatching)}
	if w, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(warmup))); err == nil {
		prefs.InstanceWarmup = aws.Int32(int32(w))
	}
	start := &autoscaling.StartInstanceRefreshInput{AutoScalingGroupName: aws.String(name), Strategy: astypes.RefreshStrategyRolling, Preferences: prefs}
	out, err := r.asg.StartInstanceRefresh(ctx, start)
	var busy *astypes.InstanceRefreshInProgressFault
	if errors.As(err, &busy) {
		// One already runs (this step's own, when the step is retried): it ends first.
		r.logf("an instance refresh of %s is in progress: waiting for it to end", name)
		if err := r.wait(ctx, "the instance refresh in progress of "+name, func() (bool, error) {
			d, err := r.asg.DescribeInstanceRefreshes(ctx, &autoscaling.DescribeInstanceRefreshesInput{AutoScalingGroupName: aws.String(name)})
			if err != nil {
				return false, r.fail(err, "describe the instance refreshes of %s", name)
			}
			for _, ir := range d.InstanceRefreshes {
				switch ir.Status {
				case astypes.InstanceRefreshStatusPending, astypes.InstanceRefreshStatusInProgress, astypes.InstanceRefreshStatusCancelling,
					astypes.InstanceRefreshStatusRollbackInProgress, astypes.InstanceRefreshStatusBaking:
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			return err
		}
		out, err = r.asg.StartInstanceRefresh(ctx, start)
	}
	if err != nil {
		return r.fail(err, "start an instance refresh of Auto Scaling group %s", name)
	}
	id := aws.ToString(out.InstanceRefreshId)
	r.logf("started instance refresh %s of %s (healthy %d%%..%d%%)", id, name, minHealthy, maxHealthy)
	return r.wait(ctx, "instance refresh "+id+" of "+name, func() (bool, error) {
		d, err := r.asg.DescribeInstanceRefreshes(ctx, &autoscaling.DescribeInstanceRefreshesInput{AutoScalingGroupName: aws.String(name), InstanceRefreshIds: []string{id}})
		if err != nil {
			return false, r.fail(err, "describe instance refresh %s of %s", id, name)
		}
		if len(d.InstanceRefreshes) == 0 {
			return false, contract.Fail(contract.Verification, "instance refresh %s of Auto Scaling group %s is gone", id, name)
		}
		ir := d.InstanceRefreshes[0]
		switch ir.Status {
		case astypes.InstanceRefreshStatusSuccessful:
			r.logf("instance refresh %s of %s ended successfully", id, name)
			return true, nil
		case astypes.InstanceRefreshStatusFailed, astypes.InstanceRefreshStatusCancelled, astypes.InstanceRefreshStatusRollbackSuccessful,
			astypes.InstanceRefreshStatusRollbackFailed, astypes.InstanceRefreshStatusBaking:
			if ir.Status == astypes.InstanceRefreshStatusBaking {
				return false, nil
			}
			return false, contract.Fail(contract.Verification, "instance refresh %s of Auto Scaling group %s ended %s: %s", id, name, ir.Status, aws.ToString(ir.StatusReason))
		}
		r.logf("instance refresh %s: %s, %d%% complete", id, ir.Status, aws.ToInt32(ir.PercentageComplete))
		return false, nil
	})
}

// rollingRollback puts back what this execution's rolling deploy changed: a group it created
// is deleted with its launch template; an updated one gets its launch template version and
// capacity back, its instances refreshed.
func (r *run) rollingRollback(ctx context.Context, sp *stepspec.AsgFollowerSpec) (map[string]any, error) {
	name, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	g, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if of := r.d.RollbackOf; of != "" {
		// A post-deployment rollback undoes the earlier execution's deploy, which must still be
		// the group's last.
		switch {
		case g == nil:
			return nil, contract.Fail(contract.Unknown, "Auto Scaling group %s no longer exists; nothing was rolled back", name)
		case tag(g, tagExecution) != of:
			return nil, contract.Fail(contract.Unknown, "Auto Scaling group %s was last deployed by execution %s, not %s, so that deployment is no longer what runs; nothing was rolled back", name, tag(g, tagExecution), of)
		case tag(g, tagTemplate) == "none":
			return nil, contract.Fail(contract.Unknown, "Auto Scaling group %s was created by execution %s: it had no launch template version before to restore; nothing was rolled back", name, of)
		}
	} else if g == nil || tag(g, tagExecution) != r.in.ExecutionID {
		r.logf("Auto Scaling group %s was not changed by this execution: nothing to roll back", name)
		return map[string]any{"asgName": name, "rolledBack": false}, nil
	}
	return r.restore(ctx, g)
}

// restore puts a group this execution changed back as its tags record.
func (r *run) restore(ctx context.Context, g *astypes.AutoScalingGroup) (map[string]any, error) {
	name := aws.ToString(g.AutoScalingGroupName)
	prev := tag(g, tagTemplate)
	if prev == "none" {
		if err := r.remove(ctx, name, true); err != nil {
			return nil, err
		}
		return map[string]any{"asgName": name, "rolledBack": true, "deleted": true}, nil
	}
	z, ok := parseSize(tag(g, tagCapacity))
	if !ok {
		return nil, contract.Fail(contract.Verification, "Auto Scaling group %s: the recorded capacity %q is not MIN,MAX,DESIRED", name, tag(g, tagCapacity))
	}
	r.logf("rolling %s back to launch template version %s, min %d, max %d, desired %d", name, prev, z.min, z.max, z.desired)
	if _, err := r.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(name),
		LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String(name), Version: aws.String(prev)},
		MinSize:        aws.Int32(z.min), MaxSize: aws.Int32(z.max), DesiredCapacity: aws.Int32(z.desired)}); err != nil {
		return nil, r.fail(err, "roll back Auto Scaling group %s", name)
	}
	if z.desired > 0 && len(g.Instances) > 0 {
		if err := r.refresh(ctx, name, 100, 200, nil, true); err != nil {
			return nil, err
		}
	}
	ids, err := r.steady(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.markDeployed(ctx, name, prev, z); err != nil {
		return nil, err
	}
	return map[string]any{"asgName": name, "rolledBack": true, "launchTemplateVersion": prev, "instances": ids}, nil
}

// canaryDeploy starts the new version in a group of its own, NAME__Canary, at the instances
// selected (a percentage of the live group's desired capacity, or the configuration's).
func (r *run) canaryDeploy(ctx context.Context, sp *stepspec.AsgCanaryDeploySpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	cfg, err := r.configuration()
	if err != nil {
		return nil, err
	}
	name := base + "__Canary"
	prod, err := r.describe(ctx, base)
	if err != nil {
		return nil, err
	}
	of := aws.ToInt32(cfg.DesiredCapacity)
	if prod != nil {
		of = aws.ToInt32(prod.DesiredCapacity)
	}
	n, err := count(sp.InstanceSelection, of)
	if err != nil {
		return nil, err
	}
	live, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	version, err := r.launchTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := r.put(ctx, name, version, size{n, n, n}, live, cfg, nil, map[string]string{"gantry-canary-execution": r.in.ExecutionID}); err != nil {
		return nil, err
	}
	ids, err := r.steady(ctx, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"asgName": name, "launchTemplateVersion": version, "desiredCapacity": n, "instances": ids}, nil
}

// canaryDelete deletes the canary group and its launch template.
func (r *run) canaryDelete(ctx context.Context, sp *stepspec.AsgFollowerSpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	name := base + "__Canary"
	g, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if g == nil {
		r.logf("there is no canary group %s to delete", name)
		return map[string]any{"asgName": name, "deleted": false}, nil
	}
	if err := r.remove(ctx, name, true); err != nil {
		return nil, err
	}
	return map[string]any{"asgName": name, "deleted": true}, nil
}

// scale sets a group's desired capacity (a count, or a percentage of what it wants now),
// widening min and max to hold it, and waits for its steady state unless skipSteadyStateCheck.
func (r *run) scale(ctx context.Context, sp *stepspec.AsgScaleSpec) (map[string]any, error) {
	name, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	g, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, contract.Fail(contract.Verification, "Auto Scaling group %s does not exist in region %s", name, r.d.Region)
	}
	was := sizeOf(g)
	n, err := count(sp.InstanceSelection, was.desired)
	if err != nil {
		return nil, err
	}
	if err := r.resize(ctx, name, size{min(was.min, n), max(was.max, n), n}); err != nil {
		return nil, err
	}
	out := map[string]any{"asgName": name, "desiredCapacity": n, "previousDesiredCapacity": was.desired}
	if truthy(sp.SkipSteadyStateCheck) {
		return out, nil
	}
	ids, err := r.steady(ctx, name)
	out["instances"] = ids
	return out, err
}

// steadyState waits until a group runs its desired capacity.
func (r *run) steadyState(ctx context.Context, sp *stepspec.AsgSteadyStateSpec) (map[string]any, error) {
	if d, err := time.ParseDuration(sp.PollingInterval); err == nil && d > 0 {
		r.poll = d
	}
	name, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	ids, err := r.steady(ctx, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"asgName": name, "instances": ids}, nil
}
