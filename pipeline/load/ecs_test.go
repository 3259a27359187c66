package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// An ECS stage accepts the reference's step settings (a step's `description` is a warning, not
// an error); an ECS service without its service definition is an error.
func TestEcsStage(t *testing.T) {
	files := map[string]string{
		"pipeline.yaml": "pipeline:\n  name: p\n  identifier: p\n  stages:\n    - stage:\n        name: d\n        identifier: d\n        type: Deployment\n        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]\n        spec:\n          deploymentType: ECS\n          service: {serviceRef: web}\n          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: ecs}]}\n          execution:\n            steps:\n              - step: {type: EcsRollingDeploy, name: r, identifier: r, timeout: 10m, spec: {sameAsAlreadyRunningInstances: false, description: rolls}}\n",
		"service.yaml":  "service:\n  name: web\n  identifier: web\n  serviceDefinition:\n    type: ECS\n    spec:\n      manifests:\n        - manifest: {identifier: t, type: EcsTaskDefinition, spec: {store: {type: Local, spec: {paths: [task.yaml]}}}}\n",
		"task.yaml":     "family: web\ncontainerDefinitions: [{name: web, image: nginx}]\n",
		"env.yaml":      "environment:\n  name: prod\n  identifier: prod\n  type: Production\n",
		"infra.yaml":    "infrastructureDefinition:\n  name: e\n  identifier: ecs\n  environmentRef: prod\n  deploymentType: ECS\n  type: ECS\n  spec: {connectorRef: aws, region: eu-west-1, cluster: c}\n",
		"aws.yaml":      "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential: {type: Irsa}\n",
	}
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load1 := func() string {
		r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() {
			t.Fatal("accepted")
		}
		return r.Diags.Render(r.Sources)
	}
	text := load1()
	if !strings.Contains(text, "ECS service web has no EcsServiceDefinition manifest") || !strings.Contains(text, "warning: EcsRollingDeploy spec: `description` is a field of the reference") ||
		strings.Contains(text, "unknown key") {
		t.Errorf("diagnostics:\n%s", text)
	}
	bg := strings.Replace(files["pipeline.yaml"], "type: EcsRollingDeploy", "type: EcsBlueGreenTrafficShift", 1)
	bg = strings.Replace(bg, "spec: {sameAsAlreadyRunningInstances: false, description: rolls}", "spec: {ecsTrafficShiftWrapper: {type: Inherit, spec: {weightPercentage: 150}}}", 1)
	if err := os.WriteFile(filepath.Join(dir, "pipeline.yaml"), []byte(bg), 0o644); err != nil {
		t.Fatal(err)
	}
	if text := load1(); !strings.Contains(text, "weightPercentage 150 is not a whole number from 0 to 100") || strings.Contains(text, "unsupported") {
		t.Errorf("traffic shift:\n%s", text)
	}
}

// examples/aws's ECS and Lambda pipelines load for a run with no diagnostic but the warnings
// of fields Gantry does not act on.
func TestAwsExamples(t *testing.T) {
	for file, sets := range map[string][]string{"ecs.yaml": {"pipeline.variables.tag=1.27"}, "lambda.yaml": nil, "asg.yaml": nil} {
		r, err := load.File(filepath.Join("..", "..", "examples", "aws", file), load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() || r.Plan == nil || len(r.Diags.Invalid()) > 0 {
			t.Fatalf("%s: %v\n%s", file, err, r.Diags.Render(r.Sources))
		}
		if d := r.Plan.Stages[0].Deploy; d == nil || d.Infra.Aws == nil || d.Infra.Aws.ID != "aws_prod" {
			t.Fatalf("%s: deployment %+v", file, d)
		}
	}
}
