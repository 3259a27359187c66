package ecs

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// The basic strategy keeps each release in a service of its own, `<serviceName>__<N>`:
// EcsServiceSetup registers the task definition and creates the next version's service at zero
// tasks (deleting older versions that no longer run anything), EcsUpgradeContainer scales it up
// (and the previous version down) in as many phases as the stage has such steps, and
// EcsBasicRollback deletes the new version and gives the previous one its tasks back. What the
// rollback needs is kept as tags on the new service.
const (
	tagBasicOld      = "gantry-basic-old-service" // the version it replaces, or "none"
	tagBasicOldCount = "gantry-basic-old-count"   // the old version's desired count before
	tagBasicTarget   = "gantry-basic-target"      // the new version's full desired count
	tagBasicResize   = "gantry-basic-resize"      // ResizeNewFirst or DownsizeOldFirst
)

// basicVersions lists the versions `<name>__<N>` of a service in the cluster, oldest first.
func (r *run) basicVersions(ctx context.Context, name string) ([]types.Service, error) {
	var arns []string
	p := ecs.NewListServicesPaginator(r.c, &ecs.ListServicesInput{Cluster: aws.String(r.d.Cluster)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, r.fail(err, "list the services of cluster %s", r.d.Cluster)
		}
		for _, a := range page.ServiceArns {
			if _, ok := basicVersion(a[strings.LastIndex(a, "/")+1:], name); ok {
				arns = append(arns, a)
			}
		}
	}
	var out []types.Service
	for i := 0; i < len(arns); i += 10 { // DescribeServices takes 10 at a time
		got, err := r.c.DescribeServices(ctx, &ecs.DescribeServicesInput{Cluster: aws.String(r.d.Cluster), Services: arns[i:min(i+10, len(arns))],
			Include: []types.ServiceField{types.ServiceFieldTags}})
		if err != nil {
			return nil, r.fail(err, "describe the versions of service %s", name)
		}
		for _, s := range got.Services {
			if aws.ToString(s.Status) != "INACTIVE" {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := basicVersion(aws.ToString(out[i].ServiceName), name)
		b, _ := basicVersion(aws.ToString(out[j].ServiceName), name)
		return a < b
	})
	return out, nil
}

// basicVersion is N of `<name>__<N>`.
func basicVersion(service, name string) (int, bool) {
	rest, ok := strings.CutPrefix(service, name+"__")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// serviceSetup creates the next version's service at zero tasks.
func (r *run) serviceSetup(ctx context.Context, sameCount bool, resize string) (map[string]any, error) {
	tdFile, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	name := aws.ToString(def.ServiceName)
	if resize == "" {
		resize = "ResizeNewFirst"
	}
	if resize != "ResizeNewFirst" && resize != "DownsizeOldFirst" {
		return nil, contract.Fail(contract.Verification, "resizeStrategy %q is not ResizeNewFirst or DownsizeOldFirst", resize)
	}
	versions, err := r.basicVersions(ctx, name)
	if err != nil {
		return nil, err
	}
	// A retried setup of this execution finds its own service and reuses it.
	if n := len(versions); n > 0 && tagsOf(&versions[n-1])[tagExecution] == r.in.ExecutionID {
		s := versions[n-1]
		tags := tagsOf(&s)
		r.logf("service %s was set up by an earlier attempt of this execution", aws.ToString(s.ServiceName))
		return r.setupOutputs(aws.ToString(s.ServiceName), tags[tagBasicOld], aws.ToString(s.TaskDefinition), tags[tagBasicTarget]), nil
	}
	arn, err := r.register(ctx, tdFile)
	if err != nil {
		return nil, err
	}
	old, oldCount, next := "none", int32(0), 1
	if n := len(versions); n > 0 {
		last := versions[n-1]
		v, _ := basicVersion(aws.ToString(last.ServiceName), name)
		old, oldCount, next = aws.ToString(last.ServiceName), last.DesiredCount, v+1
		// Versions before the one being replaced that run nothing are stale: delete them.
		for _, s := range versions[:n-1] {
			if s.DesiredCount == 0 {
				if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: s.ServiceName, Force: aws.Bool(true)}); err != nil {
					return nil, r.fail(err, "delete stale service %s", aws.ToString(s.ServiceName))
				}
				r.logf("deleted stale service %s (no tasks)", aws.ToString(s.ServiceName))
			}
		}
	}
	target := aws.ToInt32(def.DesiredCount)
	if sameCount && old != "none" {
		target = oldCount
	}
	newName := fmt.Sprintf("%s__%d", name, next)
	def.ServiceName, def.TaskDefinition, def.DesiredCount = aws.String(newName), aws.String(arn), aws.Int32(0)
	for k, v := range map[string]string{tagExecution: r.in.ExecutionID, tagBasicOld: old, tagBasicOldCount: strconv.Itoa(int(oldCount)),
		tagBasicTarget: strconv.Itoa(int(target)), tagBasicResize: resize} {
		def.Tags = append(def.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	r.logf("creating service %s at 0 tasks of %s (it replaces %s; full size %d tasks, %s)", newName, arn, old, target, resize)
	if _, err := r.c.CreateService(ctx, def); err != nil {
		return nil, r.fail(err, "create service %s", newName)
	}
	return r.setupOutputs(newName, old, arn, strconv.Itoa(int(target))), nil
}

func (r *run) setupOutputs(newName, old, taskDef, target string) map[string]any {
	return map[string]any{"newServiceName": newName, "oldServiceName": old, "isFirstDeployment": old == "none",
		"taskDefinitionArn": taskDef, "targetDesiredCount": target, "cluster": r.d.Cluster, "region": r.d.Region}
}

// thisExecutionsVersion finds the service this execution's EcsServiceSetup created.
func (r *run) thisExecutionsVersion(ctx context.Context) (*types.Service, map[string]string, error) {
	_, def, err := r.definitions()
	if err != nil {
		return nil, nil, err
	}
	versions, err := r.basicVersions(ctx, aws.ToString(def.ServiceName))
	if err != nil {
		return nil, nil, err
	}
	for i := len(versions) - 1; i >= 0; i-- {
		if tags := tagsOf(&versions[i]); tags[tagExecution] == r.in.ExecutionID && tags[tagBasicOld] != "" {
			return &versions[i], tags, nil
		}
	}
	return nil, nil, nil
}

// instanceCount reads a count or a percentage (rounded up) of base.
func instanceCount(v any, unit string, base int32, what string) (int32, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(fmt.Sprint(v)), 64)
	if err != nil || n < 0 {
		return 0, contract.Fail(contract.Verification, "%s %v is not a number", what, v)
	}
	switch unit {
	case "Count":
		return int32(n), nil
	case "Percentage":
		return int32(math.Ceil(float64(base) * n / 100)), nil
	}
	return 0, contract.Fail(contract.Verification, "%s unit %q is not Count or Percentage", what, unit)
}

// scaleTo sets a service's desired count and waits for it to be steady.
func (r *run) scaleTo(ctx context.Context, s *types.Service, count int32) (*types.Service, error) {
	name := aws.ToString(s.ServiceName)
	r.logf("scaling service %s from %d to %d tasks", name, s.DesiredCount, count)
	if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), DesiredCount: aws.Int32(count)}); err != nil {
		return nil, r.fail(err, "scale service %s to %d tasks", name, count)
	}
	return r.steady(ctx, name, aws.ToString(s.TaskDefinition))
}

// upgradeContainer scales the new version to its share of the full size and, when asked, the
// old version down to its share of what it ran, in the setup's resize order; at full size the
// service's scaling definitions are applied to the new version.
func (r *run) upgradeContainer(ctx context.Context, spec *stepspec.EcsUpgradeContainerSpec) (map[string]any, error) {
	s, tags, err := r.thisExecutionsVersion(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, contract.Fail(contract.Verification, "no service set up by this execution: EcsServiceSetup comes first")
	}
	target, _ := strconv.Atoi(tags[tagBasicTarget])
	newCount, err := instanceCount(spec.NewServiceInstanceCount, spec.NewServiceInstanceUnit, int32(target), "newServiceInstanceCount")
	if err != nil {
		return nil, err
	}
	var old *types.Service
	oldCount := int32(-1)
	if tags[tagBasicOld] != "none" && spec.DownsizeOldServiceInstanceCount != "" {
		before, _ := strconv.Atoi(tags[tagBasicOldCount])
		if oldCount, err = instanceCount(spec.DownsizeOldServiceInstanceCount, spec.DownsizeOldServiceInstanceUnit, int32(before), "downsizeOldServiceInstanceCount"); err != nil {
			return nil, err
		}
		if old, err = r.describe(ctx, tags[tagBasicOld]); err != nil {
			return nil, err
		}
	}
	upNew := func() error {
		var err error
		s, err = r.scaleTo(ctx, s, newCount)
		return err
	}
	downOld := func() error {
		if old == nil {
			return nil
		}
		_, err := r.scaleTo(ctx, old, oldCount)
		return err
	}
	first, second := upNew, downOld
	if tags[tagBasicResize] == "DownsizeOldFirst" {
		first, second = downOld, upNew
	}
	if err := first(); err != nil {
		return nil, err
	}
	if err := second(); err != nil {
		return nil, err
	}
	name := aws.ToString(s.ServiceName)
	if newCount >= int32(target) {
		if err := r.applyScaling(ctx, name); err != nil {
			return nil, err
		}
	}
	out := map[string]any{"newServiceName": name, "newServiceDesiredCount": newCount, "oldServiceName": tags[tagBasicOld], "cluster": r.d.Cluster}
	if old != nil {
		out["oldServiceDesiredCount"] = oldCount
	}
	return out, nil
}

// upgradeSpec is EcsUpgradeContainer's spec.

// basicRollback deletes this execution's version and gives the one it replaced its tasks back.
func (r *run) basicRollback(ctx context.Context) (map[string]any, error) {
	s, tags, err := r.thisExecutionsVersion(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		r.logf("no service was set up by this execution: nothing to roll back")
		return map[string]any{"rolledBack": false}, nil
	}
	name := aws.ToString(s.ServiceName)
	out := map[string]any{"rolledBack": true, "deletedServiceName": name, "oldServiceName": tags[tagBasicOld]}
	if old := tags[tagBasicOld]; old != "none" {
		svc, err := r.describe(ctx, old)
		if err != nil {
			return nil, err
		}
		count, _ := strconv.Atoi(tags[tagBasicOldCount])
		if svc != nil && svc.DesiredCount != int32(count) {
			if _, err := r.scaleTo(ctx, svc, int32(count)); err != nil {
				return nil, err
			}
		}
		out["oldServiceDesiredCount"] = count
	}
	if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), Force: aws.Bool(true)}); err != nil {
		return nil, r.fail(err, "delete service %s", name)
	}
	r.logf("deleted service %s; %s runs as before", name, tags[tagBasicOld])
	return out, nil
}

// scaleService sets a named service's desired count (EcsScale): a count, or a percentage of
// what it runs now; unless skipSteadyStateCheck it waits for steady state.
func (r *run) scaleService(ctx context.Context, spec *stepspec.EcsScaleSpec) (map[string]any, error) {
	if spec.Cluster != "" && spec.Cluster != r.d.Cluster {
		r.d.Cluster = spec.Cluster
	}
	s, err := r.describe(ctx, spec.Service)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, contract.Fail(contract.Verification, "service %s does not exist in cluster %s", spec.Service, r.d.Cluster)
	}
	count, err := instanceCount(spec.Instances, spec.InstanceUnit, s.DesiredCount, "instances")
	if err != nil {
		return nil, err
	}
	if truthy(spec.SkipSteadyStateCheck) {
		if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: s.ServiceName, DesiredCount: aws.Int32(count)}); err != nil {
			return nil, r.fail(err, "scale service %s to %d tasks", spec.Service, count)
		}
	} else if _, err := r.scaleTo(ctx, s, count); err != nil {
		return nil, err
	}
	return map[string]any{"serviceName": spec.Service, "desiredCount": count, "previousDesiredCount": s.DesiredCount, "cluster": r.d.Cluster}, nil
}

// scaleSpec is EcsScale's spec.
