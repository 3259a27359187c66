// Package asg runs the steps of the Asg deployment type with aws-sdk-go-v2's EC2 Auto Scaling,
// EC2 (launch templates) and ELBv2 clients: the rolling strategy (AsgRollingDeploy and
// AsgRollingRollback, rolling.go), the canary (AsgCanaryDeploy, AsgCanaryDelete), blue-green
// (AsgBlueGreenDeploy, AsgBlueGreenSwapService, AsgShiftTraffic, AsgBlueGreenRollback,
// bluegreen.go), the phased canary (AsgSetup, AsgPhasedDeploy, AsgRollback, phased.go), and
// AsgScale and AsgSteadyState.
//
// Every group deployed gets a launch template of its own name, versioned once per deploy from
// the service's AsgLaunchTemplate manifest, and the settings of its AsgConfiguration manifest
// (the CreateAutoScalingGroup request). What a rollback needs is recorded as tags on the groups
// before they change (the execution, the launch template version and capacity to go back to),
// so a rollback needs no state of its own and a retried deploy keeps the first record.
package asg

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// The tags a deploy leaves on the groups it changes, for its rollback.
const (
	tagExecution = "gantry-rollback-execution"
	tagTemplate  = "gantry-rollback-launch-template-version" // a version, or "none": the deploy created the group
	tagCapacity  = "gantry-rollback-capacity"                // "MIN,MAX,DESIRED"
	// tagBG is the reference's blue-green role tag: BLUE serves prod traffic, GREEN stage.
	tagBG = "BG_VERSION"
)

// Activity runs the ASG steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
}

type run struct {
	in   contract.StepInput
	d    *contract.DeployInput
	asg  *autoscaling.Client
	ec2  *ec2.Client
	elb  *elb.Client
	log  *logs.Writer
	mask *secrets.Masker
	// poll is the longest wait between two looks at a group (AsgSteadyState's pollingInterval).
	poll time.Duration
}

// Run runs an ASG step.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	st, err := awsauth.Start(ctx, in, a.Logs, a.Secrets, "Asg")
	if err != nil {
		return contract.StepResult{}, err
	}
	defer st.End()
	ctx = st.Ctx
	r := &run{in: in, d: in.Deploy, log: st.Log, mask: st.Mask, poll: 5 * time.Second,
		asg: autoscaling.NewFromConfig(st.Cfg), ec2: ec2.NewFromConfig(st.Cfg), elb: elb.NewFromConfig(st.Cfg)}
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "Gantry does not run %s steps", in.Type)
	}
	out, err := h(r, ctx, in.Spec)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return contract.StepResult{}, contract.Fail(contract.Timeout, "%s: the Auto Scaling group did not reach its steady state within the step's timeout %s", in.Type, in.Timeout)
		}
		return contract.StepResult{}, err
	}
	return contract.StepResult{Outputs: out}, nil
}

// A handler runs one step type, given its rendered spec.
type handler func(*run, context.Context, json.RawMessage) (map[string]any, error)

// withSpec makes a handler of a function over the step's spec type S (stepspec's, the one
// validation decoded).
func withSpec[S any](f func(*run, context.Context, *S) (map[string]any, error)) handler {
	return func(r *run, ctx context.Context, raw json.RawMessage) (map[string]any, error) {
		sp, err := stepspec.Decode[S](raw)
		if err != nil {
			return nil, contract.Fail(contract.Verification, "%s spec: %v", r.in.Type, err)
		}
		return f(r, ctx, &sp)
	}
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.AsgRollingDeploy:        withSpec((*run).rollingDeploy),
	stepspec.AsgRollingRollback:      withSpec((*run).rollingRollback),
	stepspec.AsgCanaryDeploy:         withSpec((*run).canaryDeploy),
	stepspec.AsgCanaryDelete:         withSpec((*run).canaryDelete),
	stepspec.AsgBlueGreenDeploy:      withSpec((*run).blueGreenDeploy),
	stepspec.AsgBlueGreenSwapService: withSpec((*run).blueGreenSwap),
	stepspec.AsgShiftTraffic:         withSpec((*run).shiftTraffic),
	stepspec.AsgBlueGreenRollback:    withSpec((*run).blueGreenRollback),
	stepspec.AsgSetup:                withSpec((*run).setup),
	stepspec.AsgPhasedDeploy:         withSpec((*run).phasedDeploy),
	stepspec.AsgRollback:             withSpec((*run).phasedRollback),
	stepspec.AsgScale:                withSpec((*run).scale),
	stepspec.AsgSteadyState:          withSpec((*run).steadyState),
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

func truthy(v stepspec.Text) bool { return v == "true" }

func (r *run) logf(format string, args ...any) {
	r.log.Line(r.mask.Apply(fmt.Sprintf(format, args...)))
}

func (r *run) fail(err error, format string, args ...any) error {
	return awsauth.Fail(err, "%s (region %s, connector %s)", fmt.Sprintf(format, args...), r.d.Region, r.d.Aws.ID)
}

var decode = awsauth.Decode

// files returns the files of the service's manifests of a type.
func (r *run) files(typ string) []plan.File { return awsauth.Files(r.d, typ) }

// only is the one file of the service's manifests of a type.
func (r *run) only(typ string) (plan.File, error) {
	fs := r.files(typ)
	if len(fs) != 1 {
		return plan.File{}, contract.Fail(contract.Verification, "an Asg service needs exactly one %s manifest file, it has %d", typ, len(fs))
	}
	return fs[0], nil
}

// configuration is the service's AsgConfiguration: the CreateAutoScalingGroup request.
func (r *run) configuration() (*autoscaling.CreateAutoScalingGroupInput, error) {
	f, err := r.only("AsgConfiguration")
	if err != nil {
		return nil, err
	}
	var in autoscaling.CreateAutoScalingGroupInput
	if err := decode(f, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

// baseName is the group a step deploys: the step's asgName, else the infrastructure's
// baseAsgName, else the configuration's AutoScalingGroupName.
func (r *run) baseName(asgName string) (string, error) {
	if asgName != "" {
		return asgName, nil
	}
	if r.d.AsgName != "" {
		return r.d.AsgName, nil
	}
	cfg, err := r.configuration()
	if err != nil {
		return "", err
	}
	if name := aws.ToString(cfg.AutoScalingGroupName); name != "" {
		return name, nil
	}
	return "", contract.Fail(contract.Verification, "%s needs the group's name: the step's asgName, the infrastructure's baseAsgName or AutoScalingGroupName in the AsgConfiguration manifest", r.in.Type)
}

// describe returns a group, nil when there is none.
func (r *run) describe(ctx context.Context, name string) (*astypes.AutoScalingGroup, error) {
	out, err := r.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		return nil, r.fail(err, "describe Auto Scaling group %s", name)
	}
	if len(out.AutoScalingGroups) == 0 {
		return nil, nil
	}
	return &out.AutoScalingGroups[0], nil
}

func tag(g *astypes.AutoScalingGroup, key string) string {
	for _, t := range g.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// setTags sets tags on a group.
func (r *run) setTags(ctx context.Context, name string, tags map[string]string) error {
	var ts []astypes.Tag
	for k, v := range tags {
		ts = append(ts, astypes.Tag{Key: aws.String(k), Value: aws.String(v), ResourceId: aws.String(name),
			ResourceType: aws.String("auto-scaling-group"), PropagateAtLaunch: aws.Bool(false)})
	}
	if _, err := r.asg.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: ts}); err != nil {
		return r.fail(err, "tag Auto Scaling group %s", name)
	}
	return nil
}

type size struct{ min, max, desired int32 }

func (s size) String() string { return fmt.Sprintf("%d,%d,%d", s.min, s.max, s.desired) }

func sizeOf(g *astypes.AutoScalingGroup) size {
	return size{aws.ToInt32(g.MinSize), aws.ToInt32(g.MaxSize), aws.ToInt32(g.DesiredCapacity)}
}

func parseSize(s string) (size, bool) {
	var z size
	_, err := fmt.Sscanf(s, "%d,%d,%d", &z.min, &z.max, &z.desired)
	return z, err == nil
}

// record tags a group with what its rollback restores, unless this execution already did.
func (r *run) record(ctx context.Context, g *astypes.AutoScalingGroup) error {
	name := aws.ToString(g.AutoScalingGroupName)
	if g.LaunchTemplate == nil {
		return contract.Fail(contract.Verification, "Auto Scaling group %s launches from a launch configuration or a mixed instances policy: Gantry deploys groups that use a launch template", name)
	}
	if tag(g, tagExecution) == r.in.ExecutionID {
		return nil
	}
	tags := map[string]string{tagExecution: r.in.ExecutionID, tagTemplate: aws.ToString(g.LaunchTemplate.Version), tagCapacity: sizeOf(g).String()}
	for k, v := range tags { // ahead of the old values, for tag()
		g.Tags = append([]astypes.TagDescription{{Key: aws.String(k), Value: aws.String(v)}}, g.Tags...)
	}
	return r.setTags(ctx, name, tags)
}

// launchTemplate writes the service's launch template as a new version of the template named
// like the group (creating it on the first deploy) and returns the version.
func (r *run) launchTemplate(ctx context.Context, name string) (string, error) {
	f, err := r.only("AsgLaunchTemplate")
	if err != nil {
		return "", err
	}
	var doc struct {
		LaunchTemplateData *ec2types.RequestLaunchTemplateData
	}
	if err := decode(f, &doc); err != nil {
		return "", err
	}
	data := doc.LaunchTemplateData
	if data == nil { // the data itself, without the request around it
		data = &ec2types.RequestLaunchTemplateData{}
		if err := decode(f, data); err != nil {
			return "", err
		}
	}
	if a := r.d.Artifact; a != nil && a.Type == "AmazonMachineImage" && a.Image != "" {
		// The service's AMI artifact is the image, whatever the template says.
		data.ImageId = aws.String(a.Image)
	}
	if ud := r.files("AsgUserData"); len(ud) > 0 {
		data.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(ud[0].Text)))
	}
	if aws.ToString(data.ImageId) == "" {
		return "", contract.Fail(contract.Verification, "launch template %s has no ImageId: name the AMI the instances run", f.Path)
	}
	desc := aws.String("deployed by Gantry execution " + r.in.ExecutionID)
	_, err = r.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	var api smithy.APIError
	if errors.As(err, &api) && strings.Contains(api.ErrorCode(), "NotFound") {
		out, err := r.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data, VersionDescription: desc})
		if err != nil {
			return "", r.fail(err, "create launch template %s", name)
		}
		r.logf("created launch template %s (image %s)", name, aws.ToString(data.ImageId))
		return strconv.FormatInt(aws.ToInt64(out.LaunchTemplate.LatestVersionNumber), 10), nil
	}
	if err != nil {
		return "", r.fail(err, "describe launch template %s", name)
	}
	out, err := r.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data, VersionDescription: desc})
	if err != nil {
		return "", r.fail(err, "create a version of launch template %s", name)
	}
	v := strconv.FormatInt(aws.ToInt64(out.LaunchTemplateVersion.VersionNumber), 10)
	r.logf("created version %s of launch template %s (image %s)", v, name, aws.ToString(data.ImageId))
	return v, nil
}

// desiredSize is a deploy's capacity: Fixed instances, the live group's (CurrentRunning or
// useAlreadyRunningInstances; the reference's 0,10,6 when nothing runs), or the configuration's.
func desiredSize(instances *stepspec.AsgInstances, useRunning stepspec.Text, live *astypes.AutoScalingGroup, cfg *autoscaling.CreateAutoScalingGroupInput) (size, error) {
	if instances != nil && instances.Type == "Fixed" && instances.Spec != nil {
		var z size
		for _, f := range []struct {
			v   any
			to  *int32
			key string
		}{{instances.Spec.Min, &z.min, "min"}, {instances.Spec.Max, &z.max, "max"}, {instances.Spec.Desired, &z.desired, "desired"}} {
			n, err := strconv.Atoi(strings.TrimSpace(fmt.Sprint(f.v)))
			if err != nil || n < 0 {
				return size{}, contract.Fail(contract.Verification, "instances %s %v is not a whole number", f.key, f.v)
			}
			*f.to = int32(n)
		}
		if z.min > z.desired || z.desired > z.max {
			return size{}, contract.Fail(contract.Verification, "instances: desired %d must be between min %d and max %d", z.desired, z.min, z.max)
		}
		return z, nil
	}
	if (instances != nil && instances.Type == "CurrentRunning") || truthy(useRunning) {
		if live != nil {
			return sizeOf(live), nil
		}
		return size{0, 10, 6}, nil
	}
	return size{aws.ToInt32(cfg.MinSize), aws.ToInt32(cfg.MaxSize), aws.ToInt32(cfg.DesiredCapacity)}, nil
}

// put creates a group from the configuration, or updates it, to run a launch template version
// at a size. Tags are added to a new group.
func (r *run) put(ctx context.Context, name, version string, z size, live *astypes.AutoScalingGroup, cfg *autoscaling.CreateAutoScalingGroupInput, targetGroups []string, tags map[string]string) error {
	lt := &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String(name), Version: aws.String(version)}
	if live == nil {
		in := *cfg
		in.AutoScalingGroupName, in.LaunchTemplate, in.LaunchConfigurationName, in.MixedInstancesPolicy = aws.String(name), lt, nil, nil
		in.MinSize, in.MaxSize, in.DesiredCapacity = aws.Int32(z.min), aws.Int32(z.max), aws.Int32(z.desired)
		in.TargetGroupARNs = append(append([]string(nil), cfg.TargetGroupARNs...), targetGroups...)
		in.Tags = append([]astypes.Tag(nil), cfg.Tags...)
		for k, v := range tags {
			in.Tags = append(in.Tags, astypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		r.logf("creating Auto Scaling group %s: launch template version %s, min %d, max %d, desired %d", name, version, z.min, z.max, z.desired)
		if _, err := r.asg.CreateAutoScalingGroup(ctx, &in); err != nil {
			return r.fail(err, "create Auto Scaling group %s", name)
		}
		return nil
	}
	// The configuration's settings that an update takes, by the requests' shared field names.
	var up autoscaling.UpdateAutoScalingGroupInput
	js, _ := json.Marshal(cfg)
	_ = json.Unmarshal(js, &up)
	up.AutoScalingGroupName, up.LaunchTemplate, up.LaunchConfigurationName, up.MixedInstancesPolicy = aws.String(name), lt, nil, nil
	up.MinSize, up.MaxSize, up.DesiredCapacity = aws.Int32(z.min), aws.Int32(z.max), aws.Int32(z.desired)
	r.logf("updating Auto Scaling group %s: launch template version %s, min %d, max %d, desired %d", name, version, z.min, z.max, z.desired)
	if _, err := r.asg.UpdateAutoScalingGroup(ctx, &up); err != nil {
		return r.fail(err, "update Auto Scaling group %s", name)
	}
	return r.attach(ctx, live, targetGroups)
}

// attach makes a group's target groups those given (nil: leaves them).
func (r *run) attach(ctx context.Context, g *astypes.AutoScalingGroup, targetGroups []string) error {
	if targetGroups == nil {
		return nil
	}
	name := aws.ToString(g.AutoScalingGroupName)
	var add, drop []string
	for _, tg := range targetGroups {
		if !contains(g.TargetGroupARNs, tg) {
			add = append(add, tg)
		}
	}
	for _, tg := range g.TargetGroupARNs {
		if !contains(targetGroups, tg) {
			drop = append(drop, tg)
		}
	}
	if len(add) > 0 {
		if _, err := r.asg.AttachLoadBalancerTargetGroups(ctx, &autoscaling.AttachLoadBalancerTargetGroupsInput{AutoScalingGroupName: aws.String(name), TargetGroupARNs: add}); err != nil {
			return r.fail(err, "attach target groups %v to Auto Scaling group %s", add, name)
		}
	}
	if len(drop) > 0 {
		if _, err := r.asg.DetachLoadBalancerTargetGroups(ctx, &autoscaling.DetachLoadBalancerTargetGroupsInput{AutoScalingGroupName: aws.String(name), TargetGroupARNs: drop}); err != nil {
			return r.fail(err, "detach target groups %v from Auto Scaling group %s", drop, name)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resize sets a group's size.
func (r *run) resize(ctx context.Context, name string, z size) error {
	r.logf("resizing Auto Scaling group %s to min %d, max %d, desired %d", name, z.min, z.max, z.desired)
	_, err := r.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(name),
		MinSize: aws.Int32(z.min), MaxSize: aws.Int32(z.max), DesiredCapacity: aws.Int32(z.desired)})
	if err != nil {
		return r.fail(err, "resize Auto Scaling group %s", name)
	}
	return nil
}

// remove deletes a group and its instances, and its launch template when asked.
func (r *run) remove(ctx context.Context, name string, template bool) error {
	r.logf("deleting Auto Scaling group %s", name)
	if _, err := r.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true)}); err != nil {
		return r.fail(err, "delete Auto Scaling group %s", name)
	}
	if err := r.wait(ctx, "deletion of Auto Scaling group "+name, func() (bool, error) {
		g, err := r.describe(ctx, name)
		return g == nil, err
	}); err != nil {
		return err
	}
	if template {
		if _, err := r.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)}); err != nil {
			return r.fail(err, "delete launch template %s", name)
		}
	}
	return nil
}

// wait polls done with a growing delay, up to r.poll, until it says so or ctx ends.
func (r *run) wait(ctx context.Context, what string, done func() (bool, error)) error {
	for delay := 50 * time.Millisecond; ; delay = min(delay*2, r.poll) {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// steady waits until a group runs its desired capacity, every instance InService on its
// launch template version; it returns the instances' IDs.
func (r *run) steady(ctx context.Context, name string) ([]string, error) {
	var ids []string
	last := ""
	err := r.wait(ctx, "Auto Scaling group "+name+" to reach its steady state", func() (bool, error) {
		g, err := r.describe(ctx, name)
		if err != nil || g == nil {
			if err == nil {
				err = contract.Fail(contract.Verification, "Auto Scaling group %s does not exist", name)
			}
			return false, err
		}
		want := aws.ToInt32(g.DesiredCapacity)
		version := ""
		if g.LaunchTemplate != nil {
			version = aws.ToString(g.LaunchTemplate.Version)
		}
		healthy := 0
		ids = ids[:0]
		for _, in := range g.Instances {
			current := version == "" || version[0] == '$' || (in.LaunchTemplate != nil && aws.ToString(in.LaunchTemplate.Version) == version)
			if in.LifecycleState == astypes.LifecycleStateInService && aws.ToString(in.HealthStatus) == "Healthy" && current {
				healthy++
				ids = append(ids, aws.ToString(in.InstanceId))
			}
		}
		if line := fmt.Sprintf("%d/%d instances of %s are healthy", healthy, want, name); line != last {
			r.logf("%s", line)
			last = line
		}
		return healthy == int(want) && len(g.Instances) == int(want), nil
	})
	return ids, err
}

// policies replaces a group's scaling policies and scheduled actions with the service's.
func (r *run) policies(ctx context.Context, name string) error {
	old, err := r.asg.DescribePolicies(ctx, &autoscaling.DescribePoliciesInput{AutoScalingGroupName: aws.String(name)})
	if err != nil {
		return r.fail(err, "list the scaling policies of Auto Scaling group %s", name)
	}
	for _, p := range old.ScalingPolicies {
		if _, err := r.asg.DeletePolicy(ctx, &autoscaling.DeletePolicyInput{AutoScalingGroupName: aws.String(name), PolicyName: p.PolicyName}); err != nil {
			return r.fail(err, "detach scaling policy %s from Auto Scaling group %s", aws.ToString(p.PolicyName), name)
		}
	}
	for _, f := range r.files("AsgScalingPolicy") {
		var in autoscaling.PutScalingPolicyInput
		if err := decode(f, &in); err != nil {
			return err
		}
		in.AutoScalingGroupName = aws.String(name)
		if _, err := r.asg.PutScalingPolicy(ctx, &in); err != nil {
			return r.fail(err, "attach scaling policy %s (%s) to Auto Scaling group %s", aws.ToString(in.PolicyName), f.Path, name)
		}
		r.logf("attached scaling policy %s", aws.ToString(in.PolicyName))
	}
	sched, err := r.asg.DescribeScheduledActions(ctx, &autoscaling.DescribeScheduledActionsInput{AutoScalingGroupName: aws.String(name)})
	if err != nil {
		return r.fail(err, "list the scheduled actions of Auto Scaling group %s", name)
	}
	for _, a := range sched.ScheduledUpdateGroupActions {
		if _, err := r.asg.DeleteScheduledAction(ctx, &autoscaling.DeleteScheduledActionInput{AutoScalingGroupName: aws.String(name), ScheduledActionName: a.ScheduledActionName}); err != nil {
			return r.fail(err, "detach scheduled action %s from Auto Scaling group %s", aws.ToString(a.ScheduledActionName), name)
		}
	}
	for _, f := range r.files("AsgScheduledUpdateGroupAction") {
		var in autoscaling.PutScheduledUpdateGroupActionInput
		if err := decode(f, &in); err != nil {
			return err
		}
		in.AutoScalingGroupName = aws.String(name)
		if _, err := r.asg.PutScheduledUpdateGroupAction(ctx, &in); err != nil {
			return r.fail(err, "attach scheduled action %s (%s) to Auto Scaling group %s", aws.ToString(in.ScheduledActionName), f.Path, name)
		}
		r.logf("attached scheduled action %s", aws.ToString(in.ScheduledActionName))
	}
	return nil
}

// count is an instanceSelection's number of instances: a count, or a percentage of base.
func count(c *stepspec.InstanceSelection, base int32) (int32, error) {
	if c == nil || c.Spec == nil {
		return 0, contract.Fail(contract.Verification, "the step needs instanceSelection: a Count or a Percentage")
	}
	v := c.Spec.Count
	if c.Type == "Percentage" {
		v = c.Spec.Percentage
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(fmt.Sprint(v)), 64)
	if err != nil || n < 0 {
		return 0, contract.Fail(contract.Verification, "instanceSelection %s %v is not a number", c.Type, v)
	}
	switch c.Type {
	case "Count":
		return int32(n), nil
	case "Percentage":
		return int32(math.Ceil(float64(base) * n / 100)), nil
	}
	return 0, contract.Fail(contract.Verification, "instanceSelection type %q is not Count or Percentage", c.Type)
}
