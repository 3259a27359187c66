package asg_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// BenchmarkAsgRolling is an ASG rolling deployment of a new image through the activity
// against the fake: a launch template version, the group updated, its policy replaced, an
// instance refresh and the steady state. Compare with BenchmarkAsgRollingDirect.
func BenchmarkAsgRolling(b *testing.B) {
	r := newRig(b)
	if _, f := r.step("AsgRollingDeploy", "bench-0", "ami-0", `{}`); f != nil {
		b.Fatal(f)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, f := r.step("AsgRollingDeploy", fmt.Sprintf("bench-%d", i+1), fmt.Sprintf("ami-%d", i+1), `{}`); f != nil {
			b.Fatal(f)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/deploy")
}

// BenchmarkAsgRollingDirect is the baseline: the same calls made directly with the SDK, the
// way a script would, polling as the activity does.
func BenchmarkAsgRollingDirect(b *testing.B) {
	r := newRig(b)
	if _, f := r.step("AsgRollingDeploy", "bench-0", "ami-0", `{}`); f != nil {
		b.Fatal(f)
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("eu-west-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDASG", "secret", "")))
	if err != nil {
		b.Fatal(err)
	}
	as, ec := autoscaling.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	poll := func(done func() bool) {
		for delay := 50 * time.Millisecond; !done(); delay = min(delay*2, 5*time.Second) {
			time.Sleep(delay)
		}
	}
	must := func(_ any, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		must(as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"web"}}))
		must(as.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{{Key: aws.String("previous"), Value: aws.String(strconv.Itoa(i)), ResourceId: aws.String("web"), ResourceType: aws.String("auto-scaling-group")}}}))
		must(ec.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"web"}}))
		v, err := ec.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateName: aws.String("web"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(fmt.Sprintf("ami-%d", i+1)), InstanceType: "t3.micro", SecurityGroupIds: []string{"sg-1"}}})
		if err != nil {
			b.Fatal(err)
		}
		version := strconv.FormatInt(aws.ToInt64(v.LaunchTemplateVersion.VersionNumber), 10)
		must(as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("web"),
			LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("web"), Version: aws.String(version)},
			MinSize:        aws.Int32(1), MaxSize: aws.Int32(4), DesiredCapacity: aws.Int32(2), VPCZoneIdentifier: aws.String("subnet-1,subnet-2")}))
		must(as.DescribePolicies(ctx, &autoscaling.DescribePoliciesInput{AutoScalingGroupName: aws.String("web")}))
		must(as.DeletePolicy(ctx, &autoscaling.DeletePolicyInput{AutoScalingGroupName: aws.String("web"), PolicyName: aws.String("cpu")}))
		must(as.PutScalingPolicy(ctx, &autoscaling.PutScalingPolicyInput{AutoScalingGroupName: aws.String("web"), PolicyName: aws.String("cpu"), PolicyType: aws.String("TargetTrackingScaling"),
			TargetTrackingConfiguration: &astypes.TargetTrackingConfiguration{TargetValue: aws.Float64(60), PredefinedMetricSpecification: &astypes.PredefinedMetricSpecification{PredefinedMetricType: astypes.MetricTypeASGAverageCPUUtilization}}}))
		must(as.DescribeScheduledActions(ctx, &autoscaling.DescribeScheduledActionsInput{AutoScalingGroupName: aws.String("web")}))
		ref, err := as.StartInstanceRefresh(ctx, &autoscaling.StartInstanceRefreshInput{AutoScalingGroupName: aws.String("web"),
			Preferences: &astypes.RefreshPreferences{MinHealthyPercentage: aws.Int32(90), MaxHealthyPercentage: aws.Int32(110)}})
		if err != nil {
			b.Fatal(err)
		}
		poll(func() bool {
			d, err := as.DescribeInstanceRefreshes(ctx, &autoscaling.DescribeInstanceRefreshesInput{AutoScalingGroupName: aws.String("web"), InstanceRefreshIds: []string{aws.ToString(ref.InstanceRefreshId)}})
			return err == nil && d.InstanceRefreshes[0].Status == astypes.InstanceRefreshStatusSuccessful
		})
		poll(func() bool {
			d, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"web"}})
			if err != nil {
				return false
			}
			n := 0
			for _, in := range d.AutoScalingGroups[0].Instances {
				if in.LifecycleState == astypes.LifecycleStateInService && aws.ToString(in.LaunchTemplate.Version) == version {
					n++
				}
			}
			return n == 2
		})
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/deploy")
}
