package ecs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gantry-cd/gantry/activities/listeners"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// Blue-green: EcsBlueGreenCreateService starts the new version as a green service of its own
// behind the stage listener's target group; EcsBlueGreenSwapTargetGroups points the prod
// listener at it (and the stage listener at the old blue one), then downsizes the old one;
// EcsBlueGreenRollback points the listeners back, restores the old service's count and deletes
// the green one. What the later steps need (listeners, rules, target groups, the blue service
// and its count) is recorded as tags on the green service.
const (
	tagBase       = "gantry-bg-base"
	tagRole       = "gantry-bg-role" // blue or green
	tagSwapped    = "gantry-bg-swapped"
	tagBlue       = "gantry-bg-blue"
	tagBlueCount  = "gantry-bg-blue-count"
	tagProdListen = "gantry-bg-prod-listener"
	tagProdRule   = "gantry-bg-prod-rule"
	tagProdTG     = "gantry-bg-prod-target-group"
	tagStageList  = "gantry-bg-stage-listener"
	tagStageRule  = "gantry-bg-stage-rule"
	tagStageTG    = "gantry-bg-stage-target-group"
)

// forwardsTo is the target group a listener rule (or, without one, the listener) forwards to;
// when weighted (after a traffic shift), the group taking the most traffic.
func (r *run) forwardsTo(ctx context.Context, listener, rule string) (string, error) {
	w, err := listeners.Forwards(ctx, r.elb, listener, rule, r.fail)
	if err != nil {
		return "", err
	}
	return listeners.Heaviest(w), nil
}

// pointAt makes a listener rule (or the listener) forward to tg.
func (r *run) pointAt(ctx context.Context, listener, rule, tg string) error {
	if err := listeners.Set(ctx, r.elb, listener, rule, map[string]int32{tg: 100}, r.fail); err != nil {
		return err
	}
	r.logf("%s now forwards to %s", firstOf(rule, listener), tg)
	return nil
}

// pointStage is pointAt for the stage listener, which a traffic-shift deployment has none of.
func (r *run) pointStage(ctx context.Context, listener, rule, tg string) error {
	if listener == "" && rule == "" {
		return nil
	}
	return r.pointAt(ctx, listener, rule, tg)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// servicesOf lists the cluster's services of a blue-green base service, with their tags.
func (r *run) servicesOf(ctx context.Context, base string) ([]types.Service, error) {
	var arns []string
	p := ecs.NewListServicesPaginator(r.c, &ecs.ListServicesInput{Cluster: aws.String(r.d.Cluster)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, r.fail(err, "list the services of cluster %s", r.d.Cluster)
		}
		arns = append(arns, page.ServiceArns...)
	}
	var out []types.Service
	for len(arns) > 0 {
		n := min(len(arns), 10)
		got, err := r.c.DescribeServices(ctx, &ecs.DescribeServicesInput{Cluster: aws.String(r.d.Cluster), Services: arns[:n], Include: []types.ServiceField{types.ServiceFieldTags}})
		if err != nil {
			return nil, r.fail(err, "describe the services of cluster %s", r.d.Cluster)
		}
		arns = arns[n:]
		for _, s := range got.Services {
			if aws.ToString(s.Status) == "ACTIVE" && (tagsOf(&s)[tagBase] == base || aws.ToString(s.ServiceName) == base) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func (r *run) tag(ctx context.Context, s *types.Service, tags map[string]string) error {
	var list []types.Tag
	for k, v := range tags {
		list = append(list, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if _, err := r.c.TagResource(ctx, &ecs.TagResourceInput{ResourceArn: s.ServiceArn, Tags: list}); err != nil {
		return r.fail(err, "tag service %s", aws.ToString(s.ServiceName))
	}
	return nil
}

func (r *run) blueGreenCreate(ctx context.Context, spec *stepspec.EcsBlueGreenCreateServiceSpec) (map[string]any, error) {
	shift := truthy(spec.IsTrafficShift)
	switch {
	case shift && (spec.ProdListener == "" || spec.ProdListenerRuleArn == "" || spec.StageTargetGroupArn == ""):
		return nil, contract.Fail(contract.Verification, "EcsBlueGreenCreateService with isTrafficShift needs prodListener, prodListenerRuleArn (whose weights the traffic shifts change) and stageTargetGroupArn")
	case !shift && (spec.ProdListener == "" || spec.StageListener == ""):
		return nil, contract.Fail(contract.Verification, "EcsBlueGreenCreateService needs prodListener and stageListener (and their rules, unless the listeners' default actions forward)")
	}
	tdFile, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	if len(def.LoadBalancers) == 0 {
		return nil, contract.Fail(contract.Verification, "service definition of %s has no loadBalancers: a blue-green service needs one with containerName and containerPort", aws.ToString(def.ServiceName))
	}
	prodTG, err := r.forwardsTo(ctx, spec.ProdListener, spec.ProdListenerRuleArn)
	if err != nil {
		return nil, err
	}
	stageTG := spec.StageTargetGroupArn
	if shift {
		spec.StageListener, spec.StageListenerRuleArn = "", ""
	} else if stageTG, err = r.forwardsTo(ctx, spec.StageListener, spec.StageListenerRuleArn); err != nil {
		return nil, err
	}
	arn, err := r.register(ctx, tdFile)
	if err != nil {
		return nil, err
	}
	base := aws.ToString(def.ServiceName)
	green := base + "__" + arn[strings.LastIndex(arn, ":")+1:]
	services, err := r.servicesOf(ctx, base)
	if err != nil {
		return nil, err
	}
	var blue *types.Service
	for i, s := range services {
		tags, name := tagsOf(&s), aws.ToString(s.ServiceName)
		switch {
		case name == green && tags[tagExecution] == r.in.ExecutionID:
			// A retry of this step: the green service is already being created.
		case tags[tagRole] == "blue" || tags[tagRole] == "" && blue == nil:
			blue = &services[i]
		default: // a green service an earlier run left behind
			r.logf("deleting the green service %s an earlier run left", name)
			if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: s.ServiceName, Force: aws.Bool(true)}); err != nil {
				return nil, r.fail(err, "delete service %s", name)
			}
		}
	}
	def.ServiceName, def.TaskDefinition = aws.String(green), aws.String(arn)
	for i := range def.LoadBalancers {
		def.LoadBalancers[i].TargetGroupArn = aws.String(stageTG)
	}
	blueName, blueCount := "", "0"
	if blue != nil {
		blueName, blueCount = aws.ToString(blue.ServiceName), strconv.Itoa(int(blue.DesiredCount))
		if truthy(spec.SameAsAlreadyRunningInstances) {
			def.DesiredCount = aws.Int32(blue.DesiredCount)
		}
	}
	tags := map[string]string{tagBase: base, tagRole: "green", tagExecution: r.in.ExecutionID, tagBlue: blueName, tagBlueCount: blueCount,
		tagProdListen: spec.ProdListener, tagProdRule: spec.ProdListenerRuleArn, tagProdTG: prodTG,
		tagStageList: spec.StageListener, tagStageRule: spec.StageListenerRuleArn, tagStageTG: stageTG}
	for k, v := range tags {
		def.Tags = append(def.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if cur, err := r.describe(ctx, green); err != nil {
		return nil, err
	} else if cur == nil {
		r.logf("creating green service %s with %d tasks of %s behind %s (blue: %s)", green, aws.ToInt32(def.DesiredCount), arn, stageTG, firstOf(blueName, "none"))
		if _, err := r.c.CreateService(ctx, def); err != nil {
			return nil, r.fail(err, "create green service %s", green)
		}
	}
	svc, err := r.steady(ctx, green, arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"greenServiceName": green, "blueServiceName": blueName, "taskDefinitionArn": arn, "desiredCount": svc.DesiredCount,
		"prodTargetGroupArn": prodTG, "stageTargetGroupArn": stageTG, "loadBalancer": spec.LoadBalancer, "cluster": r.d.Cluster, "region": r.d.Region}, nil
}

// greenOf finds the green service this execution created (swapped or not).
func (r *run) greenOf(ctx context.Context) (*types.Service, map[string]string, error) {
	_, def, err := r.definitions()
	if err != nil {
		return nil, nil, err
	}
	services, err := r.servicesOf(ctx, aws.ToString(def.ServiceName))
	if err != nil {
		return nil, nil, err
	}
	for i, s := range services {
		if tags := tagsOf(&s); tags[tagExecution] == r.in.ExecutionID && tags[tagStageTG] != "" {
			return &services[i], tags, nil
		}
	}
	return nil, nil, nil
}

func (r *run) blueGreenSwap(ctx context.Context, spec *stepspec.EcsBlueGreenSwapTargetGroupsSpec) (map[string]any, error) {
	green, tags, err := r.greenOf(ctx)
	if err != nil {
		return nil, err
	}
	if green == nil {
		return nil, contract.Fail(contract.Verification, "no green service of this execution in cluster %s: run EcsBlueGreenCreateService first", r.d.Cluster)
	}
	name := aws.ToString(green.ServiceName)
	if tags[tagSwapped] != "true" {
		if err := r.pointAt(ctx, tags[tagProdListen], tags[tagProdRule], tags[tagStageTG]); err != nil {
			return nil, err
		}
		if err := r.pointStage(ctx, tags[tagStageList], tags[tagStageRule], tags[tagProdTG]); err != nil {
			return nil, err
		}
		if err := r.tag(ctx, green, map[string]string{tagSwapped: "true", tagRole: "blue"}); err != nil {
			return nil, err
		}
	}
	blue := tags[tagBlue]
	if blue != "" {
		old, err := r.describe(ctx, blue)
		if err != nil {
			return nil, err
		}
		if old != nil {
			if err := r.tag(ctx, old, map[string]string{tagRole: "green", tagBase: tags[tagBase]}); err != nil {
				return nil, err
			}
			if !truthy(spec.DoNotDownsizeOldService) {
				if delay, _ := strconv.Atoi(fmt.Sprint(spec.DownsizeOldServiceDelayInSecs)); delay > 0 {
					r.logf("waiting %ds before downsizing %s", delay, blue)
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(time.Duration(delay) * time.Second):
					}
				}
				r.logf("downsizing the old service %s to 0 tasks", blue)
				if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(blue), DesiredCount: aws.Int32(0)}); err != nil {
					return nil, r.fail(err, "downsize service %s", blue)
				}
			}
		}
	}
	return map[string]any{"serviceName": name, "oldServiceName": blue, "prodTargetGroupArn": tags[tagStageTG], "stageTargetGroupArn": tags[tagProdTG],
		"cluster": r.d.Cluster, "region": r.d.Region}, nil
}

func (r *run) blueGreenRollback(ctx context.Context) (map[string]any, error) {
	green, tags, err := r.greenOf(ctx)
	if err != nil {
		return nil, err
	}
	if green == nil {
		r.logf("this execution created no green service: nothing to roll back")
		return map[string]any{"rolledBack": false}, nil
	}
	name := aws.ToString(green.ServiceName)
	if tags[tagSwapped] == "true" {
		if err := r.pointAt(ctx, tags[tagProdListen], tags[tagProdRule], tags[tagProdTG]); err != nil {
			return nil, err
		}
		if err := r.pointStage(ctx, tags[tagStageList], tags[tagStageRule], tags[tagStageTG]); err != nil {
			return nil, err
		}
	}
	if blue := tags[tagBlue]; blue != "" {
		old, err := r.describe(ctx, blue)
		if err != nil {
			return nil, err
		}
		if old != nil {
			count, _ := strconv.Atoi(tags[tagBlueCount])
			r.logf("restoring the old service %s to %d tasks", blue, count)
			if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(blue), DesiredCount: aws.Int32(int32(count))}); err != nil {
				return nil, r.fail(err, "restore service %s", blue)
			}
			if err := r.tag(ctx, old, map[string]string{tagRole: "blue"}); err != nil {
				return nil, err
			}
			if _, err := r.steady(ctx, blue, aws.ToString(old.TaskDefinition)); err != nil {
				return nil, err
			}
		}
	}
	r.logf("deleting green service %s", name)
	if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), Force: aws.Bool(true)}); err != nil {
		return nil, r.fail(err, "delete service %s", name)
	}
	return map[string]any{"rolledBack": true, "deletedServiceName": name, "serviceName": tags[tagBlue]}, nil
}
