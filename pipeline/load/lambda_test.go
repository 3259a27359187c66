package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

var lambdaFiles = map[string]string{
	"pipeline.yaml": `pipeline:
  name: fn
  identifier: fn
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: AwsLambda
          service: {serviceRef: orders}
          environment: {environmentRef: prod, infrastructureDefinitions: [{identifier: lambda_eu}]}
          execution:
            steps:
              - step: {type: AwsLambdaDeploy, name: Deploy, identifier: deploy_fn, timeout: 10m, spec: {}}
            rollbackSteps:
              - step: {type: AwsLambdaRollback, name: Rollback, identifier: rollback_fn, timeout: 10m, spec: {}}
`,
	"service.yaml": `service:
  name: Orders
  identifier: orders
  serviceDefinition:
    type: AwsLambda
    spec:
      manifests:
        - manifest: {identifier: fn, type: AwsLambdaFunctionDefinition, spec: {store: {type: Local, spec: {paths: [function.json]}}}}
      artifacts:
        primary:
          primaryArtifactRef: zip
          sources:
            - {identifier: zip, type: AmazonS3, spec: {connectorRef: aws, bucketName: builds, filePath: orders.zip}}
`,
	"function.json": `{"functionName": "orders", "runtime": "python3.12", "handler": "app.handler", "role": "arn:aws:iam::1:role/r"}`,
	"env.yaml":      "environment:\n  name: prod\n  identifier: prod\n  type: Production\n",
	"infra.yaml":    "infrastructureDefinition:\n  name: l\n  identifier: lambda_eu\n  environmentRef: prod\n  deploymentType: AwsLambda\n  type: AwsLambda\n  spec: {connectorRef: aws, region: eu-west-1}\n",
	"aws.yaml":      "connector:\n  name: aws\n  identifier: aws\n  type: Aws\n  spec:\n    credential: {type: InheritFromDelegate}\n",
}

// An AwsLambda stage resolves to an infrastructure with its Aws connector and region; steps of
// the wrong deployment type, a service without its function definition and an infrastructure
// with another kind of connector are errors.
func TestAwsLambdaStage(t *testing.T) {
	write := func(edits map[string][2]string) string {
		dir := t.TempDir()
		for name, text := range lambdaFiles {
			if e, ok := edits[name]; ok {
				if !strings.Contains(text, e[0]) {
					t.Fatalf("%s lacks %q", name, e[0])
				}
				text = strings.Replace(text, e[0], e[1], 1)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "pipeline.yaml")
	}
	r, err := load.File(write(nil), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
	}
	d := r.Plan.Stages[0].Deploy
	if d == nil || d.Infra.Aws == nil || d.Infra.Region != "eu-west-1" || d.Service.Artifact.S3 == nil || d.Service.Artifact.S3.FilePath != "orders.zip" {
		t.Fatalf("deployment %+v", d)
	}
	for name, c := range map[string]struct {
		edits map[string][2]string
		want  string
	}{
		"K8s step": {map[string][2]string{"pipeline.yaml": {"type: AwsLambdaDeploy", "type: K8sRollingDeploy"}},
			"K8sRollingDeploy steps do not run in stage deploy, which deploys AwsLambda services"},
		"no definition": {map[string][2]string{"service.yaml": {"type: AwsLambdaFunctionDefinition", "type: K8sManifest"}},
			"AwsLambda service orders has no AwsLambdaFunctionDefinition manifest"},
		"cluster connector": {map[string][2]string{"aws.yaml": {"type: Aws\n  spec:\n    credential: {type: InheritFromDelegate}", "type: K8sCluster\n  spec:\n    credential: {type: InheritFromDelegate}"}},
			"connector aws is a K8sCluster connector; an AwsLambda infrastructure needs an Aws connector"},
		"no file path": {map[string][2]string{"service.yaml": {"filePath: orders.zip", "region: eu-west-1"}},
			"an AmazonS3 artifact source needs `filePath` or `filePathRegex`"},
	} {
		r, err := load.File(write(c.edits), load.Options{ForRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if text := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(text, c.want) {
			t.Errorf("%s: want %q\n%s", name, c.want, text)
		}
	}
}
