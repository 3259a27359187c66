package ecs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/ecs"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

const taskDef = `family: web
networkMode: awsvpc
requiresCompatibilities: [FARGATE]
cpu: "256"
memory: "512"
containerDefinitions:
  - name: web
    image: %s
    essential: true
    portMappings: [{containerPort: 80, protocol: tcp}]
`

const serviceDef = `{"serviceName": "web", "launchType": "FARGATE", "desiredCount": %d,
 "loadBalancers": [{"targetGroupArn": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-a/1", "containerName": "web", "containerPort": 80}],
 "networkConfiguration": {"awsvpcConfiguration": {"subnets": ["subnet-1"], "securityGroups": ["sg-1"], "assignPublicIp": "ENABLED"}},
 "deploymentConfiguration": {"maximumPercent": 200, "minimumHealthyPercent": 100}}`

func step(t *testing.T, a *ecs.Activity, typ, exec, image string, count int, spec string, extra ...plan.Manifest) (map[string]any, *contract.Failure) {
	t.Helper()
	ms := []plan.Manifest{
		{ID: "td", Type: "EcsTaskDefinition", Files: []plan.File{{Path: "task.yaml", Text: fmt.Sprintf(taskDef, image)}}},
		{ID: "sd", Type: "EcsServiceDefinition", Files: []plan.File{{Path: "service.json", Text: fmt.Sprintf(serviceDef, count)}}},
		{ID: "st", Type: "EcsScalableTargetDefinition", Files: []plan.File{{Path: "target.yaml", Text: fmt.Sprintf("minCapacity: %d\nmaxCapacity: %d\n", count, count*3)}}},
		{ID: "sp", Type: "EcsScalingPolicyDefinition", Files: []plan.File{{Path: "policy.yaml", Text: "policyName: cpu\npolicyType: TargetTrackingScaling\ntargetTrackingScalingPolicyConfiguration:\n  targetValue: 60\n  predefinedMetricSpecification: {predefinedMetricType: ECSServiceAverageCPUUtilization}\n"}}},
	}
	in := contract.StepInput{ExecutionID: exec, StepPath: "deploy." + typ, Type: typ, Spec: json.RawMessage(spec), Timeout: time.Minute,
		Deploy: &contract.DeployInput{Aws: &plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDECS", SecretKeyRef: "k"},
			Region: "eu-west-1", Cluster: "prod", Manifests: append(ms, extra...)}}
	res, err := a.Run(context.Background(), in)
	if err != nil {
		return nil, contract.Classify(err)
	}
	return res.Outputs, nil
}

// Rolling deploys create and update the service and wait for its rollout to complete, applying
// its scaling; a rollback restores the task definition, desired count and scalable target it
// recorded (or deletes a service it created); a failed rollout is a Verification failure;
// canaries come and go; a task that exits non-zero fails its EcsRunTask step.
func TestEcsSteps(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake.URL)
	a := &ecs.Activity{Secrets: awsfake.Secrets{"k": "secret"}, Logs: logs.Store{Dir: t.TempDir()}}

	out, f := step(t, a, "EcsRollingDeploy", "exec-1", "nginx:1.26", 2, `{}`)
	if f != nil || out["taskDefinitionArn"] != "arn:aws:ecs:us-east-1:123456789012:task-definition/web:1" || out["previousTaskDefinitionArn"] != "none" || out["runningCount"] != int32(2) {
		t.Fatalf("create: %v %+v", out, f)
	}
	out, f = step(t, a, "EcsRollingDeploy", "exec-2", "nginx:1.27", 3, `{}`)
	if f != nil || !strings.HasSuffix(fmt.Sprint(out["taskDefinitionArn"]), "web:2") || !strings.HasSuffix(fmt.Sprint(out["previousTaskDefinitionArn"]), "web:1") || out["runningCount"] != int32(3) {
		t.Fatalf("update: %v %+v", out, f)
	}
	if mn, mx, ok := fake.ScalableTarget("service/prod/web"); !ok || mn != 3 || mx != 9 {
		t.Fatalf("scalable target %d..%d %v", mn, mx, ok)
	}
	if out, f = step(t, a, "EcsRollingDeploy", "exec-3", "nginx:1.28", 4, `{"sameAsAlreadyRunningInstances": true}`); f != nil || out["desiredCount"] != int32(3) {
		t.Fatalf("sameAsAlreadyRunningInstances: %v %+v", out, f)
	}
	out, f = step(t, a, "EcsRollingRollback", "exec-3", "nginx:1.28", 4, `{}`)
	if f != nil || out["rolledBack"] != true {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	sv, _ := fake.Service("web")
	if !strings.HasSuffix(sv.TaskDefinition, "web:2") || sv.DesiredCount != 3 || sv.Deployments != 1 {
		t.Fatalf("after the rollback: %+v", sv)
	}
	if mn, mx, _ := fake.ScalableTarget("service/prod/web"); mn != 3 || mx != 9 {
		t.Fatalf("the rollback left the scalable target at %d..%d, want 3..9", mn, mx)
	}
	if out, f = step(t, a, "EcsRollingRollback", "exec-7", "nginx:1.28", 4, `{}`); f != nil || out["rolledBack"] != false {
		t.Fatalf("rollback of an execution that changed nothing: %v %+v", out, f)
	}

	_, f = step(t, a, "EcsRollingDeploy", "exec-4", "crashloop:1", 3, `{}`)
	if f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "circuit breaker") {
		t.Fatalf("a failed rollout: %+v", f)
	}

	if out, f = step(t, a, "EcsCanaryDeploy", "exec-5", "nginx:1.29", 3, `{}`); f != nil || out["canaryServiceName"] != "webCanary" || out["desiredCount"] != int32(1) {
		t.Fatalf("canary: %v %+v", out, f)
	}
	if out, f = step(t, a, "EcsCanaryDelete", "exec-5", "nginx:1.29", 3, `{}`); f != nil || out["deleted"] != true {
		t.Fatalf("canary delete: %v %+v", out, f)
	}
	if _, ok := fake.Service("webCanary"); ok {
		t.Fatal("the canary service is still there")
	}

	run := func(command string) (map[string]any, *contract.Failure) {
		return step(t, a, "EcsRunTask", "exec-6", "busybox", 1, `{}`, plan.Manifest{ID: "migrate", Type: "EcsRunTask",
			Files:  []plan.File{{Path: "migrate.yaml", Text: fmt.Sprintf(taskDef, "migrations:1")}},
			Values: []plan.File{{Path: "run.yaml", Text: "launchType: FARGATE\noverrides:\n  containerOverrides: [{name: web, command: [sh, -c, '" + command + "']}]\n"}}})
	}
	if out, f = run("migrate up"); f != nil || len(out["taskArns"].([]string)) != 1 {
		t.Fatalf("run task: %v %+v", out, f)
	}
	if _, f = run("exit 1"); f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "container web exited with code 1") {
		t.Fatalf("a failing task: %+v", f)
	}

	// A service this execution created is deleted by its rollback.
	fake2 := awsfake.Start()
	defer fake2.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake2.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake2.URL)
	if _, f = step(t, a, "EcsRollingDeploy", "exec-8", "nginx:1", 1, `{}`); f != nil {
		t.Fatal(f)
	}
	if out, f = step(t, a, "EcsRollingRollback", "exec-8", "nginx:1", 1, `{}`); f != nil || out["deleted"] != true {
		t.Fatalf("rollback of a created service: %v %+v", out, f)
	}
	if _, ok := fake2.Service("web"); ok {
		t.Fatal("the service the execution created is still there")
	}
}

// Blue-green: the green service starts behind the stage target group; the swap points the prod
// listener rule at it and the stage one at the old service, which is downsized; a rollback
// after a swap points them back and restores the old service; a rollback before a swap only
// deletes the green service; a green service an earlier run left is deleted.
func TestEcsBlueGreen(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", fake.URL)
	const (
		lb       = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/web/1"
		prodL    = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/80"
		prodRule = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/web/1/80/1"
		stageL   = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/8080"
		tgA      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-a/1"
		tgB      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-b/2"
	)
	fake.AddListener(prodL, prodRule, tgA)
	fake.AddListener(stageL, "", tgB)
	a := &ecs.Activity{Secrets: awsfake.Secrets{"k": "secret"}, Logs: logs.Store{Dir: t.TempDir()}}
	bgSpec := `{"loadBalancer": "` + lb + `", "prodListener": "` + prodL + `", "prodListenerRuleArn": "` + prodRule + `", "stageListener": "` + stageL + `", "sameAsAlreadyRunningInstances": true}`
	withLB := func(typ, exec, image, spec string) (map[string]any, *contract.Failure) {
		t.Helper()
		return step(t, a, typ, exec, image, 2, spec)
	}
	if _, f := withLB("EcsRollingDeploy", "exec-1", "nginx:1", `{}`); f != nil {
		t.Fatal(f)
	}
	out, f := withLB("EcsBlueGreenCreateService", "exec-2", "nginx:2", bgSpec)
	if f != nil || out["greenServiceName"] != "web__2" || out["blueServiceName"] != "web" || out["stageTargetGroupArn"] != tgB || out["prodTargetGroupArn"] != tgA {
		t.Fatalf("create green: %v %+v", out, f)
	}
	if _, f = withLB("EcsBlueGreenSwapTargetGroups", "exec-2", "nginx:2", `{}`); f != nil {
		t.Fatal(f)
	}
	if fake.Forwards(prodRule) != tgB || fake.Forwards(stageL) != tgA {
		t.Fatalf("after the swap prod forwards to %s, stage to %s", fake.Forwards(prodRule), fake.Forwards(stageL))
	}
	if old, _ := fake.Service("web"); old.DesiredCount != 0 {
		t.Fatalf("the old service was not downsized: %+v", old)
	}
	// The next release: web__2 is blue now; web, left as green, is deleted; a rollback before
	// the swap deletes the new green service and leaves the listeners alone.
	out, f = withLB("EcsBlueGreenCreateService", "exec-3", "nginx:3", bgSpec)
	if f != nil || out["blueServiceName"] != "web__2" || out["stageTargetGroupArn"] != tgA {
		t.Fatalf("second release: %v %+v", out, f)
	}
	if _, ok := fake.Service("web"); ok {
		t.Fatal("the green service an earlier run left is still there")
	}
	if out, f = withLB("EcsBlueGreenRollback", "exec-3", "nginx:3", `{}`); f != nil || out["deletedServiceName"] != "web__3" {
		t.Fatalf("rollback before the swap: %v %+v", out, f)
	}
	if fake.Forwards(prodRule) != tgB {
		t.Fatal("a rollback before the swap moved the prod listener")
	}
	// A release swapped, then rolled back.
	if _, f = withLB("EcsBlueGreenCreateService", "exec-4", "nginx:4", bgSpec); f != nil {
		t.Fatal(f)
	}
	if _, f = withLB("EcsBlueGreenSwapTargetGroups", "exec-4", "nginx:4", `{}`); f != nil {
		t.Fatal(f)
	}
	if fake.Forwards(prodRule) != tgA {
		t.Fatalf("second swap: prod forwards to %s", fake.Forwards(prodRule))
	}
	if out, f = withLB("EcsBlueGreenRollback", "exec-4", "nginx:4", `{}`); f != nil || out["deletedServiceName"] != "web__4" {
		t.Fatalf("rollback after the swap: %v %+v", out, f)
	}
	if fake.Forwards(prodRule) != tgB || fake.Forwards(stageL) != tgA {
		t.Fatalf("after the rollback prod forwards to %s, stage to %s", fake.Forwards(prodRule), fake.Forwards(stageL))
	}
	if blue, _ := fake.Service("web__2"); blue.DesiredCount != 2 || blue.Tags["gantry-bg-role"] != "blue" {
		t.Fatalf("the restored blue service: %+v", blue)
	}
	if _, f = withLB("EcsBlueGreenSwapTargetGroups", "exec-9", "nginx:4", `{}`); f == nil || !strings.Contains(f.Message, "run EcsBlueGreenCreateService first") {
		t.Fatalf("a swap without a green service: %+v", f)
	}
}

// The basic strategy: each release is a service `web__N` set up at zero tasks and upgraded in
// phases while the previous version is downsized; a rollback deletes the new version and gives
// the old one its tasks back; a first deployment has nothing to downsize; older versions that
// run nothing are deleted; EcsScale sets a named service's count.
func TestEcsBasicAndScale(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake.URL)
	a := &ecs.Activity{Secrets: awsfake.Secrets{"k": "secret"}, Logs: logs.Store{Dir: t.TempDir()}}
	count := func(name string) int {
		s, ok := fake.Service(name)
		if !ok {
			return -1
		}
		return s.DesiredCount
	}

	out, f := step(t, a, "EcsServiceSetup", "exec-1", "nginx:1.26", 4, `{}`)
	if f != nil || out["newServiceName"] != "web__1" || out["isFirstDeployment"] != true || count("web__1") != 0 {
		t.Fatalf("first setup: %v %+v", out, f)
	}
	if out, f = step(t, a, "EcsUpgradeContainer", "exec-1", "nginx:1.26", 4, `{"newServiceInstanceCount": 100, "newServiceInstanceUnit": "Percentage"}`); f != nil || count("web__1") != 4 {
		t.Fatalf("first upgrade: %v %+v", out, f)
	}
	if mn, mx, ok := fake.ScalableTarget("service/prod/web__1"); !ok || mn != 4 || mx != 12 {
		t.Fatalf("the full-size version's scalable target %d..%d %v", mn, mx, ok)
	}

	out, f = step(t, a, "EcsServiceSetup", "exec-2", "nginx:1.27", 4, `{"resizeStrategy": "DownsizeOldFirst"}`)
	if f != nil || out["newServiceName"] != "web__2" || out["oldServiceName"] != "web__1" {
		t.Fatalf("second setup: %v %+v", out, f)
	}
	if _, f = step(t, a, "EcsUpgradeContainer", "exec-2", "nginx:1.27", 4, `{"newServiceInstanceCount": 50, "newServiceInstanceUnit": "Percentage", "downsizeOldServiceInstanceCount": 1, "downsizeOldServiceInstanceUnit": "Count"}`); f != nil {
		t.Fatal(f)
	}
	if count("web__2") != 2 || count("web__1") != 1 {
		t.Fatalf("after a 50%% phase: web__2 %d, web__1 %d", count("web__2"), count("web__1"))
	}
	out, f = step(t, a, "EcsBasicRollback", "exec-2", "nginx:1.27", 4, `{}`)
	if f != nil || out["deletedServiceName"] != "web__2" || count("web__2") != -1 || count("web__1") != 4 {
		t.Fatalf("rollback: %v %+v, web__1 runs %d", out, f, count("web__1"))
	}
	if out, f = step(t, a, "EcsBasicRollback", "exec-9", "nginx:1.27", 4, `{}`); f != nil || out["rolledBack"] != false {
		t.Fatalf("rollback of an execution that set nothing up: %v %+v", out, f)
	}

	// web__1 is replaced by web__2 (index reused after the rollback), then web__3 replaces
	// web__2: web__1, scaled to zero, is stale and deleted.
	step(t, a, "EcsServiceSetup", "exec-3", "nginx:1.28", 4, `{"sameAsAlreadyRunningInstances": true}`)
	step(t, a, "EcsUpgradeContainer", "exec-3", "nginx:1.28", 4, `{"newServiceInstanceCount": 4, "newServiceInstanceUnit": "Count", "downsizeOldServiceInstanceCount": 0, "downsizeOldServiceInstanceUnit": "Count"}`)
	if out, f = step(t, a, "EcsServiceSetup", "exec-4", "nginx:1.29", 4, `{}`); f != nil || out["newServiceName"] != "web__3" || count("web__1") != -1 || count("web__2") != 4 {
		t.Fatalf("a setup after an old version went idle: %v %+v, web__1 %d", out, f, count("web__1"))
	}
	if _, f = step(t, a, "EcsUpgradeContainer", "exec-5", "nginx:1.29", 4, `{"newServiceInstanceCount": 1, "newServiceInstanceUnit": "Count"}`); f == nil || !strings.Contains(f.Message, "EcsServiceSetup comes first") {
		t.Fatalf("an upgrade without a setup: %+v", f)
	}

	out, f = step(t, a, "EcsScale", "exec-6", "nginx:1.29", 4, `{"service": "web__2", "instances": 50, "instanceUnit": "Percentage"}`)
	if f != nil || out["desiredCount"] != int32(2) || count("web__2") != 2 {
		t.Fatalf("scale: %v %+v", out, f)
	}
	if _, f = step(t, a, "EcsScale", "exec-6", "nginx:1.29", 4, `{"service": "nope", "instances": 1, "instanceUnit": "Count"}`); f == nil || !strings.Contains(f.Message, "does not exist") {
		t.Fatalf("scale of a missing service: %+v", f)
	}
}

// Traffic shifts: a blue-green deployment with isTrafficShift starts green behind its own target
// group and Inherit shifts weigh the prod rule between green and blue; its rollback points the
// rule back at blue. A Standalone shift weighs any rule, and StandAloneTrafficShiftRollback
// restores what the rule forwarded to before the execution's first shift.
func TestEcsTrafficShift(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", fake.URL)
	const (
		lb       = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/web/1"
		prodL    = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/80"
		prodRule = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/web/1/80/1"
		tgA      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-a/1"
		tgB      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-b/2"
		otherR   = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/api/2/80/7"
		tgC      = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/api-c/3"
	)
	fake.AddListener(prodL, prodRule, tgA)
	a := &ecs.Activity{Secrets: awsfake.Secrets{"k": "secret"}, Logs: logs.Store{Dir: t.TempDir()}}
	if _, f := step(t, a, "EcsRollingDeploy", "exec-1", "nginx:1", 2, `{}`); f != nil {
		t.Fatal(f)
	}
	create := `{"loadBalancer": "` + lb + `", "prodListener": "` + prodL + `", "prodListenerRuleArn": "` + prodRule + `", "isTrafficShift": true, "stageTargetGroupArn": "` + tgB + `"}`
	if out, f := step(t, a, "EcsBlueGreenCreateService", "exec-2", "nginx:2", 2, create); f != nil || out["stageTargetGroupArn"] != tgB {
		t.Fatalf("create green for traffic shifting: %v %+v", out, f)
	}
	shift := func(exec string, pct int) *contract.Failure {
		_, f := step(t, a, "EcsBlueGreenTrafficShift", exec, "nginx:2", 2, fmt.Sprintf(`{"ecsTrafficShiftWrapper": {"type": "Inherit", "spec": {"weightPercentage": %d}}}`, pct))
		return f
	}
	if f := shift("exec-2", 20); f != nil {
		t.Fatal(f)
	}
	if w := fake.Weights(prodRule); w[tgB] != 20 || w[tgA] != 80 {
		t.Fatalf("after a 20%% shift: %v", w)
	}
	if f := shift("exec-9", 50); f == nil || !strings.Contains(f.Message, "EcsBlueGreenCreateService first") {
		t.Fatalf("a shift of an execution without a green service: %+v", f)
	}
	if out, f := step(t, a, "EcsBlueGreenRollback", "exec-2", "nginx:2", 2, `{}`); f != nil || out["rolledBack"] != true {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	if w := fake.Weights(prodRule); w[tgA] != 100 || len(w) != 1 {
		t.Fatalf("after the rollback: %v, want all on the blue group", w)
	}

	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/api/2/80", otherR, tgC)
	standalone := func(weights string) string {
		return `{"ecsTrafficShiftWrapper": {"type": "Standalone", "spec": {"loadBalancer": "` + lb + `", "listener": "l", "listenerRuleArn": "` + otherR + `", "forwardConfig": ` + weights + `}}}`
	}
	for _, w := range []string{`[{"targetGroupArn": "` + tgC + `", "weight": 90}, {"targetGroupArn": "` + tgB + `", "weight": 10}]`,
		`[{"targetGroupArn": "` + tgC + `", "weight": 50}, {"targetGroupArn": "` + tgB + `", "weight": 50}]`} {
		if _, f := step(t, a, "EcsBlueGreenTrafficShift", "exec-3", "nginx:2", 2, standalone(w)); f != nil {
			t.Fatal(f)
		}
	}
	if w := fake.Weights(otherR); w[tgC] != 50 || w[tgB] != 50 {
		t.Fatalf("after the standalone shifts: %v", w)
	}
	out, f := step(t, a, "StandAloneTrafficShiftRollback", "exec-3", "nginx:2", 2, `{"listenerRuleArns": ["`+otherR+`"]}`)
	if f != nil || out["rolledBack"] != true {
		t.Fatalf("standalone rollback: %v %+v", out, f)
	}
	if w := fake.Weights(otherR); len(w) != 1 || w[tgC] == 0 {
		t.Fatalf("after the standalone rollback: %v, want the rule's single group back", w)
	}
	if out, f := step(t, a, "StandAloneTrafficShiftRollback", "exec-3", "nginx:2", 2, `{"listenerRuleArns": ["`+otherR+`"]}`); f != nil || out["rolledBack"] != false {
		t.Fatalf("a second standalone rollback: %v %+v", out, f)
	}
}
