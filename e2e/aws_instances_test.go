package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	ecstypes "github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/cli"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/status"
)

// An ECS service's instances and its rollback after the deployment: 1.26 then 1.27 rolled
// out, the sync reads two tasks of 1.27; a task definition of another image and a count put on
// the service by hand show as three tasks and drift (the count alone is not drift: a scalable
// target scales the service); `gantry rollback` runs the stage's EcsRollingRollback as a new
// execution, the service runs 1.26 on two tasks again, without drift, and the ledger says so.
func TestEcsInstancesAndRollback(t *testing.T) {
	fake, dir := ecsRig(t, logs.Store{Dir: t.TempDir()})
	writeFile(t, filepath.Join(dir, "infra.yaml"), strings.ReplaceAll(ecsEntities["infra.yaml"], "ecs_eu", "ecs_inst"))
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), strings.ReplaceAll(ecsPipeline, "ecs_eu", "ecs_inst"))
	var execs []string
	for _, tag := range []string{"1.26", "1.27"} {
		exec, _ := runDeployment(t, dir, "no", "pipeline.variables.tag="+tag)
		execs = append(execs, exec.ID)
	}
	key := contract.DeploymentKey{Project: "default/default", Service: "web", Environment: "prod", Infra: "ecs_inst"}
	read := readings(t, key)
	s := read("two tasks of 1.27", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 2 && s.Ready == 2 && len(s.Artifacts) == 1 && strings.Contains(s.Artifacts[0].Artifact, "nginx:1.27")
	})
	if len(s.Drift) != 0 || s.Error != "" || !strings.HasPrefix(s.Instances[0].Name, "web-prod/") || s.Instances[0].Node == "" {
		t.Errorf("reading after 1.27: %+v", s)
	}

	// By hand: another image, three tasks.
	ctx := context.Background()
	c := ecs.NewFromConfig(handConfig(fake))
	td, err := c.RegisterTaskDefinition(ctx, &ecs.RegisterTaskDefinitionInput{Family: aws.String("web"),
		ContainerDefinitions: []ecstypes.ContainerDefinition{{Name: aws.String("web"), Image: aws.String("library/nginx:1.27-hotfix")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateService(ctx, &ecs.UpdateServiceInput{Cluster: aws.String("prod-cluster"), Service: aws.String("web-prod"),
		TaskDefinition: td.TaskDefinition.TaskDefinitionArn, DesiredCount: aws.Int32(3)}); err != nil {
		t.Fatal(err)
	}
	s = read("three tasks of the hand-made image", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 3 && len(s.Artifacts) == 1 && s.Artifacts[0].Artifact == "library/nginx:1.27-hotfix" && len(s.Drift) > 0
	})
	if len(s.Drift) != 1 || !strings.Contains(s.Drift[0], "service web-prod runs library/nginx:1.27-hotfix") || !strings.Contains(s.Drift[0], "Gantry deployed") {
		t.Errorf("drift %q: the image is, the count (scaled by its scalable target's rules) is not", s.Drift)
	}

	id := rollBack(t, "web", "prod", "ecs_inst", execs)
	if sv, _ := fake.Service("web-prod"); !strings.HasSuffix(sv.TaskDefinition, "web:1") || sv.DesiredCount != 2 {
		t.Errorf("after the rollback the service runs %+v, want web:1 on 2 tasks", sv)
	}
	s = read("two tasks of 1.26 after the rollback", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 2 && len(s.Artifacts) == 1 && strings.Contains(s.Artifacts[0].Artifact, "nginx:1.26") && len(s.Drift) == 0
	})
	if s.Execution != id {
		t.Errorf("the reading follows execution %s, want the rollback %s", s.Execution, id)
	}
}

// An Auto Scaling group's instances and its rollback after the deployment: AMIs shop-1 then
// shop-2 rolled out, the sync reads two instances of ami-0002; the group scaled and moved to
// a launch template version of another AMI by hand is drift (no scaling policy scales it);
// `gantry rollback` runs AsgRollingRollback as a new execution and the group runs two
// instances of ami-0001 again. A blue-green ASG stage cannot be undone after it ended: refused.
func TestAsgInstancesAndRollback(t *testing.T) {
	fake, dir := ecsRig(t, logs.Store{Dir: t.TempDir()})
	for _, svc := range []string{"AUTO_SCALING", "EC2"} {
		t.Setenv("AWS_ENDPOINT_URL_"+svc, fake.URL)
	}
	for i, name := range []string{"shop-1", "shop-2"} {
		fake.AddImage(awsfake.Image{ID: fmt.Sprintf("ami-000%d", i+1), Name: name, Created: fmt.Sprintf("2026-0%d-01T00:00:00.000Z", i+1), Tags: map[string]string{"app": "shop"}})
	}
	for name, text := range asgEntities {
		writeFile(t, filepath.Join(dir, name), text)
	}
	writeFile(t, filepath.Join(dir, "rolling-infra.yaml"), "infrastructureDefinition:\n  name: ASG rolling\n  identifier: asg_rolling\n  environmentRef: prod\n  deploymentType: Asg\n  type: Asg\n"+
		"  spec: {connectorRef: aws, region: eu-west-1, baseAsgName: shop-rolling}\n")
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), asgRollingPipeline)
	var execs []string
	for _, ami := range []string{"shop-1", "shop-2"} {
		exec, _ := runDeployment(t, dir, "no", "pipeline.variables.ami="+ami)
		execs = append(execs, exec.ID)
	}
	key := contract.DeploymentKey{Project: "default/default", Service: "shop", Environment: "prod", Infra: "asg_rolling"}
	read := readings(t, key)
	s := read("two instances of ami-0002", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 2 && s.Ready == 2 && len(s.Artifacts) == 1 && s.Artifacts[0].Artifact == "ami-0002"
	})
	if len(s.Drift) != 0 || !strings.HasPrefix(s.Instances[0].Name, "shop-rolling/i-") || s.Instances[0].Node == "" {
		t.Errorf("reading after shop-2: %+v", s)
	}

	// By hand: a launch template version of another AMI, three instances.
	ctx := context.Background()
	cfg := handConfig(fake)
	v, err := ec2.NewFromConfig(cfg).CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateName: aws.String("shop-rolling"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0hand"), InstanceType: ec2types.InstanceTypeT3Small}})
	if err != nil {
		t.Fatal(err)
	}
	version := fmt.Sprint(aws.ToInt64(v.LaunchTemplateVersion.VersionNumber))
	if _, err := autoscaling.NewFromConfig(cfg).UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("shop-rolling"),
		DesiredCapacity: aws.Int32(3), LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("shop-rolling"), Version: aws.String(version)}}); err != nil {
		t.Fatal(err)
	}
	s = read("three instances, drifted", false, func(s contract.InstanceSnapshot) bool { return s.Count == 3 && len(s.Drift) == 2 })
	drift := strings.Join(s.Drift, "\n")
	if !strings.Contains(drift, "group shop-rolling launches ami-0hand (launch template version "+version+"); Gantry deployed ami-0002") ||
		!strings.Contains(drift, "group shop-rolling was scaled to 3 instances outside Gantry; Gantry deployed 2") {
		t.Errorf("drift %q", s.Drift)
	}

	rollBack(t, "shop", "prod", "asg_rolling", execs)
	if g, _ := fake.Group("shop-rolling"); g.Version != "1" || g.Desired != 2 {
		t.Errorf("after the rollback the group is %+v, want launch template version 1 at 2 instances", g)
	}
	read("two instances of ami-0001 after the rollback", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 2 && len(s.Artifacts) == 1 && s.Artifacts[0].Artifact == "ami-0001" && len(s.Drift) == 0
	})

	// A blue-green stage: refused, naming the step that cannot undo it.
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), asgPipeline)
	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/1/prod", "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/shop/1/prod/1",
		"arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-a/1")
	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/1/stage", "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/shop/1/stage/2",
		"arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-b/2")
	for _, ami := range []string{"shop-1", "shop-2"} {
		runDeployment(t, dir, "no", "pipeline.variables.ami="+ami)
	}
	if code, out := gantryCLI(t, "rollback", "shop", "--env", "prod", "--infra", "asg_eu"); code == 0 || !strings.Contains(out, "rolls back with AsgBlueGreenRollback; Gantry undoes Asg deployments after they ended with AsgRollingRollback alone") {
		t.Errorf("a blue-green rollback: %d %s", code, out)
	}
}

// handConfig signs requests to the fake as a person at the console would.
func handConfig(fake *awsfake.Server) aws.Config {
	return aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(fake.URL), Credentials: credentials.NewStaticCredentialsProvider("AKIDHAND", "hand", "")}
}

// gantryCLI runs the gantry CLI against an API server of the test's Temporal.
func gantryCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	srv, tok, _ := apiServer(t)
	var out strings.Builder
	code := cli.Main(append(args, "--server", srv.URL, "--token", tok), &out, &out)
	return code, out.String()
}

// rollBack rolls a service back with `gantry rollback` from the deployment of execs[1] to
// that of execs[0], waits for the rollback to succeed and for the ledger to say so, and
// returns the rollback's execution.
func rollBack(t *testing.T, service, envID, infra string, execs []string) string {
	t.Helper()
	code, out := gantryCLI(t, "rollback", service, "--env", envID, "--infra", infra)
	if code != 0 || !strings.Contains(out, "("+execs[1]+") to ") || !strings.Contains(out, "("+execs[0]+")") {
		t.Fatalf("rollback: %d %s", code, out)
	}
	id := strings.Fields(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "pipelineRollback.deploy.rollbackSteps.rollback": status.Succeeded})
	f := ledger.Filter{Service: service, Environment: envID, Infra: infra}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		targets, err := env.starter.Ledger().Targets(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) == 1 && targets[0].Current != nil && targets[0].Current.Execution == execs[0] && targets[0].Last.Outcome == contract.OutcomeRolledBack {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger after the rollback: %+v", targets)
		}
	}
}
