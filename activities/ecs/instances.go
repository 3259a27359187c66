package ecs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/smithy-go"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// The tags a rolling deploy or rollback leaves on the service once it is steady: what Gantry
// made it run, which the instance sync compares with what it runs.
const (
	tagDeployedTaskDef = "gantry-deployed-task-definition"
	tagDeployedCount   = "gantry-deployed-desired-count"
)

// markDeployed tags a steady service with the task definition and count Gantry left it on.
func (r *run) markDeployed(ctx context.Context, s *types.Service, taskDef string) error {
	if _, err := r.c.TagResource(ctx, &ecs.TagResourceInput{ResourceArn: s.ServiceArn, Tags: []types.Tag{
		{Key: aws.String(tagDeployedTaskDef), Value: aws.String(taskDef)},
		{Key: aws.String(tagDeployedCount), Value: aws.String(strconv.Itoa(int(s.DesiredCount)))}}}); err != nil {
		return r.fail(err, "tag service %s with what it was deployed with", aws.ToString(s.ServiceName))
	}
	return nil
}

// Instances reads an ECS target's instances: the running tasks of its service (and of the
// blue-green services of that base name), each with its task definition's images and its
// availability zone. A service whose task definition runs other images than Gantry's last
// rolling deploy or rollback left it on, or whose desired count changed while no scalable
// target scales it, has drifted. The target is gone when its cluster or every one of those
// services is.
func (a *Activity) Instances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error) {
	if t.Aws == nil || t.Cluster == "" || t.Service == "" {
		return contract.InstanceRead{}, contract.Fail(contract.Unknown, "target %s/%s names no AWS connector, cluster and service", t.Key.Environment, t.Key.Infra)
	}
	cfg, err := awsauth.Config(ctx, *t.Aws, t.Region, a.Secrets, &secrets.Masker{})
	if err != nil {
		return contract.InstanceRead{}, err
	}
	r := &run{d: &contract.DeployInput{Aws: t.Aws, Region: t.Region, Cluster: t.Cluster}}
	r.c, r.scaling = ecs.NewFromConfig(cfg), applicationautoscaling.NewFromConfig(cfg)
	if _, err := r.c.ListServices(ctx, &ecs.ListServicesInput{Cluster: aws.String(t.Cluster), MaxResults: aws.Int32(1)}); err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "ClusterNotFoundException" {
			return contract.InstanceRead{Gone: "cluster " + t.Cluster + " no longer exists"}, nil
		}
		return contract.InstanceRead{}, r.fail(err, "list the services of cluster %s", t.Cluster)
	}
	services, err := r.servicesOf(ctx, t.Service)
	if err != nil {
		return contract.InstanceRead{}, err
	}
	if len(services) == 0 {
		return contract.InstanceRead{Gone: "service " + t.Service + " no longer exists in cluster " + t.Cluster}, nil
	}
	images := map[string][]string{} // task definition ARN → its containers' images
	imagesOf := func(td string) ([]string, error) {
		if im, ok := images[td]; ok {
			return im, nil
		}
		out, err := r.c.DescribeTaskDefinition(ctx, &ecs.DescribeTaskDefinitionInput{TaskDefinition: aws.String(td)})
		if err != nil {
			return nil, r.fail(err, "describe task definition %s", td)
		}
		var im []string
		for _, c := range out.TaskDefinition.ContainerDefinitions {
			im = append(im, aws.ToString(c.Image))
		}
		images[td] = im
		return im, nil
	}
	var all []contract.Instance
	var drift []string
	for _, s := range services {
		name := aws.ToString(s.ServiceName)
		tasks, err := r.tasksOf(ctx, name)
		if err != nil {
			return contract.InstanceRead{}, err
		}
		for _, task := range tasks {
			im, err := imagesOf(aws.ToString(task.TaskDefinitionArn))
			if err != nil {
				return contract.InstanceRead{}, err
			}
			arn := aws.ToString(task.TaskArn)
			all = append(all, contract.Instance{Name: name + "/" + arn[strings.LastIndex(arn, "/")+1:], Artifact: strings.Join(im, ", "),
				Node: aws.ToString(task.AvailabilityZone), Ready: aws.ToString(task.LastStatus) == "RUNNING" && task.HealthStatus != types.HealthStatusUnhealthy})
		}
		d, err := r.drift(ctx, &s, imagesOf)
		if err != nil {
			return contract.InstanceRead{}, err
		}
		drift = append(drift, d...)
	}
	return contract.ReadOf(all, drift), nil
}

// tasksOf describes a service's running tasks.
func (r *run) tasksOf(ctx context.Context, service string) ([]types.Task, error) {
	var arns []string
	p := ecs.NewListTasksPaginator(r.c, &ecs.ListTasksInput{Cluster: aws.String(r.d.Cluster), ServiceName: aws.String(service), DesiredStatus: types.DesiredStatusRunning})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, r.fail(err, "list the tasks of service %s", service)
		}
		arns = append(arns, page.TaskArns...)
	}
	var out []types.Task
	for len(arns) > 0 {
		n := min(len(arns), 100) // DescribeTasks takes at most 100
		got, err := r.c.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(r.d.Cluster), Tasks: arns[:n]})
		if err != nil {
			return nil, r.fail(err, "describe the tasks of service %s", service)
		}
		out, arns = append(out, got.Tasks...), arns[n:]
	}
	return out, nil
}

// drift says how a service differs from what Gantry's last rolling deploy or rollback left
// it on (nothing when neither did).
func (r *run) drift(ctx context.Context, s *types.Service, imagesOf func(string) ([]string, error)) ([]string, error) {
	tags := tagsOf(s)
	want := tags[tagDeployedTaskDef]
	if want == "" {
		return nil, nil
	}
	name := aws.ToString(s.ServiceName)
	var out []string
	if live := aws.ToString(s.TaskDefinition); live != want {
		liveImages, err := imagesOf(live)
		if err != nil {
			return nil, err
		}
		wantImages, err := imagesOf(want)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(liveImages, wantImages) {
			out = append(out, fmt.Sprintf("service %s runs %s (%s); Gantry deployed %s", name, strings.Join(liveImages, ", "), live, strings.Join(wantImages, ", ")))
		}
	}
	if n, err := strconv.Atoi(tags[tagDeployedCount]); err == nil && int32(n) != s.DesiredCount {
		t, err := r.scalableTarget(ctx, name)
		if err != nil {
			return nil, err
		}
		if t == nil { // with a scalable target, Application Auto Scaling sets the count
			out = append(out, fmt.Sprintf("service %s was scaled to %d tasks outside Gantry; Gantry deployed %d", name, s.DesiredCount, n))
		}
	}
	return out, nil
}
