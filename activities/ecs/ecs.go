// Package ecs runs the ECS steps with aws-sdk-go-v2: EcsRollingDeploy and EcsRollingRollback,
// EcsCanaryDeploy and EcsCanaryDelete, EcsRunTask, the blue-green steps (bluegreen.go), and
// the basic strategy's EcsServiceSetup, EcsUpgradeContainer and EcsBasicRollback with EcsScale
// (basic.go).
//
// A rolling deploy registers the service's task definition, updates the service (or creates
// it), applies its scaling definitions, and waits for the reference's steady state: the
// service has one deployment, of the new task definition, running its desired count, its
// rollout completed. Before it changes anything it records, as tags on the service, the
// execution, the task definition and desired count to go back to, and the scalable target's
// capacity, so a rollback needs no state of its own and a retried deploy keeps the first
// record.
package ecs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// The tags a rolling deploy leaves on the service for its rollback.
const (
	tagExecution = "gantry-rollback-execution"
	tagTaskDef   = "gantry-rollback-task-definition" // an ARN, or "none": the deploy created the service
	tagCount     = "gantry-rollback-desired-count"
	tagScaling   = "gantry-rollback-scaling" // "MIN,MAX" of the scalable target, or "none"
)

// Activity runs the ECS steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
}

type run struct {
	in      contract.StepInput
	d       *contract.DeployInput
	c       *ecs.Client
	scaling *applicationautoscaling.Client
	elb     *elb.Client
	log     *logs.Writer
	mask    *secrets.Masker
}

// Run runs an ECS step.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	st, err := awsauth.Start(ctx, in, a.Logs, a.Secrets, "ECS")
	if err != nil {
		return contract.StepResult{}, err
	}
	defer st.End()
	ctx, d := st.Ctx, in.Deploy
	if d.Cluster == "" {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "%s step %s needs a Deployment stage with deploymentType ECS", in.Type, in.StepPath)
	}
	r := &run{in: in, d: d, log: st.Log, mask: st.Mask}
	r.c, r.scaling, r.elb = ecs.NewFromConfig(st.Cfg), applicationautoscaling.NewFromConfig(st.Cfg), elb.NewFromConfig(st.Cfg)
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "Gantry does not run %s steps", in.Type)
	}
	out, err := h(ctx, r, in.Spec)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return contract.StepResult{}, contract.Fail(contract.Timeout, "%s: the service did not reach its steady state within the step's timeout %s", in.Type, in.Timeout)
		}
		return contract.StepResult{}, err
	}
	return contract.StepResult{Outputs: out}, nil
}

type handler func(ctx context.Context, r *run, raw json.RawMessage) (map[string]any, error)

// withSpec makes a handler of a function over the step's spec type S (stepspec's, the one
// validation decoded).
func withSpec[S any](f func(*run, context.Context, *S) (map[string]any, error)) handler {
	return func(ctx context.Context, r *run, raw json.RawMessage) (map[string]any, error) {
		sp, err := stepspec.Decode[S](raw)
		if err != nil {
			return nil, contract.Fail(contract.Verification, "%s spec: %v", r.in.Type, err)
		}
		return f(r, ctx, &sp)
	}
}

// withoutSpec makes a handler of a step that reads no spec fields.
func withoutSpec(f func(*run, context.Context) (map[string]any, error)) handler {
	return func(ctx context.Context, r *run, _ json.RawMessage) (map[string]any, error) { return f(r, ctx) }
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.EcsRollingDeploy: withSpec(func(r *run, ctx context.Context, sp *stepspec.EcsRollingDeploySpec) (map[string]any, error) {
		return r.rollingDeploy(ctx, truthy(sp.SameAsAlreadyRunningInstances), truthy(sp.ForceNewDeployment), truthy(sp.SkipApplicationScaling))
	}),
	stepspec.EcsRollingRollback: withoutSpec((*run).rollingRollback),
	stepspec.EcsCanaryDeploy:    withoutSpec((*run).canaryDeploy),
	stepspec.EcsCanaryDelete:    withoutSpec((*run).canaryDelete),
	stepspec.EcsRunTask: withSpec(func(r *run, ctx context.Context, sp *stepspec.EcsRunTaskSpec) (map[string]any, error) {
		return r.runTask(ctx, sp.TaskDefinitionArn, truthy(sp.SkipSteadyStateCheck))
	}),
	stepspec.EcsBlueGreenCreateService:    withSpec((*run).blueGreenCreate),
	stepspec.EcsBlueGreenSwapTargetGroups: withSpec((*run).blueGreenSwap),
	stepspec.EcsBlueGreenRollback:         withoutSpec((*run).blueGreenRollback),
	stepspec.EcsServiceSetup: withSpec(func(r *run, ctx context.Context, sp *stepspec.EcsServiceSetupSpec) (map[string]any, error) {
		return r.serviceSetup(ctx, truthy(sp.SameAsAlreadyRunningInstances), sp.ResizeStrategy)
	}),
	stepspec.EcsUpgradeContainer:      withSpec((*run).upgradeContainer),
	stepspec.EcsBasicRollback:         withoutSpec((*run).basicRollback),
	stepspec.EcsBlueGreenTrafficShift: withSpec((*run).trafficShift),
	stepspec.StandAloneTrafficShiftRollback: withSpec(func(r *run, ctx context.Context, sp *stepspec.StandAloneTrafficShiftRollbackSpec) (map[string]any, error) {
		return r.standaloneRollback(ctx, sp.ListenerRuleArns)
	}),
	stepspec.EcsScale: withSpec((*run).scaleService),
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

func truthy(v stepspec.Text) bool { return v == "true" }

func (r *run) logf(format string, args ...any) {
	r.log.Line(r.mask.Apply(fmt.Sprintf(format, args...)))
}

func (r *run) fail(err error, format string, args ...any) error {
	return awsauth.Fail(err, "%s (cluster %s, region %s, connector %s)", fmt.Sprintf(format, args...), r.d.Cluster, r.d.Region, r.d.Aws.ID)
}

var decode = awsauth.Decode

// files returns the files of the service's manifests of a type.
func (r *run) files(typ string) []plan.File { return awsauth.Files(r.d, typ) }

// register registers a task definition file and returns its ARN.
func (r *run) register(ctx context.Context, f plan.File) (string, error) {
	var in ecs.RegisterTaskDefinitionInput
	if err := decode(f, &in); err != nil {
		return "", err
	}
	if aws.ToString(in.Family) == "" || len(in.ContainerDefinitions) == 0 {
		return "", contract.Fail(contract.Verification, "task definition %s needs family and containerDefinitions", f.Path)
	}
	out, err := r.c.RegisterTaskDefinition(ctx, &in)
	if err != nil {
		return "", r.fail(err, "register task definition %s (family %s)", f.Path, aws.ToString(in.Family))
	}
	arn := aws.ToString(out.TaskDefinition.TaskDefinitionArn)
	images := []string{}
	for _, c := range out.TaskDefinition.ContainerDefinitions {
		images = append(images, aws.ToString(c.Name)+"="+aws.ToString(c.Image))
	}
	r.logf("registered task definition %s (%s)", arn, strings.Join(images, ", "))
	return arn, nil
}

// definitions reads the service's task and service definitions.
func (r *run) definitions() (plan.File, *ecs.CreateServiceInput, error) {
	tds, sds := r.files("EcsTaskDefinition"), r.files("EcsServiceDefinition")
	if len(tds) != 1 || len(sds) != 1 {
		return plan.File{}, nil, contract.Fail(contract.Verification, "the ECS service needs one EcsTaskDefinition and one EcsServiceDefinition file (has %d and %d)", len(tds), len(sds))
	}
	var svc ecs.CreateServiceInput
	if err := decode(sds[0], &svc); err != nil {
		return plan.File{}, nil, err
	}
	if aws.ToString(svc.ServiceName) == "" {
		return plan.File{}, nil, contract.Fail(contract.Verification, "service definition %s needs serviceName", sds[0].Path)
	}
	svc.Cluster = aws.String(r.d.Cluster)
	return tds[0], &svc, nil
}

// describe returns the service, or nil when it does not exist (or is inactive).
func (r *run) describe(ctx context.Context, name string) (*types.Service, error) {
	out, err := r.c.DescribeServices(ctx, &ecs.DescribeServicesInput{Cluster: aws.String(r.d.Cluster), Services: []string{name}, Include: []types.ServiceField{types.ServiceFieldTags}})
	if err != nil {
		return nil, r.fail(err, "describe service %s", name)
	}
	for i, s := range out.Services {
		if aws.ToString(s.ServiceName) == name && aws.ToString(s.Status) != "INACTIVE" {
			return &out.Services[i], nil
		}
	}
	return nil, nil
}

func tagsOf(s *types.Service) map[string]string {
	out := map[string]string{}
	for _, t := range s.Tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func (r *run) rollingDeploy(ctx context.Context, sameCount, force, skipScaling bool) (map[string]any, error) {
	tdFile, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	name := aws.ToString(def.ServiceName)
	arn, err := r.register(ctx, tdFile)
	if err != nil {
		return nil, err
	}
	cur, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	previous := "none"
	if cur == nil {
		def.TaskDefinition = aws.String(arn)
		def.Tags = append(def.Tags, types.Tag{Key: aws.String(tagExecution), Value: aws.String(r.in.ExecutionID)},
			types.Tag{Key: aws.String(tagTaskDef), Value: aws.String("none")})
		r.logf("creating service %s in cluster %s with %d tasks of %s", name, r.d.Cluster, aws.ToInt32(def.DesiredCount), arn)
		if _, err := r.c.CreateService(ctx, def); err != nil {
			return nil, r.fail(err, "create service %s", name)
		}
	} else {
		if previous, err = r.recordRollback(ctx, cur); err != nil {
			return nil, err
		}
		up := &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), TaskDefinition: aws.String(arn),
			DesiredCount: def.DesiredCount, ForceNewDeployment: force, NetworkConfiguration: def.NetworkConfiguration,
			DeploymentConfiguration: def.DeploymentConfiguration, CapacityProviderStrategy: def.CapacityProviderStrategy,
			PlatformVersion: def.PlatformVersion, HealthCheckGracePeriodSeconds: def.HealthCheckGracePeriodSeconds,
			EnableExecuteCommand: aws.Bool(def.EnableExecuteCommand), PlacementConstraints: def.PlacementConstraints, PlacementStrategy: def.PlacementStrategy}
		if sameCount || up.DesiredCount == nil {
			up.DesiredCount = aws.Int32(cur.DesiredCount)
		}
		r.logf("updating service %s to %s, %d tasks (a rollback goes back to %s)", name, arn, aws.ToInt32(up.DesiredCount), previous)
		if _, err := r.c.UpdateService(ctx, up); err != nil {
			return nil, r.fail(err, "update service %s", name)
		}
	}
	if !skipScaling {
		if err := r.applyScaling(ctx, name); err != nil {
			return nil, err
		}
	}
	svc, err := r.steady(ctx, name, arn)
	if err != nil {
		return nil, err
	}
	if err := r.markDeployed(ctx, svc, arn); err != nil {
		return nil, err
	}
	return map[string]any{"serviceName": name, "serviceArn": aws.ToString(svc.ServiceArn), "taskDefinitionArn": arn,
		"desiredCount": svc.DesiredCount, "runningCount": svc.RunningCount, "previousTaskDefinitionArn": previous,
		"cluster": r.d.Cluster, "region": r.d.Region}, nil
}

// recordRollback tags the service with what a rollback restores, unless an earlier attempt of
// this execution already did; it returns the task definition to go back to.
func (r *run) recordRollback(ctx context.Context, s *types.Service) (string, error) {
	tags := tagsOf(s)
	if tags[tagExecution] == r.in.ExecutionID && tags[tagTaskDef] != "" {
		return tags[tagTaskDef], nil
	}
	scaling := "none"
	t, err := r.scalableTarget(ctx, aws.ToString(s.ServiceName))
	if err != nil {
		return "", err
	}
	if t != nil {
		scaling = fmt.Sprintf("%d,%d", aws.ToInt32(t.MinCapacity), aws.ToInt32(t.MaxCapacity))
	}
	prev := aws.ToString(s.TaskDefinition)
	if _, err := r.c.TagResource(ctx, &ecs.TagResourceInput{ResourceArn: s.ServiceArn, Tags: []types.Tag{
		{Key: aws.String(tagExecution), Value: aws.String(r.in.ExecutionID)}, {Key: aws.String(tagTaskDef), Value: aws.String(prev)},
		{Key: aws.String(tagCount), Value: aws.String(strconv.Itoa(int(s.DesiredCount)))}, {Key: aws.String(tagScaling), Value: aws.String(scaling)}}}); err != nil {
		return "", r.fail(err, "tag service %s with its rollback state", aws.ToString(s.ServiceName))
	}
	return prev, nil
}

func (r *run) resourceID(service string) string { return "service/" + r.d.Cluster + "/" + service }

func (r *run) scalableTarget(ctx context.Context, service string) (*astypes.ScalableTarget, error) {
	out, err := r.scaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: astypes.ServiceNamespaceEcs,
		ResourceIds: []string{r.resourceID(service)}, ScalableDimension: astypes.ScalableDimensionECSServiceDesiredCount})
	if err != nil {
		return nil, r.fail(err, "read the scalable target of service %s", service)
	}
	if len(out.ScalableTargets) == 0 {
		return nil, nil
	}
	return &out.ScalableTargets[0], nil
}

// applyScaling registers the service's scalable targets and puts its scaling policies.
func (r *run) applyScaling(ctx context.Context, service string) error {
	for _, f := range r.files("EcsScalableTargetDefinition") {
		var in applicationautoscaling.RegisterScalableTargetInput
		if err := decode(f, &in); err != nil {
			return err
		}
		in.ServiceNamespace, in.ResourceId, in.ScalableDimension = astypes.ServiceNamespaceEcs, aws.String(r.resourceID(service)), astypes.ScalableDimensionECSServiceDesiredCount
		if _, err := r.scaling.RegisterScalableTarget(ctx, &in); err != nil {
			return r.fail(err, "register scalable target %s for service %s", f.Path, service)
		}
		r.logf("scalable target of service %s: %d to %d tasks", service, aws.ToInt32(in.MinCapacity), aws.ToInt32(in.MaxCapacity))
	}
	for _, f := range r.files("EcsScalingPolicyDefinition") {
		var in applicationautoscaling.PutScalingPolicyInput
		if err := decode(f, &in); err != nil {
			return err
		}
		in.ServiceNamespace, in.ResourceId, in.ScalableDimension = astypes.ServiceNamespaceEcs, aws.String(r.resourceID(service)), astypes.ScalableDimensionECSServiceDesiredCount
		if _, err := r.scaling.PutScalingPolicy(ctx, &in); err != nil {
			return r.fail(err, "put scaling policy %s for service %s", f.Path, service)
		}
		r.logf("scaling policy %s of service %s", aws.ToString(in.PolicyName), service)
	}
	return nil
}

// steady waits for the reference's steady state: one deployment, of taskDef, running its
// desired count, its rollout (when ECS reports one) completed. A failed rollout fails the step.
func (r *run) steady(ctx context.Context, name, taskDef string) (*types.Service, error) {
	delay := 100 * time.Millisecond
	last := ""
	for {
		s, err := r.describe(ctx, name)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, contract.Fail(contract.Verification, "service %s disappeared while it was deploying", name)
		}
		var primary *types.Deployment
		for i, d := range s.Deployments {
			if aws.ToString(d.Status) == "PRIMARY" {
				primary = &s.Deployments[i]
			}
		}
		if primary != nil {
			if primary.RolloutState == types.DeploymentRolloutStateFailed {
				return nil, contract.Fail(contract.Verification, "service %s: the deployment of %s failed: %s", name, taskDef, aws.ToString(primary.RolloutStateReason))
			}
			state := fmt.Sprintf("%d deployment(s); new: %d/%d running, %d pending", len(s.Deployments), primary.RunningCount, primary.DesiredCount, primary.PendingCount)
			if state != last {
				r.logf("service %s: %s", name, state)
				last = state
			}
			if len(s.Deployments) == 1 && aws.ToString(primary.TaskDefinition) == taskDef && primary.RunningCount == primary.DesiredCount &&
				(primary.RolloutState == "" || primary.RolloutState == types.DeploymentRolloutStateCompleted) {
				r.logf("service %s is steady: %d tasks of %s", name, primary.RunningCount, taskDef)
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

func (r *run) rollingRollback(ctx context.Context) (map[string]any, error) {
	_, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	name := aws.ToString(def.ServiceName)
	cur, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		r.logf("service %s does not exist: nothing to roll back", name)
		return map[string]any{"serviceName": name, "rolledBack": false}, nil
	}
	tags := tagsOf(cur)
	if of := r.d.RollbackOf; of != "" {
		// A post-deployment rollback undoes the earlier execution's deploy, which must still be
		// the service's last.
		switch {
		case tags[tagExecution] != of:
			return nil, contract.Fail(contract.Unknown, "service %s was last deployed by execution %s, not %s, so that deployment is no longer what runs; nothing was rolled back", name, tags[tagExecution], of)
		case tags[tagTaskDef] == "none":
			return nil, contract.Fail(contract.Unknown, "service %s was created by execution %s: it ran no task definition before to restore; nothing was rolled back", name, of)
		}
	} else if tags[tagExecution] != r.in.ExecutionID {
		r.logf("service %s was not changed by this execution: nothing to roll back", name)
		return map[string]any{"serviceName": name, "rolledBack": false}, nil
	}
	if tags[tagTaskDef] == "none" {
		r.logf("service %s was created by this execution: deleting it", name)
		if t, err := r.scalableTarget(ctx, name); err == nil && t != nil {
			_, _ = r.scaling.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: astypes.ServiceNamespaceEcs,
				ResourceId: aws.String(r.resourceID(name)), ScalableDimension: astypes.ScalableDimensionECSServiceDesiredCount})
		}
		if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), Force: aws.Bool(true)}); err != nil {
			return nil, r.fail(err, "delete service %s", name)
		}
		return map[string]any{"serviceName": name, "rolledBack": true, "deleted": true}, nil
	}
	prev := tags[tagTaskDef]
	count, _ := strconv.Atoi(tags[tagCount])
	r.logf("rolling service %s back to %s, %d tasks", name, prev, count)
	if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name),
		TaskDefinition: aws.String(prev), DesiredCount: aws.Int32(int32(count))}); err != nil {
		return nil, r.fail(err, "roll service %s back", name)
	}
	if sc := tags[tagScaling]; sc == "none" {
		if t, err := r.scalableTarget(ctx, name); err == nil && t != nil {
			_, _ = r.scaling.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: astypes.ServiceNamespaceEcs,
				ResourceId: aws.String(r.resourceID(name)), ScalableDimension: astypes.ScalableDimensionECSServiceDesiredCount})
		}
	} else if lo, hi, ok := strings.Cut(sc, ","); ok {
		mn, _ := strconv.Atoi(lo)
		mx, _ := strconv.Atoi(hi)
		if _, err := r.scaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{ServiceNamespace: astypes.ServiceNamespaceEcs,
			ResourceId: aws.String(r.resourceID(name)), ScalableDimension: astypes.ScalableDimensionECSServiceDesiredCount,
			MinCapacity: aws.Int32(int32(mn)), MaxCapacity: aws.Int32(int32(mx))}); err != nil {
			return nil, r.fail(err, "restore the scalable target of service %s", name)
		}
	}
	svc, err := r.steady(ctx, name, prev)
	if err != nil {
		return nil, err
	}
	if err := r.markDeployed(ctx, svc, prev); err != nil {
		return nil, err
	}
	return map[string]any{"serviceName": name, "rolledBack": true, "taskDefinitionArn": prev, "desiredCount": svc.DesiredCount}, nil
}

// canaryName is the canary service beside a service.
func canaryName(service string) string { return service + "Canary" }

func (r *run) canaryDeploy(ctx context.Context) (map[string]any, error) {
	tdFile, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	arn, err := r.register(ctx, tdFile)
	if err != nil {
		return nil, err
	}
	name := canaryName(aws.ToString(def.ServiceName))
	def.ServiceName, def.TaskDefinition, def.DesiredCount, def.LoadBalancers = aws.String(name), aws.String(arn), aws.Int32(1), nil
	cur, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		r.logf("creating canary service %s with 1 task of %s", name, arn)
		if _, err := r.c.CreateService(ctx, def); err != nil {
			return nil, r.fail(err, "create canary service %s", name)
		}
	} else {
		r.logf("updating canary service %s to 1 task of %s", name, arn)
		if _, err := r.c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name),
			TaskDefinition: aws.String(arn), DesiredCount: aws.Int32(1), NetworkConfiguration: def.NetworkConfiguration}); err != nil {
			return nil, r.fail(err, "update canary service %s", name)
		}
	}
	svc, err := r.steady(ctx, name, arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"canaryServiceName": name, "serviceArn": aws.ToString(svc.ServiceArn), "taskDefinitionArn": arn,
		"desiredCount": svc.DesiredCount, "cluster": r.d.Cluster, "region": r.d.Region}, nil
}

func (r *run) canaryDelete(ctx context.Context) (map[string]any, error) {
	_, def, err := r.definitions()
	if err != nil {
		return nil, err
	}
	name := canaryName(aws.ToString(def.ServiceName))
	cur, err := r.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		r.logf("canary service %s does not exist: nothing to delete", name)
		return map[string]any{"canaryServiceName": name, "deleted": false}, nil
	}
	if _, err := r.c.DeleteService(ctx, &ecs.DeleteServiceInput{Cluster: aws.String(r.d.Cluster), Service: aws.String(name), Force: aws.Bool(true)}); err != nil {
		return nil, r.fail(err, "delete canary service %s", name)
	}
	r.logf("deleted canary service %s", name)
	return map[string]any{"canaryServiceName": name, "deleted": true}, nil
}

// runTask runs a task of the step's task definition (or taskDefinitionArn) with its RunTask
// request, and unless skipSteady waits until it stops: an essential container that exits
// non-zero fails the step.
func (r *run) runTask(ctx context.Context, arn string, skipSteady bool) (map[string]any, error) {
	var taskDef, request []plan.File
	for _, m := range r.d.Manifests {
		if m.Type == stepspec.EcsRunTask {
			taskDef, request = m.Files, m.Values
		}
	}
	if arn == "" {
		if len(taskDef) != 1 {
			return nil, contract.Fail(contract.Verification, "EcsRunTask needs a taskDefinition file or a taskDefinitionArn")
		}
		var err error
		if arn, err = r.register(ctx, taskDef[0]); err != nil {
			return nil, err
		}
	}
	in := &ecs.RunTaskInput{}
	if len(request) == 1 {
		if err := decode(request[0], in); err != nil {
			return nil, err
		}
	}
	in.Cluster, in.TaskDefinition = aws.String(r.d.Cluster), aws.String(arn)
	out, err := r.c.RunTask(ctx, in)
	if err != nil {
		return nil, r.fail(err, "run a task of %s", arn)
	}
	if len(out.Failures) > 0 {
		f := out.Failures[0]
		return nil, contract.Fail(contract.Verification, "run a task of %s: %s: %s", arn, aws.ToString(f.Reason), aws.ToString(f.Detail))
	}
	var arns []string
	for _, t := range out.Tasks {
		arns = append(arns, aws.ToString(t.TaskArn))
	}
	r.logf("started %d task(s) of %s: %s", len(arns), arn, strings.Join(arns, ", "))
	result := map[string]any{"taskArns": arns, "taskDefinitionArn": arn, "cluster": r.d.Cluster}
	if skipSteady || len(arns) == 0 {
		return result, nil
	}
	delay := 100 * time.Millisecond
	for {
		got, err := r.c.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(r.d.Cluster), Tasks: arns})
		if err != nil {
			return nil, r.fail(err, "describe tasks %s", strings.Join(arns, ", "))
		}
		stopped := 0
		for _, t := range got.Tasks {
			if aws.ToString(t.LastStatus) != "STOPPED" {
				continue
			}
			stopped++
			for _, c := range t.Containers {
				if c.ExitCode != nil && *c.ExitCode != 0 {
					return nil, contract.Fail(contract.Verification, "task %s: container %s exited with code %d (%s)", aws.ToString(t.TaskArn),
						aws.ToString(c.Name), *c.ExitCode, aws.ToString(t.StoppedReason))
				}
			}
		}
		if stopped == len(arns) {
			r.logf("task(s) stopped, every container exited 0")
			return result, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
