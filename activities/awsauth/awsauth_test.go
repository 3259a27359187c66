package awsauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

type resolver = awsfake.Secrets

// whoAmI signs a GetCallerIdentity with the connector's configuration and returns the access
// key the fake saw.
func whoAmI(t *testing.T, fake *awsfake.Server, c plan.AwsConnector, r secrets.Resolver) (string, error) {
	t.Helper()
	ctx := context.Background()
	var mask secrets.Masker
	cfg, err := awsauth.Config(ctx, c, "", r, &mask)
	if err != nil {
		return "", err
	}
	before := len(fake.Calls())
	if _, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err != nil {
		return "", err
	}
	calls := fake.Calls()[before:]
	last := calls[len(calls)-1]
	if last.Action != "GetCallerIdentity" {
		t.Fatalf("last call %+v", last)
	}
	if v := r.(awsfake.Secrets)[c.SecretKeyRef]; v != "" && mask.Apply("key "+v) != "key "+secrets.Mask {
		t.Fatal("the secret key is not masked")
	}
	return last.AccessKeyID, nil
}

// Keys from the secret resolver, the worker's default chain, and a cross-account role assumed
// with its external ID: each signs with the credentials it should; a refused role and a
// missing secret are Authentication failures that name what failed.
func TestConnectorCredentials(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_STS", fake.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWORKER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-secret")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	fake.AddRole("arn:aws:iam::210987654321:role/deployer", awsfake.Role{ExternalID: "ext-42", AccessKeyID: "ASIAROLE", SecretKey: "role-secret",
		AllowedCallers: []string{"AKIDMANUAL"}})
	keys := resolver{"aws_secret": "manual-secret", "aws_access": "AKIDFROMSECRET"}

	manual := plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDMANUAL", SecretKeyRef: "aws_secret", Region: "eu-west-1"}
	if got, err := whoAmI(t, fake, manual, keys); err != nil || got != "AKIDMANUAL" {
		t.Fatalf("ManualConfig signed with %q: %v", got, err)
	}
	fromSecret := manual
	fromSecret.AccessKey, fromSecret.AccessKeyRef = "", "aws_access"
	if got, err := whoAmI(t, fake, fromSecret, keys); err != nil || got != "AKIDFROMSECRET" {
		t.Fatalf("accessKeyRef signed with %q: %v", got, err)
	}
	for _, typ := range []string{"InheritFromDelegate", "Irsa"} {
		if got, err := whoAmI(t, fake, plan.AwsConnector{ID: "aws", Credential: typ}, keys); err != nil || got != "AKIDWORKER" {
			t.Fatalf("%s signed with %q: %v", typ, got, err)
		}
	}
	cross := manual
	cross.RoleARN, cross.ExternalID = "arn:aws:iam::210987654321:role/deployer", "ext-42"
	if got, err := whoAmI(t, fake, cross, keys); err != nil || got != "ASIAROLE" {
		t.Fatalf("cross-account signed with %q: %v", got, err)
	}
	var assumed *awsfake.Call
	for _, c := range fake.Calls() {
		if c.Action == "AssumeRole" {
			assumed = &c
		}
	}
	if assumed == nil || assumed.AccessKeyID != "AKIDMANUAL" || assumed.Params["ExternalId"] != "ext-42" || assumed.Params["RoleSessionName"] != "gantry-aws" {
		t.Fatalf("AssumeRole call %+v", assumed)
	}

	wrongID := cross
	wrongID.ExternalID = "guess"
	_, err := whoAmI(t, fake, wrongID, keys)
	if err == nil || awsauth.Category(err) != contract.Authentication {
		t.Fatalf("a refused role: %v (%v)", err, err != nil && awsauth.Category(err) == contract.Authentication)
	}
	failed := contract.Classify(awsauth.Fail(err, "read s3://b/k with connector aws"))
	if failed.Category != contract.Authentication || !strings.Contains(failed.Message, "assume role: AccessDenied") || !strings.Contains(failed.Message, "s3://b/k") {
		t.Fatalf("failure %+v", failed)
	}
	_, err = whoAmI(t, fake, plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "A", SecretKeyRef: "nope"}, keys)
	if f := contract.Classify(err); f == nil || f.Category != contract.Authentication || !strings.Contains(f.Message, "connector aws: secret key") {
		t.Fatalf("a missing secret: %+v", f)
	}
}

// The other categories: a missing permission, an unreachable endpoint, a request cut by the
// step's timeout; each message names what was done.
func TestFailureCategories(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	fake.Deny("GetSecretValue")
	keys := resolver{"aws_secret": "s"}
	c := plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKID", SecretKeyRef: "aws_secret", Region: "eu-west-1"}
	get := func(ctx context.Context, endpoint string) error {
		t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint)
		cfg, err := awsauth.Config(ctx, c, "", keys, nil)
		if err != nil {
			return err
		}
		cfg.RetryMaxAttempts = 1
		_, err = secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("db")})
		return awsauth.Fail(err, "read secret db")
	}
	ctx := context.Background()
	for name, c := range map[string]struct {
		err  func() error
		want contract.Category
	}{
		"denied":      {func() error { return get(ctx, fake.URL) }, contract.Authorization},
		"unreachable": {func() error { return get(ctx, "http://127.0.0.1:1") }, contract.Connectivity},
		"timeout": {func() error {
			tctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
			defer cancel()
			time.Sleep(time.Millisecond)
			return get(tctx, fake.URL)
		}, contract.Timeout},
	} {
		f := contract.Classify(c.err())
		if f == nil || f.Category != c.want || !strings.HasPrefix(f.Message, "read secret db: ") {
			t.Errorf("%s: %+v, want %s", name, f, c.want)
		}
	}
}
