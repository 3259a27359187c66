package e2e

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/status"
)

//go:embed testdata/pipelines/orders_fn.yaml
var lambdaPipeline string

// lambdaEntities are the service (a function definition and its code, the newest zip, in a
// bucket), environment, infrastructure and Aws connector of lambdaPipeline.
var lambdaEntities = map[string]string{
	"service.yaml": `service:
  name: Orders
  identifier: orders
  serviceDefinition:
    type: AwsLambda
    spec:
      manifests:
        - manifest:
            identifier: fn
            type: AwsLambdaFunctionDefinition
            spec:
              store: {type: S3, spec: {connectorRef: aws, bucketName: builds, paths: [orders/function.json]}}
        - manifest:
            identifier: alias
            type: AwsLambdaFunctionAliasDefinition
            spec:
              store: {type: Local, spec: {paths: [lambda/alias.json]}}
      artifacts:
        primary:
          primaryArtifactRef: zip
          sources:
            - identifier: zip
              type: AmazonS3
              spec: {connectorRef: aws, bucketName: builds, filePathRegex: 'orders/orders-.*\.zip'}
`,
	"function.json": `{"functionName": "orders", "runtime": "python3.12", "handler": "app.handler",
 "role": "arn:aws:iam::123456789012:role/orders", "memorySize": <+pipeline.variables.memory>, "timeout": 10,
 "environment": {"variables": {"ENV": "<+env.identifier>", "CODE": "<+artifact.filePath>"}}}
`,
	"lambda/alias.json": `{"name": "live", "description": "<+env.identifier> traffic"}`,
	"env.yaml":          "environment:\n  name: prod\n  identifier: prod\n  type: Production\n",
	"infra.yaml":        "infrastructureDefinition:\n  name: Lambda EU\n  identifier: lambda_eu\n  environmentRef: prod\n  deploymentType: AwsLambda\n  type: AwsLambda\n  spec: {connectorRef: aws, region: eu-west-1}\n",
	"aws.yaml":          "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: " + s3test.AccessKey + ", secretKeyRef: aws_key}\n      region: " + s3test.Region + "\n    executeOnDelegate: true\n",
}

// An AwsLambda Deployment stage creates the function from its definition (kept in an S3 store)
// and the newest zip in S3 (a real S3-compatible server; Lambda is the protocol fake), updates it on the next run
// and publishes a version each time; when a later step fails, the stage rollback restores the
// previous version's code and configuration.
func TestAwsLambdaDeployment(t *testing.T) {
	srv, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	if err := srv.Bucket(ctx, "builds"); err != nil {
		t.Fatal(err)
	}
	fake := awsfake.Start()
	defer fake.Close()
	fake.S3Get = func(bucket, key string) ([]byte, error) {
		out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", fake.URL)
	endAwsInstanceSyncs(t)
	t.Setenv(secrets.EnvName("aws_key"), s3test.SecretKey)
	dir := t.TempDir()
	for name, text := range lambdaEntities {
		if name == "function.json" { // the definition is kept in the bucket beside the builds
			if err := srv.Put(ctx, "builds", "orders/function.json", []byte(text)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		writeFile(t, filepath.Join(dir, name), text)
	}
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), lambdaPipeline)
	deploy := func(zip, memory, fail string) *status.Status {
		t.Helper()
		if zip != "" {
			if err := srv.Put(ctx, "builds", zip, []byte("code of "+zip)); err != nil {
				t.Fatal(err)
			}
		}
		_, res := runDeployment(t, dir, fail, "pipeline.variables.memory="+memory)
		return &res.Status
	}
	deploy("orders/orders-1.zip", "128", "no")
	fn, ok := fake.Function("orders")
	if !ok || string(fn.Code) != "code of orders/orders-1.zip" || fmt.Sprint(fn.Config["MemorySize"]) != "128" || len(fn.Versions) != 1 {
		t.Fatalf("after the first run: %v %s %v", ok, fn.Code, fn.Config)
	}
	if env := fmt.Sprint(fn.Config["Environment"]); !strings.Contains(env, "ENV:prod") || !strings.Contains(env, "CODE:orders/orders-1.zip") {
		t.Fatalf("the definition's expressions: %s", env)
	}
	deploy("", "256", "no") // the same zip, more memory
	fn, _ = fake.Function("orders")
	if fmt.Sprint(fn.Config["MemorySize"]) != "256" || len(fn.Versions) != 2 {
		t.Fatalf("after the second run: %v, versions %v", fn.Config["MemorySize"], fn.Versions)
	}
	if st := deploy("orders/orders-2.zip", "512", "yes"); *st == status.Succeeded {
		t.Fatal("the failing run succeeded")
	}
	fn, _ = fake.Function("orders")
	if string(fn.Code) != "code of orders/orders-1.zip" || fmt.Sprint(fn.Config["MemorySize"]) != "256" {
		t.Fatalf("after the rollback $LATEST runs %s with %v MB, want version 2's code and memory", fn.Code, fn.Config["MemorySize"])
	}
	if fn.Tags["gantry-rollback-version"] != "2" {
		t.Fatalf("rollback record %v", fn.Tags)
	}

	// A canary: the alias stays on the stable version while the new one takes 25%, then all of
	// it; a failing check after the 25% shift puts the alias back on the stable version.
	writeFile(t, filepath.Join(dir, "pipeline.yaml"), lambdaCanaryPipeline)
	deploy("orders/orders-3.zip", "256", "no")
	fn, _ = fake.Function("orders")
	live := fn.Aliases["live"]
	if live.Version != fn.Tags["gantry-canary-version"] || len(live.Weights) != 0 || string(fn.Code) != "code of orders/orders-3.zip" {
		t.Fatalf("after a canary shifted to 100%%: alias %+v, tags %v", live, fn.Tags)
	}
	stable := live.Version
	if st := deploy("orders/orders-4.zip", "256", "yes"); *st == status.Succeeded {
		t.Fatal("the failing canary succeeded")
	}
	fn, _ = fake.Function("orders")
	if live := fn.Aliases["live"]; live.Version != stable || len(live.Weights) != 0 {
		t.Fatalf("after the canary rollback the alias is %+v, want version %s alone", live, stable)
	}
	if fn.Tags["gantry-canary-stable"] != stable || fn.Tags["gantry-canary-version"] == stable {
		t.Fatalf("canary record %v", fn.Tags)
	}
}

// lambdaCanaryPipeline is lambdaPipeline as a canary: the new version behind the alias at
// 25%, a check, then all traffic; the rollback puts the alias back.
const lambdaCanaryPipeline = `pipeline:
  name: Orders function canary
  identifier: orders_fn_canary
  variables:
    - {name: memory, type: String, value: <+input>}
    - {name: fail, type: String, value: <+input>.default("no")}
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        spec:
          deploymentType: AwsLambda
          service: {serviceRef: orders}
          environment:
            environmentRef: prod
            infrastructureDefinitions: [{identifier: lambda_eu}]
          execution:
            steps:
              - step: {type: AwsLambdaCanaryDeploy, name: Canary, identifier: canary, timeout: 2m, spec: {}}
              - step: {type: AwsLambdaTrafficShift, name: Shift 25, identifier: shift25, timeout: 2m, spec: {trafficPercentage: 25}}
              - step:
                  type: ShellScript
                  name: Check
                  identifier: check
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: 'echo "canary <+execution.steps.canary.output.canaryVersion> beside <+execution.steps.canary.output.stableVersion>"; test "$FAIL" != yes'}}
                    environmentVariables: [{name: FAIL, type: String, value: <+pipeline.variables.fail>}]
              - step: {type: AwsLambdaTrafficShift, name: Shift 100, identifier: shift100, timeout: 2m, spec: {trafficPercentage: 100}}
            rollbackSteps:
              - step: {type: AwsLambdaCanaryRollback, name: Rollback, identifier: rollback_canary, timeout: 2m, spec: {}}
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: StageRollback}}
`
