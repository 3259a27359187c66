package secrets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
)

// Secrets Manager sits behind the environment and the secrets file: whole secrets, keys of a
// JSON secret, a missing secret named in the error, one call per secret while cached; and a
// value it returns is masked like any secret.
func TestSecretsManagerBehindTheStore(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	fake.SetSecret("gantry/db_password", "s3cr3t-from-aws")
	fake.SetSecret("gantry/api", `{"token":"tok-123","port":5432}`)
	client := secretsmanager.New(secretsmanager.Options{Region: "eu-west-1", BaseEndpoint: aws.String(fake.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDWORKER", "worker-secret", "")})
	fake.SetSecret("gantry/overridden", "from-aws")
	t.Setenv(secrets.EnvName("overridden"), "from-env")
	store := &secrets.Store{Next: &secrets.SecretsManager{Client: client, Prefix: "gantry/"}}
	ctx := context.Background()

	if v, err := store.Resolve(ctx, "overridden"); err != nil || v != "from-env" {
		t.Fatalf("the environment comes first: %q %v", v, err)
	}
	for id, want := range map[string]string{"db_password": "s3cr3t-from-aws", "api#token": "tok-123", "api#port": "5432"} {
		if v, err := store.Resolve(ctx, id); err != nil || v != want {
			t.Fatalf("%s: %q %v, want %q", id, v, err, want)
		}
	}
	_, err := store.Resolve(ctx, "missing")
	if err == nil || !strings.Contains(err.Error(), "gantry/missing does not exist in AWS Secrets Manager (region eu-west-1)") {
		t.Fatalf("missing secret: %v", err)
	}
	if _, err := store.Resolve(ctx, "api#nope"); err == nil || !strings.Contains(err.Error(), `has no key "nope"`) {
		t.Fatalf("missing key: %v", err)
	}
	gets := 0
	for _, c := range fake.Calls() {
		if c.Action == "GetSecretValue" {
			gets++
			if c.AccessKeyID != "AKIDWORKER" {
				t.Fatalf("signed by %s", c.AccessKeyID)
			}
		}
	}
	if gets != 3 { // db_password, api (cached for its second key) and missing
		t.Fatalf("%d GetSecretValue calls, want 3 (values are cached)", gets)
	}
	var m secrets.Masker
	out, err := secrets.Expand(ctx, store, &m, `echo <+secrets.getValue("db_password")>`)
	if err != nil || m.Apply(out) != "echo "+secrets.Mask {
		t.Fatalf("masking: %q %v", m.Apply(out), err)
	}
}

// A value read from Secrets Manager for a step serves that step only: the next step reads it
// anew.
func TestSecretsManagerKeepsAValueForItsStep(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	fake.SetSecret("db_password", "s3cr3t")
	client := secretsmanager.New(secretsmanager.Options{Region: "eu-west-1", BaseEndpoint: aws.String(fake.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDWORKER", "worker-secret", "")})
	sm := &secrets.SecretsManager{Client: client}
	step := func(ctx context.Context) (string, error) {
		for range 3 {
			if _, err := sm.Resolve(ctx, "db_password"); err != nil {
				return "", err
			}
		}
		return sm.Resolve(ctx, "db_password")
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(step)
	for range 2 {
		if _, err := env.ExecuteActivity(step); err != nil {
			t.Fatal(err)
		}
	}
	gets := 0
	for _, c := range fake.Calls() {
		if c.Action == "GetSecretValue" {
			gets++
		}
	}
	if gets != 2 {
		t.Fatalf("%d GetSecretValue calls for two steps reading the secret four times each, want 2", gets)
	}
}
