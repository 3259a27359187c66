package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/objstore"
	"github.com/gantry-cd/gantry/activities/secrets"
)

// logBucketFlags ship step logs to an S3-compatible bucket.
type logBucketFlags struct {
	bucket, endpoint, region, profile, accessKeyID, secretRef string
}

func (f *logBucketFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.bucket, "logs-bucket", os.Getenv("GANTRY_LOGS_BUCKET"), "ship every step's log to this S3 bucket (BUCKET or BUCKET/PREFIX), so `gantry logs` and the API read any step's log whichever worker ran it (env GANTRY_LOGS_BUCKET)")
	cmd.Flags().StringVar(&f.endpoint, "logs-endpoint", os.Getenv("GANTRY_LOGS_ENDPOINT"), "URL of an S3-compatible server holding --logs-bucket (MinIO, versitygw...); empty is AWS S3 (env GANTRY_LOGS_ENDPOINT)")
	cmd.Flags().StringVar(&f.region, "logs-region", os.Getenv("GANTRY_LOGS_REGION"), "region of --logs-bucket (env GANTRY_LOGS_REGION; default the AWS configuration's)")
	cmd.Flags().StringVar(&f.profile, "logs-profile", os.Getenv("GANTRY_LOGS_PROFILE"), "AWS shared-config profile that signs requests to --logs-bucket (env GANTRY_LOGS_PROFILE)")
	cmd.Flags().StringVar(&f.accessKeyID, "logs-access-key-id", os.Getenv("GANTRY_LOGS_ACCESS_KEY_ID"), "access key id for --logs-bucket, with --logs-secret-ref; without both, the AWS default credential chain signs (env GANTRY_LOGS_ACCESS_KEY_ID)")
	cmd.Flags().StringVar(&f.secretRef, "logs-secret-ref", os.Getenv("GANTRY_LOGS_SECRET_REF"), "id of the secret (GANTRY_SECRET_<ID>, the secrets file or the secret manager) holding the secret access key of --logs-access-key-id (env GANTRY_LOGS_SECRET_REF)")
}

// store returns the log store of dir, shipping to the bucket when one is set. ship starts the
// shipper (processes that run steps); others only read from the bucket.
func (f logBucketFlags) store(ctx context.Context, dir string, r secrets.Resolver, ship bool, log *zap.Logger) (logs.Store, error) {
	st := logs.Store{Dir: dir}
	if f.bucket == "" {
		return st, nil
	}
	c := objstore.Config{Location: f.bucket, Endpoint: f.endpoint, Region: f.region, Profile: f.profile, AccessKeyID: f.accessKeyID}
	if (f.accessKeyID == "") != (f.secretRef == "") {
		return st, fmt.Errorf("--logs-access-key-id and --logs-secret-ref go together: give both, or neither to use the AWS default credential chain")
	}
	if f.secretRef != "" {
		v, err := r.Resolve(ctx, f.secretRef)
		if err != nil {
			return st, fmt.Errorf("--logs-secret-ref: %v", err)
		}
		c.SecretAccessKey = v
	}
	b, err := objstore.Open(ctx, c)
	if err != nil {
		return st, fmt.Errorf("--logs-bucket: %v", err)
	}
	st.Remote = &logs.Remote{Bucket: b, Log: log.Named("logs")}
	if ship {
		if err := st.Remote.Start(ctx, dir); err != nil {
			return st, fmt.Errorf("--logs-bucket: %v", err)
		}
	}
	return st, nil
}

// secretManagerFlags add AWS Secrets Manager behind the environment and the secrets file.
type secretManagerFlags struct {
	region, prefix, profile string
}

func (f *secretManagerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.region, "aws-secrets-region", os.Getenv("GANTRY_AWS_SECRETS_REGION"), "also resolve <+secrets.getValue(\"NAME\")> (and \"NAME#KEY\" of a JSON secret) from AWS Secrets Manager in this region, after GANTRY_SECRET_<ID> and the secrets file (env GANTRY_AWS_SECRETS_REGION)")
	cmd.Flags().StringVar(&f.prefix, "aws-secrets-prefix", os.Getenv("GANTRY_AWS_SECRETS_PREFIX"), "prefix of secret names in AWS Secrets Manager, e.g. gantry/ (env GANTRY_AWS_SECRETS_PREFIX)")
	cmd.Flags().StringVar(&f.profile, "aws-secrets-profile", os.Getenv("GANTRY_AWS_SECRETS_PROFILE"), "AWS shared-config profile for AWS Secrets Manager; default the AWS default credential chain (env GANTRY_AWS_SECRETS_PROFILE)")
}

// resolver is the secret store of a process: the environment, file, then Secrets Manager.
func (f secretManagerFlags) resolver(ctx context.Context, file string) (*secrets.Store, error) {
	st := &secrets.Store{File: file}
	if f.region == "" {
		return st, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(f.region)}
	if f.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(f.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--aws-secrets-region: AWS configuration: %v", err)
	}
	st.Next = &secrets.SecretsManager{Client: secretsmanager.NewFromConfig(cfg), Prefix: f.prefix}
	return st, nil
}
