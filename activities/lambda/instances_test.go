package lambda_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// A Lambda target's instances are the versions serving traffic: without an alias the newest
// published one; through an alias its version and additional versions with their shares.
// Code changed outside Gantry and an alias moved to a version Gantry did not publish are drift;
// a deleted function is gone.
func TestInstances(t *testing.T) {
	r := startRig(t)
	fake := r.fake
	for i, exec := range []string{"exec-1", "exec-2"} {
		if _, f := r.step("AwsLambdaDeploy", exec, "orders", 128, exec+".zip"); f != nil {
			t.Fatalf("deploy %d: %+v", i+1, f)
		}
	}
	target := contract.InstanceTarget{DeploymentType: "AwsLambda", Region: "eu-west-1", Function: "orders",
		Aws: &plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDREAD", SecretKeyRef: "aws_secret"}}
	ctx := context.Background()
	read := func(what string) contract.InstanceRead {
		t.Helper()
		got, err := r.a.Instances(ctx, target)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return got
	}
	if got := read("after two deploys"); got.Count != 1 || got.Instances[0].Name != "orders:2" || got.Instances[0].Node != "100% of the traffic" || !got.Instances[0].Ready || len(got.Drift) != 0 {
		t.Fatalf("after two deploys: %+v", got)
	}

	c := awslambda.NewFromConfig(aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(fake.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDHAND", "hand", "")})
	if _, err := c.UpdateFunctionCode(ctx, &awslambda.UpdateFunctionCodeInput{FunctionName: aws.String("orders"), ZipFile: []byte("edited in the console")}); err != nil {
		t.Fatal(err)
	}
	if got := read("code edited by hand"); len(got.Drift) != 1 || !strings.Contains(got.Drift[0], "the code of function orders changed outside Gantry: $LATEST differs from version 2") {
		t.Errorf("code edited by hand: drift %q", got.Drift)
	}

	if _, err := c.CreateAlias(ctx, &awslambda.CreateAliasInput{FunctionName: aws.String("orders"), Name: aws.String("live"), FunctionVersion: aws.String("2"),
		RoutingConfig: &types.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"1": 0.25}}}); err != nil {
		t.Fatal(err)
	}
	target.Alias = "live"
	got := read("through the alias")
	if got.Count != 2 || got.Instances[0].Name != "orders:1" || got.Instances[0].Node != "25% of the traffic" || got.Instances[1].Node != "75% of the traffic" {
		t.Errorf("through the alias: %+v", got)
	}

	if _, err := c.PublishVersion(ctx, &awslambda.PublishVersionInput{FunctionName: aws.String("orders"), Description: aws.String("hotfix")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateAlias(ctx, &awslambda.UpdateAliasInput{FunctionName: aws.String("orders"), Name: aws.String("live"), FunctionVersion: aws.String("3"),
		RoutingConfig: &types.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{}}}); err != nil {
		t.Fatal(err)
	}
	if got := read("the alias moved by hand"); got.Count != 1 || got.Artifacts[0].Artifact != "version 3" || len(got.Drift) != 1 || !strings.Contains(got.Drift[0], "serves version 3, which Gantry did not publish") {
		t.Errorf("the alias moved by hand: %+v", got)
	}

	if _, err := c.DeleteFunction(ctx, &awslambda.DeleteFunctionInput{FunctionName: aws.String("orders")}); err != nil {
		t.Fatal(err)
	}
	if got := read("deleted"); got.Gone != "function orders no longer exists" {
		t.Errorf("deleted: %+v", got)
	}
}
