package awssecrets_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/awssecrets"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

// Secrets routed to AwsSecretManager connectors are read signed as each connector says (keys
// from the default store, the worker's own credentials, a role they assume), in its region,
// whole or one key of a JSON secret, anew for every read; a missing secret names the
// connector, and never falls back to the default store.
func TestConnectorSecrets(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL", fake.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWORKER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "worker-secret")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	fake.AddRole("arn:aws:iam::210987654321:role/reader", awsfake.Role{ExternalID: "ext-7", AccessKeyID: "ASIAREADER", SecretKey: "role-secret"})
	fake.SetSecret("prod/db", `{"password":"pw-from-aws","user":"app"}`)
	fake.SetSecret("team/api_key", "key-from-aws")

	manual := plan.SecretManager{ID: "aws_sm", Type: "AwsSecretManager", Aws: &plan.AwsConnector{ID: "aws_sm", Credential: "ManualConfig",
		AccessKey: "AKIDSM", SecretKeyRef: "sm_secret_key", Region: "eu-central-1"}}
	worker := plan.SecretManager{ID: "aws_iam", Type: "AwsSecretManager", Aws: &plan.AwsConnector{ID: "aws_iam", Credential: "InheritFromDelegate", Region: "us-west-2"}}
	sts := plan.SecretManager{ID: "aws_sts", Type: "AwsSecretManager", Aws: &plan.AwsConnector{ID: "aws_sts", Credential: "InheritFromDelegate",
		RoleARN: "arn:aws:iam::210987654321:role/reader", ExternalID: "ext-7", Region: "us-east-2"}}
	def := secrets.Map{"sm_secret_key": "sm-secret", "missing": "from-the-default-store"}
	r := secrets.Routed(def, map[string]func(secrets.Resolver) secrets.Manager{"AwsSecretManager": awssecrets.New})
	ctx := contract.ContextWithSecretRoutes(context.Background(), map[string]plan.SecretRoute{
		"db_password": {Manager: manual, Path: "prod/db", Key: "password"},
		"api_key":     {Manager: worker, Path: "team/api_key"},
		"by_role":     {Manager: sts, Path: "prod/db", Key: "user"},
		"missing":     {Manager: manual, Path: "prod/nothing"},
	})
	for id, want := range map[string]string{"db_password": "pw-from-aws", "api_key": "key-from-aws", "by_role": "app"} {
		if v, err := r.Resolve(ctx, id); err != nil || v != want {
			t.Fatalf("%s: %q %v, want %q", id, v, err, want)
		}
	}
	if v, err := r.Resolve(ctx, "db_password"); err != nil || v != "pw-from-aws" {
		t.Fatalf("again: %q %v", v, err)
	}
	signers := map[string][]string{}
	for _, c := range fake.Calls() {
		if c.Action == "GetSecretValue" {
			signers[c.Params["SecretId"]] = append(signers[c.Params["SecretId"]], c.AccessKeyID)
		}
	}
	slices.Sort(signers["prod/db"])
	if got := strings.Join(signers["prod/db"], ","); got != "AKIDSM,AKIDSM,ASIAREADER" {
		t.Errorf("prod/db read by %s, want AKIDSM twice (each read anew) and ASIAREADER", got)
	}
	if got := strings.Join(signers["team/api_key"], ","); got != "AKIDWORKER" {
		t.Errorf("team/api_key read by %s", got)
	}
	_, err := r.Resolve(ctx, "missing")
	if err == nil || !strings.Contains(err.Error(), "connector aws_sm") || !strings.Contains(err.Error(), "prod/nothing does not exist") {
		t.Fatalf("a missing secret: %v", err)
	}
}
