package asg

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// The phased canary: AsgSetup creates the next group of a base name, NAME__N, at no instances
// and records the capacity it is to reach and the resize order; each AsgPhasedDeploy brings it
// to a share of that capacity and the older groups down by as many; AsgRollback deletes it and
// gives the older groups their capacity back.

const (
	tagTarget = "gantry-phased-target"          // the new group's full capacity, MIN,MAX,DESIRED
	tagResize = "gantry-phased-resize-strategy" // resize_new_first or downsize_old_first
)

// versions returns a base name's NAME__N groups, oldest first.
func (r *run) versions(ctx context.Context, base string) ([]astypes.AutoScalingGroup, error) {
	var out []astypes.AutoScalingGroup
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(r.asg, &autoscaling.DescribeAutoScalingGroupsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, r.fail(err, "list Auto Scaling groups")
		}
		for _, g := range page.AutoScalingGroups {
			if _, ok := suffix(base, aws.ToString(g.AutoScalingGroupName)); ok {
				out = append(out, g)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := suffix(base, aws.ToString(out[i].AutoScalingGroupName))
		b, _ := suffix(base, aws.ToString(out[j].AutoScalingGroupName))
		return a < b
	})
	return out, nil
}

func suffix(base, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, base+"__")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// setup deletes the older groups that run nothing, and creates the next one at no instances.
func (r *run) setup(ctx context.Context, sp *stepspec.AsgSetupSpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	strategy := sp.ResizeStrategy
	if strategy != "resize_new_first" && strategy != "downsize_old_first" {
		return nil, contract.Fail(contract.Verification, "AsgSetup resizeStrategy %q is not resize_new_first or downsize_old_first", strategy)
	}
	cfg, err := r.configuration()
	if err != nil {
		return nil, err
	}
	groups, err := r.versions(ctx, base)
	if err != nil {
		return nil, err
	}
	next, olds := 1, []string{}
	var live *astypes.AutoScalingGroup
	for i := range groups {
		g := &groups[i]
		n, _ := suffix(base, aws.ToString(g.AutoScalingGroupName))
		next = max(next, n+1)
		if aws.ToInt32(g.DesiredCapacity) == 0 && len(g.Instances) == 0 {
			if err := r.remove(ctx, aws.ToString(g.AutoScalingGroupName), true); err != nil {
				return nil, err
			}
			continue
		}
		if err := r.record(ctx, g); err != nil {
			return nil, err
		}
		live = g
		olds = append(olds, aws.ToString(g.AutoScalingGroupName))
	}
	z, err := desiredSize(sp.Instances, "", live, cfg)
	if err != nil {
		return nil, err
	}
	name := base + "__" + strconv.Itoa(next)
	version, err := r.launchTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	tags := map[string]string{tagExecution: r.in.ExecutionID, tagTemplate: "none", tagCapacity: "0,0,0", tagTarget: z.String(), tagResize: strategy}
	if err := r.put(ctx, name, version, size{0, z.max, 0}, nil, cfg, nil, tags); err != nil {
		return nil, err
	}
	if err := r.policies(ctx, name); err != nil {
		return nil, err
	}
	return map[string]any{"asgName": name, "launchTemplateVersion": version, "targetDesiredCapacity": z.desired, "oldAsgNames": olds}, nil
}

// phasedDeploy brings the new group to the selected share of its full capacity (a count, or a
// percentage of it) and the older groups down by as many instances, newest kept longest, in
// the setup's resize order.
func (r *run) phasedDeploy(ctx context.Context, sp *stepspec.AsgPhasedDeploySpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	groups, err := r.versions(ctx, base)
	if err != nil {
		return nil, err
	}
	var mine *astypes.AutoScalingGroup
	var olds []astypes.AutoScalingGroup
	for i := range groups {
		g := &groups[i]
		if tag(g, tagTarget) != "" && tag(g, tagExecution) == r.in.ExecutionID && tag(g, tagTemplate) == "none" {
			mine = &groups[i]
		} else {
			olds = append(olds, groups[i])
		}
	}
	if mine == nil {
		return nil, contract.Fail(contract.Verification, "AsgPhasedDeploy: no group %s__N was set up by this execution: AsgSetup comes first", base)
	}
	name := aws.ToString(mine.AutoScalingGroupName)
	target, _ := parseSize(tag(mine, tagTarget))
	n, err := count(sp.InstanceSelection, target.desired)
	if err != nil {
		return nil, err
	}
	n = min(n, target.desired)
	grow := func() error {
		if err := r.resize(ctx, name, size{min(target.min, n), target.max, n}); err != nil {
			return err
		}
		_, err := r.steady(ctx, name)
		return err
	}
	// The older groups keep what the new one does not run yet, taken from the oldest first.
	shrink := func() error {
		keep := target.desired - n
		for i := len(olds) - 1; i >= 0; i-- {
			g := &olds[i]
			was := sizeOf(g)
			want := min(was.desired, keep)
			keep -= want
			if want == was.desired {
				continue
			}
			if err := r.resize(ctx, aws.ToString(g.AutoScalingGroupName), size{min(was.min, want), was.max, want}); err != nil {
				return err
			}
			if _, err := r.steady(ctx, aws.ToString(g.AutoScalingGroupName)); err != nil {
				return err
			}
		}
		return nil
	}
	steps := []func() error{grow, shrink}
	if tag(mine, tagResize) == "downsize_old_first" {
		steps = []func() error{shrink, grow}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return map[string]any{"asgName": name, "desiredCapacity": n, "targetDesiredCapacity": target.desired}, nil
}

// phasedRollback deletes the group this execution set up and gives the older ones the
// capacity they had.
func (r *run) phasedRollback(ctx context.Context, sp *stepspec.AsgFollowerSpec) (map[string]any, error) {
	base, err := r.baseName(sp.AsgName)
	if err != nil {
		return nil, err
	}
	groups, err := r.versions(ctx, base)
	if err != nil {
		return nil, err
	}
	var restored []string
	var deleted string
	// The older groups first, so capacity is back before the new group goes.
	sort.SliceStable(groups, func(i, j int) bool {
		return tag(&groups[i], tagTemplate) != "none" && tag(&groups[j], tagTemplate) == "none"
	})
	for i := range groups {
		g := &groups[i]
		if tag(g, tagExecution) != r.in.ExecutionID {
			continue
		}
		name := aws.ToString(g.AutoScalingGroupName)
		if tag(g, tagTemplate) == "none" {
			if err := r.remove(ctx, name, true); err != nil {
				return nil, err
			}
			deleted = name
			continue
		}
		z, _ := parseSize(tag(g, tagCapacity))
		if err := r.resize(ctx, name, z); err != nil {
			return nil, err
		}
		if _, err := r.steady(ctx, name); err != nil {
			return nil, err
		}
		restored = append(restored, name)
	}
	if deleted == "" && len(restored) == 0 {
		r.logf("no group of %s was changed by this execution: nothing to roll back", base)
	}
	return map[string]any{"rolledBack": deleted != "" || len(restored) > 0, "deletedAsgName": deleted, "restoredAsgNames": restored}, nil
}
