package e2e

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/status"
)

//go:embed testdata/pipelines/shop_asg.yaml
var asgPipeline string

//go:embed testdata/pipelines/shop_asg_rolling.yaml
var asgRollingPipeline string

var asgEntities = map[string]string{
	"shop.yaml": `service:
  name: Shop
  identifier: shop
  serviceDefinition:
    type: Asg
    spec:
      manifests:
        - manifest: {identifier: template, type: AsgLaunchTemplate, spec: {store: {type: Local, spec: {paths: [lt.json]}}}}
        - manifest: {identifier: cfg, type: AsgConfiguration, spec: {store: {type: Local, spec: {paths: [asg.json]}}}}
      userData:
        store: {type: Local, spec: {paths: [user-data.sh]}}
      artifacts:
        primary:
          primaryArtifactRef: image
          sources:
            - identifier: image
              type: AmazonMachineImage
              spec:
                connectorRef: aws
                region: eu-west-1
                tags: [{name: app, value: shop}]
                version: <+pipeline.variables.ami>
`,
	"lt.json":      `{"LaunchTemplateData": {"InstanceType": "t3.small"}}`,
	"asg.json":     `{"AutoScalingGroupName": "ignored", "MinSize": 1, "MaxSize": 4, "DesiredCapacity": 2, "VPCZoneIdentifier": "subnet-1"}`,
	"user-data.sh": "#!/bin/sh\necho <+service.identifier>\n",
	"asg-infra.yaml": "infrastructureDefinition:\n  name: ASG EU\n  identifier: asg_eu\n  environmentRef: prod\n  deploymentType: Asg\n  type: Asg\n" +
		"  spec: {connectorRef: aws, region: eu-west-1, baseAsgName: shop}\n",
}

// A blue-green ASG stage through the engine, its image an AMI artifact found by name: the
// first run puts shop__1 behind prod, the
// second shop__2 behind stage and swaps (the old group downsized); when a step after the swap
// fails, the stage rollback swaps back and restores both groups. The swap and rollback steps
// use the deploy step's listeners, the group comes from the infrastructure's baseAsgName.
func TestAsgBlueGreenDeployment(t *testing.T) {
	fake, dir := ecsRig(t, logs.Store{Dir: t.TempDir()})
	for _, svc := range []string{"AUTO_SCALING", "EC2"} {
		t.Setenv("AWS_ENDPOINT_URL_"+svc, fake.URL)
	}
	const (
		prodRule  = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/shop/1/prod/1"
		stageRule = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener-rule/app/shop/1/stage/2"
		tgA       = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-a/1"
		tgB       = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/shop-b/2"
	)
	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/1/prod", prodRule, tgA)
	fake.AddListener("arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/shop/1/stage", stageRule, tgB)
	for i, name := range []string{"shop-1", "shop-2", "shop-3"} {
		fake.AddImage(awsfake.Image{ID: fmt.Sprintf("ami-000%d", i+1), Name: name, Created: fmt.Sprintf("2026-0%d-01T00:00:00.000Z", i+1), Tags: map[string]string{"app": "shop"}})
	}
	for name, text := range asgEntities {
		writeFile(t, filepath.Join(dir, name), text)
	}
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), asgPipeline)

	_, res := runDeployment(t, dir, "no", "pipeline.variables.ami=shop-1")
	g, ok := fake.Group("shop__1")
	if !ok || g.Tags["BG_VERSION"] != "BLUE" || len(g.TargetGroups) != 1 || g.TargetGroups[0] != tgA || g.Desired != 6 { // CurrentRunning with nothing running: the reference's 6 of 0..10
		t.Fatalf("first run: %+v %v", g, ok)
	}
	if out := res.Tree.Find("deploy.bg").Outputs; out["asgName"] != "shop__1" || res.Tree.Find("deploy").Artifact != "ami-0001" {
		t.Fatalf("outputs %v, artifact %q", out, res.Tree.Find("deploy").Artifact)
	}
	if data, _ := fake.LaunchTemplateVersion("shop__1", 1); data["ImageId"] != "ami-0001" || data["UserData"] == "" {
		t.Fatalf("launch template %v", data)
	}
	runDeployment(t, dir, "no", "pipeline.variables.ami=shop-2")
	if fake.Forwards(prodRule) != tgB || fake.Forwards(stageRule) != tgA {
		t.Fatalf("second run: prod → %s, stage → %s", fake.Forwards(prodRule), fake.Forwards(stageRule))
	}
	if old, _ := fake.Group("shop__1"); old.Desired != 0 {
		t.Fatalf("the old group was not downsized: %+v", old)
	}
	if _, res = runDeployment(t, dir, "yes", "pipeline.variables.ami=shop-3"); res.Status == status.Succeeded {
		t.Fatal("the failing run succeeded")
	}
	if fake.Forwards(prodRule) != tgB || fake.Forwards(stageRule) != tgA {
		t.Fatalf("after the rollback: prod → %s, stage → %s", fake.Forwards(prodRule), fake.Forwards(stageRule))
	}
	prod, _ := fake.Group("shop__2")
	stage, _ := fake.Group("shop__1")
	if prod.Desired != 6 || prod.Tags["BG_VERSION"] != "BLUE" || stage.Desired != 0 || stage.Version != "1" || stage.Tags["BG_VERSION"] != "GREEN" {
		t.Fatalf("after the rollback: prod %+v, stage %+v", prod, stage)
	}
}
