package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// The example ASG pipeline compiles with its swap and rollback steps given the deploy step's
// load balancers and the infrastructure's group; bad ASG step fields are errors at their line,
// an ASG step in an ECS stage names the deployment type it needs, and an Asg service without
// its launch template says so.
func TestAsgStage(t *testing.T) {
	r, err := load.File(filepath.Join("..", "..", "examples", "aws", "asg.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	stage := r.Plan.Stages[0]
	if stage.Deploy == nil || stage.Deploy.Infra.BaseAsgName != "shop" || len(stage.Deploy.Service.Manifests) != 4 ||
		stage.Deploy.Service.Artifact.Ami == nil || stage.Deploy.Service.Artifact.Ami.VersionRegex != "shop-*" || stage.Deploy.Service.Artifact.Ami.Tags[0].Value != "shop" {
		t.Fatalf("deployment %+v", stage.Deploy)
	}
	for _, n := range append(stage.Children, stage.Rollback...) {
		if n.Type != "AsgBlueGreenSwapService" && n.Type != "AsgBlueGreenRollback" {
			continue
		}
		lbs, _ := n.Spec.(map[string]any)["loadBalancers"].([]any)
		if len(lbs) != 1 || !strings.Contains(lbs[0].(map[string]any)["stageListenerRuleArn"].(string), "listener-rule") {
			t.Errorf("%s spec %v: want the deploy's load balancers", n.Type, n.Spec)
		}
	}

	files := map[string]string{
		"service.yaml": "service:\n  name: web\n  identifier: web\n  serviceDefinition:\n    type: Asg\n    spec:\n      manifests:\n        - manifest: {identifier: c, type: AsgConfiguration, spec: {store: {type: Local, spec: {paths: [asg.json]}}}}\n",
		"asg.json":     `{"AutoScalingGroupName": "web", "MinSize": 1, "MaxSize": 2, "DesiredCapacity": 1}`,
		"env.yaml":     "environment:\n  name: prod\n  identifier: prod\n  type: Production\n",
		"infra.yaml":   "infrastructureDefinition:\n  name: a\n  identifier: asg\n  environmentRef: prod\n  deploymentType: Asg\n  type: Asg\n  spec: {connectorRef: aws, region: eu-west-1}\n",
		"aws.yaml":     "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential: {type: Irsa}\n",
	}
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(deploymentType, steps string) string {
		t.Helper()
		src := "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: d\n        identifier: d\n        type: Deployment\n        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]\n        spec:\n          deploymentType: " +
			deploymentType + "\n          service: {serviceRef: web}\n          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: asg}]}\n          execution:\n            steps:\n" + steps
		if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() {
			t.Fatalf("accepted:\n%s", src)
		}
		return r.Diags.Render(r.Sources)
	}
	text := run("Asg", "              - step: {type: AsgShiftTraffic, name: s, identifier: s, timeout: 10m, spec: {weight: 120, downsizeOldAsg: maybe}}\n"+
		"              - step: {type: AsgSetup, name: u, identifier: u, timeout: 10m, spec: {asgName: web, resizeStrategy: resize_new_frst, instances: {type: Fixed, spec: {min: 3, max: 4, desired: 2}}}}\n"+
		"              - step: {type: AsgBlueGreenDeploy, name: b, identifier: b, timeout: 10m, spec: {}}\n")
	for _, want := range []string{
		"weight 120 is not a whole number from 0 to 100",
		`did you mean "resize_new_first"`,
		"desired 2 must be between min 3 and max 4",
		"AsgBlueGreenDeploy needs the prod listener",
		"downsizeOldAsg",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in:\n%s", want, text)
		}
	}
	if text := run("Asg", "              - step: {type: AsgRollingDeploy, name: r, identifier: r, timeout: 10m, spec: {}}\n"); !strings.Contains(text, "Asg service web has no AsgLaunchTemplate manifest") {
		t.Errorf("a service without its launch template:\n%s", text)
	}
	files["service.yaml"] += "      artifacts:\n        primary:\n          primaryArtifactRef: i\n          sources:\n            - {identifier: i, type: AmazonMachineImage, spec: {connectorRef: aws}}\n"
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(files["service.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if text := run("Asg", "              - step: {type: AsgRollingDeploy, name: r, identifier: r, timeout: 10m, spec: {}}\n"); !strings.Contains(text, "needs `version` or `versionRegex`") ||
		!strings.Contains(text, "region") {
		t.Errorf("an AMI source without its version:\n%s", text)
	}
	if text := run("ECS", "              - step: {type: AsgRollingDeploy, name: r, identifier: r, timeout: 10m, spec: {}}\n"); !strings.Contains(text, "Asg") || !strings.Contains(text, "AsgRollingDeploy") {
		t.Errorf("an ASG step in an ECS stage:\n%s", text)
	}
}
