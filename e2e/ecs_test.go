package e2e

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
)

//go:embed testdata/pipelines/web_ecs.yaml
var ecsPipeline string

var ecsEntities = map[string]string{
	"service.yaml": `service:
  name: Web
  identifier: web
  serviceDefinition:
    type: ECS
    spec:
      manifests:
        - manifest: {identifier: task, type: EcsTaskDefinition, spec: {store: {type: Local, spec: {paths: [task.yaml]}}}}
        - manifest: {identifier: svc, type: EcsServiceDefinition, spec: {store: {type: Local, spec: {paths: [service.json]}}}}
        - manifest: {identifier: target, type: EcsScalableTargetDefinition, spec: {store: {type: Local, spec: {paths: [target.yaml]}}}}
      artifacts:
        primary:
          primaryArtifactRef: nginx
          sources:
            - {identifier: nginx, type: DockerRegistry, spec: {imagePath: library/nginx, tag: <+pipeline.variables.tag>}}
`,
	"task.yaml": "family: web\nnetworkMode: awsvpc\nrequiresCompatibilities: [FARGATE]\ncpu: \"256\"\nmemory: \"512\"\ncontainerDefinitions:\n  - {name: web, image: <+artifact.image>, essential: true}\n",
	"service.json": `{"serviceName": "<+service.identifier>-<+env.identifier>", "launchType": "FARGATE", "desiredCount": 2,
 "networkConfiguration": {"awsvpcConfiguration": {"subnets": ["subnet-1"], "securityGroups": ["sg-1"]}}}
`,
	"target.yaml":       "minCapacity: 2\nmaxCapacity: 6\n",
	"migrate-task.yaml": "family: web-migrate\ncontainerDefinitions:\n  - {name: migrate, image: <+artifact.image>, essential: true}\n",
	"migrate-run.yaml":  "launchType: FARGATE\n",
	"env.yaml":          "environment:\n  name: prod\n  identifier: prod\n  type: Production\n",
	"infra.yaml":        "infrastructureDefinition:\n  name: ECS EU\n  identifier: ecs_eu\n  environmentRef: prod\n  deploymentType: ECS\n  type: ECS\n  spec: {connectorRef: aws, region: eu-west-1, cluster: prod-cluster}\n",
	"aws.yaml":          "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: AKIDECS, secretKeyRef: aws_key}\n    delegateSelectors: [aws-eu]\n",
}

// ecsRig starts workers with the connector's delegate tag (aws-eu, logging to store) and the
// AWS fake, points ECS, Application Auto Scaling and ELB at it, and writes ecsEntities to a
// folder it returns.
func ecsRig(t *testing.T, store logs.Store) (*awsfake.Server, string) {
	t.Helper()
	ws, err := worker.Delegates(env.client, worker.Options{Logs: store, Secrets: &secrets.Store{}, Tags: []string{"aws-eu"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	fake := awsfake.Start()
	t.Cleanup(fake.Close)
	endAwsInstanceSyncs(t)
	for _, svc := range []string{"ECS", "APPLICATION_AUTO_SCALING", "ELASTIC_LOAD_BALANCING_V2"} {
		t.Setenv("AWS_ENDPOINT_URL_"+svc, fake.URL)
	}
	t.Setenv(secrets.EnvName("aws_key"), "ecs-secret")
	dir := t.TempDir()
	for name, text := range ecsEntities {
		writeFile(t, filepath.Join(dir, name), text)
	}
	return fake, dir
}

// An ECS Deployment stage runs a one-off task, rolls the service out (creating it first, then
// updating it) and waits for its steady state; when a later step fails, the stage rollback
// puts the previous task definition and desired count back. The ECS steps run on a worker
// with the tags of the connector's delegate selectors.
func TestEcsDeployment(t *testing.T) {
	tagged := logs.Store{Dir: t.TempDir()}
	fake, dir := ecsRig(t, tagged)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), ecsPipeline)
	deploy := func(tag, fail string) status.Status {
		t.Helper()
		exec, res := runDeployment(t, dir, fail, "pipeline.variables.tag="+tag)
		if fail == "no" {
			if got := res.Tree.Find("deploy.rolling").Outputs["serviceName"]; got != "web-prod" {
				t.Fatalf("outputs %v", res.Tree.Find("deploy.rolling").Outputs)
			}
			for _, step := range []string{"deploy.rolling", "deploy.migrate"} {
				if ok, _ := tagged.Exists(context.Background(), exec.ID, step); !ok {
					t.Fatalf("step %s did not run on the worker tagged aws-eu", step)
				}
			}
		}
		return res.Status
	}
	deploy("1.26", "no")
	deploy("1.27", "no")
	sv, ok := fake.Service("web-prod")
	if !ok || !strings.HasSuffix(sv.TaskDefinition, "web:2") || sv.DesiredCount != 2 {
		t.Fatalf("after two runs: %+v %v", sv, ok)
	}
	if mn, mx, ok := fake.ScalableTarget("service/prod-cluster/web-prod"); !ok || mn != 2 || mx != 6 {
		t.Fatalf("scalable target %d..%d", mn, mx)
	}
	if st := deploy("1.28", "yes"); st == status.Succeeded {
		t.Fatal("the failing run succeeded")
	}
	sv, _ = fake.Service("web-prod")
	if !strings.HasSuffix(sv.TaskDefinition, "web:2") || sv.Tags["gantry-rollback-task-definition"] == "" {
		t.Fatalf("after the rollback the service runs %s (tags %v), want web:2", sv.TaskDefinition, sv.Tags)
	}
	ran := 0
	for _, c := range fake.Calls() {
		if c.Action == "RunTask" {
			ran++
			if !strings.Contains(c.Params["taskDefinition"], "web-migrate") || c.Params["cluster"] != "prod-cluster" {
				t.Fatalf("RunTask %v", c.Params)
			}
		}
	}
	if ran != 3 {
		t.Fatalf("%d RunTask calls, want one per run", ran)
	}
}

// A blue-green ECS stage: the green service starts behind the stage listener, the swap sends
// prod traffic to it; when a later step fails, the stage rollback points the listeners back,
// restores the old service and deletes the green one.
func TestEcsBlueGreenDeployment(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_ECS", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_APPLICATION_AUTO_SCALING", fake.URL)
	t.Setenv("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", fake.URL)
	t.Setenv(secrets.EnvName("aws_key"), "ecs-secret")
	const (
		prodRule = "arn:aws:elasticloadbalancing:eu-west-1:1:listener-rule/app/web/1/80/1"
		prodL    = "arn:aws:elasticloadbalancing:eu-west-1:1:listener/app/web/1/80"
		stageL   = "arn:aws:elasticloadbalancing:eu-west-1:1:listener/app/web/1/8080"
		tgA      = "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web-a/1"
		tgB      = "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/web-b/2"
	)
	fake.AddListener(prodL, prodRule, tgA)
	fake.AddListener(stageL, "", tgB)
	dir := t.TempDir()
	for name, text := range ecsEntities {
		if name == "service.json" {
			text = strings.Replace(text, `"desiredCount": 2,`, `"desiredCount": 2, "loadBalancers": [{"targetGroupArn": "`+tgA+`", "containerName": "web", "containerPort": 80}],`, 1)
		}
		if name == "aws.yaml" {
			text = strings.Replace(text, "    delegateSelectors: [aws-eu]\n", "", 1)
		}
		writeFile(t, filepath.Join(dir, name), text)
	}
	bg := strings.Replace(ecsPipeline, `              - step: {type: EcsRollingDeploy, name: Deploy, identifier: rolling, timeout: 2m, spec: {}}`,
		`              - step:
                  type: EcsBlueGreenCreateService
                  name: Green
                  identifier: green
                  timeout: 2m
                  spec: {loadBalancer: "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/web/1", prodListener: "`+prodL+`", prodListenerRuleArn: "`+prodRule+`", stageListener: "`+stageL+`", sameAsAlreadyRunningInstances: true}
              - step: {type: EcsBlueGreenSwapTargetGroups, name: Swap, identifier: swap, timeout: 2m, spec: {doNotDownsizeOldService: false}}`, 1)
	bg = strings.Replace(bg, "type: EcsRollingRollback", "type: EcsBlueGreenRollback", 1)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), bg)
	run := func(tag, fail string) status.Status {
		t.Helper()
		_, res := runDeployment(t, dir, fail, "pipeline.variables.tag="+tag)
		return res.Status
	}
	run("1.26", "no")
	if fake.Forwards(prodRule) != tgB {
		t.Fatalf("after the first release prod forwards to %s", fake.Forwards(prodRule))
	}
	if st := run("1.27", "yes"); st == status.Succeeded {
		t.Fatal("the failing release succeeded")
	}
	if fake.Forwards(prodRule) != tgB || fake.Forwards(stageL) != tgA {
		t.Fatalf("after the rollback prod forwards to %s, stage to %s", fake.Forwards(prodRule), fake.Forwards(stageL))
	}
	blue, ok := fake.Service("web-prod__1")
	if !ok || blue.DesiredCount != 2 || blue.Tags["gantry-bg-role"] != "blue" {
		t.Fatalf("the first release's service after the rollback: %+v %v", blue, ok)
	}
	if _, ok := fake.Service("web-prod__2"); ok {
		t.Fatal("the failed release's green service is still there")
	}
}

// ecsBasicPipeline is web_ecs.yaml with the basic strategy: the new version set up beside the
// old, upgraded to half (the old downsized to half), checked, then to full size with the old at
// zero; the rollback deletes the new version and restores the old.
const ecsBasicPipeline = `pipeline:
  name: Web on ECS - basic
  identifier: web_ecs_basic
  variables:
    - {name: tag, type: String, value: <+input>}
    - {name: fail, type: String, value: <+input>.default("no")}
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        spec:
          deploymentType: ECS
          service: {serviceRef: web}
          environment:
            environmentRef: prod
            infrastructureDefinitions: [{identifier: ecs_eu}]
          execution:
            steps:
              - step: {type: EcsServiceSetup, name: Setup, identifier: setup, timeout: 2m, spec: {resizeStrategy: ResizeNewFirst, sameAsAlreadyRunningInstances: false}}
              - step:
                  type: EcsUpgradeContainer
                  name: Half
                  identifier: half
                  timeout: 2m
                  spec: {newServiceInstanceCount: 50, newServiceInstanceUnit: Percentage, downsizeOldServiceInstanceCount: 50, downsizeOldServiceInstanceUnit: Percentage}
              - step:
                  type: ShellScript
                  name: Check
                  identifier: check
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: 'echo "<+execution.steps.setup.output.newServiceName> replaces <+execution.steps.setup.output.oldServiceName>"; test "$FAIL" != yes'}}
                    environmentVariables: [{name: FAIL, type: String, value: <+pipeline.variables.fail>}]
              - step:
                  type: EcsUpgradeContainer
                  name: Full
                  identifier: full
                  timeout: 2m
                  spec: {newServiceInstanceCount: 100, newServiceInstanceUnit: Percentage, downsizeOldServiceInstanceCount: 0, downsizeOldServiceInstanceUnit: Count}
            rollbackSteps:
              - step: {type: EcsBasicRollback, name: Rollback, identifier: rollback, timeout: 2m, spec: {}}
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: StageRollback}}
`

// The basic strategy through the engine: two releases leave web-prod__2 at full size and
// web-prod__1 at zero; a failing third one is rolled back, deleting web-prod__3 and giving
// web-prod__2 its tasks back.
func TestEcsBasicDeployment(t *testing.T) {
	fake, dir := ecsRig(t, logs.Store{Dir: t.TempDir()})
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), ecsBasicPipeline)
	count := func(name string) int {
		if s, ok := fake.Service(name); ok {
			return s.DesiredCount
		}
		return -1
	}
	runDeployment(t, dir, "no", "pipeline.variables.tag=1.26")
	_, res := runDeployment(t, dir, "no", "pipeline.variables.tag=1.27")
	if out := res.Tree.Find("deploy.setup").Outputs; out["newServiceName"] != "web-prod__2" || out["oldServiceName"] != "web-prod__1" {
		t.Fatalf("setup outputs %v", out)
	}
	if count("web-prod__2") != 2 || count("web-prod__1") != 0 {
		t.Fatalf("after two releases: __2 runs %d, __1 %d", count("web-prod__2"), count("web-prod__1"))
	}
	if _, res = runDeployment(t, dir, "yes", "pipeline.variables.tag=1.28"); res.Status == status.Succeeded {
		t.Fatal("the failing run succeeded")
	}
	if count("web-prod__3") != -1 || count("web-prod__2") != 2 {
		t.Fatalf("after the rollback: __3 %d, __2 %d", count("web-prod__3"), count("web-prod__2"))
	}
}

// A Standalone EcsBlueGreenTrafficShift through the engine weighs a listener rule; when a
// later step of the next run (shifting to 50/50) fails, StandAloneTrafficShiftRollback (told
// by the compiler which rules the stage shifts) restores what the rule forwarded to, 90/10.
func TestEcsStandaloneTrafficShift(t *testing.T) {
	fake, dir := ecsRig(t, logs.Store{Dir: t.TempDir()})
	const (
		rule = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/web/1/80/1"
		tgA  = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-a/1"
		tgB  = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-b/2"
	)
	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/web/1/80", rule, tgA)
	shiftStep := func(id string, a, b int) string {
		return fmt.Sprintf(`              - step:
                  type: EcsBlueGreenTrafficShift
                  name: %s
                  identifier: %s
                  timeout: 1m
                  spec:
                    ecsTrafficShiftWrapper:
                      type: Standalone
                      spec:
                        loadBalancer: web
                        listener: web-80
                        listenerRuleArn: %s
                        forwardConfig: [{targetGroupArn: %s, weight: %d}, {targetGroupArn: %s, weight: %d}]
`, id, id, rule, tgA, a, tgB, b)
	}
	pipe := strings.Replace(strings.Replace(ecsPipeline, "              - step: {type: EcsRollingDeploy, name: Deploy, identifier: rolling, timeout: 2m, spec: {}}\n",
		shiftStep("shift10", 90, 10), 1), "              - step: {type: EcsRollingRollback, name: Rollback, identifier: rollback, timeout: 2m, spec: {}}",
		"              - step: {type: StandAloneTrafficShiftRollback, name: Rollback, identifier: rollback, timeout: 1m, spec: {}}", 1)
	pipe = strings.Replace(pipe, "                    taskDefinition: {type: Local, spec: {paths: [migrate-task.yaml]}}\n                    runTaskRequestDefinition: {type: Local, spec: {paths: [migrate-run.yaml]}}\n", "                    taskDefinition: {type: Local, spec: {paths: [migrate-task.yaml]}}\n                    runTaskRequestDefinition: {type: Local, spec: {paths: [migrate-run.yaml]}}\n                    skipSteadyStateCheck: true\n", 1)
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), pipe)
	runDeployment(t, dir, "no", "pipeline.variables.tag=1.26")
	if w := fake.Weights(rule); w[tgA] != 90 || w[tgB] != 10 {
		t.Fatalf("after the shift: %v", w)
	}
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), strings.Replace(pipe, shiftStep("shift10", 90, 10), shiftStep("shift10", 50, 50), 1))
	if _, res := runDeployment(t, dir, "yes", "pipeline.variables.tag=1.27"); res.Status == status.Succeeded || res.Tree.Find("deploy.rollbackSteps.rollback").Outputs["rolledBack"] != true {
		t.Fatalf("the failing run: %s, rollback %v", res.Status, res.Tree.Find("deploy.rollbackSteps.rollback").Outputs)
	}
	if w := fake.Weights(rule); w[tgA] != 90 || w[tgB] != 10 {
		t.Fatalf("after the rollback: %v, want the weights the run found (90/10)", w)
	}
}
