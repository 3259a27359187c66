package asg

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// The tags a rolling deploy or rollback leaves on the group once it is steady: the launch
// template version and capacity Gantry left it on, which the instance sync compares with what
// it runs.
const (
	tagDeployedVersion  = "gantry-deployed-launch-template-version"
	tagDeployedCapacity = "gantry-deployed-capacity" // "MIN,MAX,DESIRED"
)

// markDeployed tags a steady group with the launch template version and capacity Gantry left
// it on.
func (r *run) markDeployed(ctx context.Context, name, version string, z size) error {
	return r.setTags(ctx, name, map[string]string{tagDeployedVersion: version, tagDeployedCapacity: z.String()})
}

// Instances reads an Asg target's instances: those of its group (and of the blue-green groups
// of that base name), each with the AMI of the launch template version it was launched from,
// its availability zone, and whether it is in service and healthy. A group launching another
// AMI than Gantry's last rolling deploy or rollback left it on, or whose desired capacity
// changed while no scaling policy scales it, has drifted. The target is gone when every one
// of those groups is.
func (a *Activity) Instances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error) {
	if t.Aws == nil || t.Asg == "" {
		return contract.InstanceRead{}, contract.Fail(contract.Unknown, "target %s/%s names no AWS connector and Auto Scaling group", t.Key.Environment, t.Key.Infra)
	}
	cfg, err := awsauth.Config(ctx, *t.Aws, t.Region, a.Secrets, &secrets.Masker{})
	if err != nil {
		return contract.InstanceRead{}, err
	}
	r := &run{d: &contract.DeployInput{Aws: t.Aws, Region: t.Region}, asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg)}
	out, err := r.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{t.Asg, t.Asg + "__1", t.Asg + "__2"}})
	if err != nil {
		return contract.InstanceRead{}, r.fail(err, "describe Auto Scaling group %s", t.Asg)
	}
	if len(out.AutoScalingGroups) == 0 {
		return contract.InstanceRead{Gone: "Auto Scaling group " + t.Asg + " no longer exists"}, nil
	}
	amis := map[string]string{} // "TEMPLATE:VERSION" → its AMI
	amiOf := func(lt *astypes.LaunchTemplateSpecification) (string, error) {
		if lt == nil {
			return "", nil
		}
		name, version := aws.ToString(lt.LaunchTemplateName), aws.ToString(lt.Version)
		key := name + ":" + version
		if ami, ok := amis[key]; ok {
			return ami, nil
		}
		got, err := r.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: lt.LaunchTemplateName, Versions: []string{version}})
		if err != nil {
			return "", r.fail(err, "describe version %s of launch template %s", version, name)
		}
		ami := "launch template " + name + " version " + version
		if len(got.LaunchTemplateVersions) > 0 && got.LaunchTemplateVersions[0].LaunchTemplateData != nil && got.LaunchTemplateVersions[0].LaunchTemplateData.ImageId != nil {
			ami = aws.ToString(got.LaunchTemplateVersions[0].LaunchTemplateData.ImageId)
		}
		amis[key] = ami
		return ami, nil
	}
	var all []contract.Instance
	var drift []string
	for _, g := range out.AutoScalingGroups {
		name := aws.ToString(g.AutoScalingGroupName)
		for _, in := range g.Instances {
			lt := in.LaunchTemplate
			if lt != nil && lt.LaunchTemplateName == nil && g.LaunchTemplate != nil {
				lt = &astypes.LaunchTemplateSpecification{LaunchTemplateName: g.LaunchTemplate.LaunchTemplateName, Version: lt.Version}
			}
			ami, err := amiOf(lt)
			if err != nil {
				return contract.InstanceRead{}, err
			}
			all = append(all, contract.Instance{Name: name + "/" + aws.ToString(in.InstanceId), Artifact: ami, Node: aws.ToString(in.AvailabilityZone),
				Ready: in.LifecycleState == astypes.LifecycleStateInService && aws.ToString(in.HealthStatus) == "Healthy"})
		}
		d, err := r.drift(ctx, &g, amiOf)
		if err != nil {
			return contract.InstanceRead{}, err
		}
		drift = append(drift, d...)
	}
	return contract.ReadOf(all, drift), nil
}

// drift says how a group differs from what Gantry's last rolling deploy or rollback left it on
// (nothing when neither did).
func (r *run) drift(ctx context.Context, g *astypes.AutoScalingGroup, amiOf func(*astypes.LaunchTemplateSpecification) (string, error)) ([]string, error) {
	want := tag(g, tagDeployedVersion)
	if want == "" || g.LaunchTemplate == nil {
		return nil, nil
	}
	name := aws.ToString(g.AutoScalingGroupName)
	var out []string
	if live := aws.ToString(g.LaunchTemplate.Version); live != want {
		liveAmi, err := amiOf(g.LaunchTemplate)
		if err != nil {
			return nil, err
		}
		wantAmi, err := amiOf(&astypes.LaunchTemplateSpecification{LaunchTemplateName: g.LaunchTemplate.LaunchTemplateName, Version: aws.String(want)})
		if err != nil {
			return nil, err
		}
		if liveAmi != wantAmi {
			out = append(out, fmt.Sprintf("group %s launches %s (launch template version %s); Gantry deployed %s (version %s)", name, liveAmi, live, wantAmi, want))
		}
	}
	if z, ok := parseSize(tag(g, tagDeployedCapacity)); ok && z.desired != aws.ToInt32(g.DesiredCapacity) {
		ps, err := r.asg.DescribePolicies(ctx, &autoscaling.DescribePoliciesInput{AutoScalingGroupName: aws.String(name)})
		if err != nil {
			return nil, r.fail(err, "read the scaling policies of Auto Scaling group %s", name)
		}
		if len(ps.ScalingPolicies) == 0 { // with policies, scaling sets the capacity
			out = append(out, fmt.Sprintf("group %s was scaled to %d instances outside Gantry; Gantry deployed %d", name, aws.ToInt32(g.DesiredCapacity), z.desired))
		}
	}
	return out, nil
}
