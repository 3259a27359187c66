package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/lambda"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

const definition = `{"functionName": "%s", "runtime": "python3.12", "handler": "app.handler",
  "role": "arn:aws:iam::123456789012:role/lambda", "memorySize": %d, "timeout": 10,
  "environment": {"variables": {"STAGE": "%s"}}}`

type rig struct {
	t    *testing.T
	a    *lambda.Activity
	fake *awsfake.Server
	logs logs.Store
}

// startRig starts the AWS fake, Lambda's endpoint pointed at it (S3 objects read as "zip of
// BUCKET/KEY"), and the activity with the connector's secret key.
func startRig(t *testing.T) *rig {
	fake := awsfake.Start()
	t.Cleanup(fake.Close)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", fake.URL)
	fake.S3Get = func(bucket, key string) ([]byte, error) { return []byte("zip of " + bucket + "/" + key), nil }
	r := &rig{t: t, fake: fake, logs: logs.Store{Dir: t.TempDir()}}
	r.a = &lambda.Activity{Secrets: awsfake.Secrets{"aws_secret": "deploy-secret"}, Logs: r.logs}
	return r
}

func (r *rig) step(typ, exec, fn string, memory int, key string) (map[string]any, *contract.Failure) {
	r.t.Helper()
	in := contract.StepInput{ExecutionID: exec, StepPath: "deploy." + typ, Type: typ, Spec: json.RawMessage(`{}`), Timeout: time.Minute,
		Deploy: &contract.DeployInput{Aws: &plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDDEPLOY", SecretKeyRef: "aws_secret"},
			Region: "eu-west-1", Artifact: &contract.DeployArtifact{Type: "AmazonS3", Bucket: "builds", Key: key},
			Manifests: []plan.Manifest{{ID: "fn", Type: "AwsLambdaFunctionDefinition", Files: []plan.File{{Path: "fn.json", Text: fmt.Sprintf(definition, fn, memory, exec)}}}}}}
	res, err := r.a.Run(context.Background(), in)
	if err != nil {
		return nil, contract.Classify(err)
	}
	return res.Outputs, nil
}

// Deploys create, update and publish; a rollback restores the code and configuration of the
// version the execution's deploy recorded, deletes a function it created, and does nothing
// for an execution that changed nothing; a retried deploy keeps its first rollback record;
// a failing update is a Verification failure with Lambda's reason.
func TestDeployAndRollback(t *testing.T) {
	r := startRig(t)
	fake := r.fake

	out, f := r.step("AwsLambdaDeploy", "exec-1", "orders", 128, "orders-1.zip")
	if f != nil || out["version"] != "1" || out["previousVersion"] != "none" {
		t.Fatalf("create: %v %+v", out, f)
	}
	out, f = r.step("AwsLambdaDeploy", "exec-2", "orders", 256, "orders-2.zip")
	if f != nil || out["version"] != "2" || out["previousVersion"] != "1" || out["memorySize"] != int32(256) {
		t.Fatalf("update: %v %+v", out, f)
	}
	v2, _ := fake.Function("orders")
	out, f = r.step("AwsLambdaDeploy", "exec-3", "orders", 512, "orders-3.zip")
	if f != nil || out["version"] != "3" || out["previousVersion"] != "2" {
		t.Fatalf("third deploy: %v %+v", out, f)
	}
	// A retry of the same execution's deploy keeps version 2 as the one to go back to.
	out, f = r.step("AwsLambdaDeploy", "exec-3", "orders", 512, "orders-3.zip")
	if f != nil || out["previousVersion"] != "2" {
		t.Fatalf("retried deploy: %v %+v", out, f)
	}
	out, f = r.step("AwsLambdaRollback", "exec-3", "orders", 512, "orders-3.zip")
	if f != nil || out["rolledBackTo"] != "2" {
		t.Fatalf("rollback: %v %+v", out, f)
	}
	now, _ := fake.Function("orders")
	if string(now.Code) != "zip of builds/orders-2.zip" || now.Config["MemorySize"] != float64(256) || now.Config["CodeSha256"] != v2.Config["CodeSha256"] {
		t.Fatalf("after the rollback $LATEST is %s, %v MB, env %v", now.Code, now.Config["MemorySize"], now.Config["Environment"])
	}
	if env := fmt.Sprint(now.Config["Environment"]); !strings.Contains(env, "exec-2") {
		t.Fatalf("the rollback did not restore version 2's environment: %s", env)
	}
	if out, f = r.step("AwsLambdaRollback", "exec-9", "orders", 0, ""); f != nil || out["rolledBack"] != false {
		t.Fatalf("rollback of an execution that changed nothing: %v %+v", out, f)
	}

	if _, f = r.step("AwsLambdaDeploy", "exec-4", "payments", 128, "payments-1.zip"); f != nil {
		t.Fatal(f)
	}
	if out, f = r.step("AwsLambdaRollback", "exec-4", "payments", 128, "payments-1.zip"); f != nil || out["deleted"] != true {
		t.Fatalf("rollback of a created function: %v %+v", out, f)
	}
	if _, ok := fake.Function("payments"); ok {
		t.Fatal("the function the execution created is still there")
	}

	fake.FailNextUpdate("orders", "the image manifest is not valid")
	_, f = r.step("AwsLambdaDeploy", "exec-5", "orders", 128, "orders-5.zip")
	if f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "the image manifest is not valid") {
		t.Fatalf("a failing update: %+v", f)
	}
	_, f = r.step("AwsLambdaDeploy", "exec-6", "orders", 128, "")
	if f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "no artifact") {
		t.Fatalf("no artifact: %+v", f)
	}
	for _, c := range fake.Calls() {
		if c.Service == "lambda" && c.AccessKeyID != "AKIDDEPLOY" {
			t.Fatalf("%s signed by %s", c.Action, c.AccessKeyID)
		}
	}
}

// canaryStep runs a canary step with the alias definition `live`.
func (r *rig) canaryStep(typ, exec, spec, key string) (map[string]any, *contract.Failure) {
	r.t.Helper()
	in := contract.StepInput{ExecutionID: exec, StepPath: "deploy." + typ, Type: typ, Spec: json.RawMessage(spec), Timeout: time.Minute,
		Deploy: &contract.DeployInput{Aws: &plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDDEPLOY", SecretKeyRef: "aws_secret"},
			Region: "eu-west-1", Artifact: &contract.DeployArtifact{Type: "AmazonS3", Bucket: "builds", Key: key},
			Manifests: []plan.Manifest{{ID: "fn", Type: "AwsLambdaFunctionDefinition", Files: []plan.File{{Path: "fn.json", Text: fmt.Sprintf(definition, "checkout", 128, exec)}}},
				{ID: "alias", Type: "AwsLambdaFunctionAliasDefinition", Files: []plan.File{{Path: "alias.yaml", Text: "name: live\ndescription: production traffic\n"}}}}}}
	res, err := r.a.Run(context.Background(), in)
	if err != nil {
		return nil, contract.Classify(err)
	}
	return res.Outputs, nil
}

// A canary publishes the new version behind the alias at weight 0, traffic shifts give it its
// share and then all of it; a canary rollback puts the alias back on the stable version; a
// first canary creates the alias on its version; a shift without a canary of this execution
// fails.
func TestCanaryTrafficShiftAndRollback(t *testing.T) {
	r := startRig(t)
	fake := r.fake
	alias := func() awsfake.Alias {
		fn, _ := fake.Function("checkout")
		return fn.Aliases["live"]
	}

	out, f := r.canaryStep("AwsLambdaCanaryDeploy", "exec-1", `{}`, "c-1.zip")
	if f != nil || out["canaryVersion"] != "1" || out["stableVersion"] != "none" || alias().Version != "1" {
		t.Fatalf("first canary: %v %+v, alias %+v", out, f, alias())
	}
	if _, f := r.canaryStep("AwsLambdaTrafficShift", "exec-1", `{"trafficPercentage": 100}`, ""); f != nil || alias().Version != "1" {
		t.Fatalf("first shift: %+v %+v", f, alias())
	}

	out, f = r.canaryStep("AwsLambdaCanaryDeploy", "exec-2", `{}`, "c-2.zip")
	if f != nil || out["canaryVersion"] != "2" || out["stableVersion"] != "1" {
		t.Fatalf("second canary: %v %+v", out, f)
	}
	if a := alias(); a.Version != "1" || a.Weights["2"] != 0 {
		t.Fatalf("after the canary deploy the alias is %+v, want version 1 with 2 at weight 0", a)
	}
	if _, f := r.canaryStep("AwsLambdaTrafficShift", "exec-2", `{"trafficPercentage": 12.5}`, ""); f != nil {
		t.Fatal(f)
	}
	if a := alias(); a.Version != "1" || a.Weights["2"] != 0.125 {
		t.Fatalf("after a 12.5%% shift the alias is %+v", a)
	}
	out, f = r.canaryStep("AwsLambdaCanaryRollback", "exec-2", `{}`, "")
	if f != nil || out["rolledBack"] != true {
		t.Fatalf("canary rollback: %v %+v", out, f)
	}
	if a := alias(); a.Version != "1" || len(a.Weights) != 0 {
		t.Fatalf("after the rollback the alias is %+v, want version 1 alone", a)
	}

	if _, f := r.canaryStep("AwsLambdaTrafficShift", "exec-3", `{"trafficPercentage": 50}`, ""); f == nil || !strings.Contains(f.Message, "AwsLambdaCanaryDeploy comes first") {
		t.Fatalf("a shift with no canary of this execution: %+v", f)
	}
	if _, f := r.canaryStep("AwsLambdaCanaryDeploy", "exec-3", `{}`, "c-3.zip"); f != nil {
		t.Fatal(f)
	}
	if _, f := r.canaryStep("AwsLambdaTrafficShift", "exec-3", `{"trafficPercentage": 100}`, ""); f != nil || alias().Version != "3" || len(alias().Weights) != 0 {
		t.Fatalf("a full shift: %+v, alias %+v", f, alias())
	}
	if _, f := r.canaryStep("AwsLambdaTrafficShift", "exec-3", `{"trafficPercentage": 0}`, ""); f == nil || f.Category != contract.Verification {
		t.Fatalf("a shift of 0%%: %+v", f)
	}
	if out, f := r.canaryStep("AwsLambdaCanaryRollback", "exec-9", `{}`, ""); f != nil || out["rolledBack"] != false {
		t.Fatalf("a rollback of an execution without a canary: %v %+v", out, f)
	}
}
