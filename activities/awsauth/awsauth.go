// Package awsauth turns an Aws connector into a signed aws.Config, and an AWS error into a step
// failure with its category. Keys come from the secret resolver (ManualConfig) or the worker's
// default credential chain (InheritFromDelegate, Irsa: environment, shared config, web identity,
// instance role); a cross-account role is assumed through STS with its external ID.
package awsauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Config returns the configuration c signs with in region (the connector's when empty, else
// us-east-1). Secret keys are added to mask. Endpoints follow the SDK's environment
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>), as for any AWS tool on the worker.
func Config(ctx context.Context, c plan.AwsConnector, region string, r secrets.Resolver, mask *secrets.Masker) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(cmp.Or(region, c.Region, "us-east-1"))}
	switch c.Credential {
	case "ManualConfig":
		id := c.AccessKey
		if c.AccessKeyRef != "" {
			v, err := r.Resolve(ctx, c.AccessKeyRef)
			if err != nil {
				return aws.Config{}, contract.Fail(contract.Authentication, "connector %s: access key: %v", c.ID, err)
			}
			id = v
		}
		key, err := r.Resolve(ctx, c.SecretKeyRef)
		if err != nil {
			return aws.Config{}, contract.Fail(contract.Authentication, "connector %s: secret key: %v", c.ID, err)
		}
		if mask != nil {
			mask.Add(key)
		}
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, key, "")))
	case "InheritFromDelegate", "Irsa", "":
	default:
		return aws.Config{}, contract.Fail(contract.Authentication, "connector %s: Gantry cannot sign with %s credentials", c.ID, c.Credential)
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, contract.Fail(contract.Authentication, "connector %s: AWS configuration: %v", c.ID, err)
	}
	if c.RoleARN != "" {
		p := stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), c.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = "gantry-" + c.ID
			if c.ExternalID != "" {
				o.ExternalID = aws.String(c.ExternalID)
			}
		})
		cfg.Credentials = aws.NewCredentialsCache(p)
	}
	return cfg, nil
}

// Fail turns err, from what was being done ("read s3://b/k with connector aws"), into a step
// failure: Authentication (bad or missing keys, a role that cannot be assumed), Authorization
// (the identity lacks a permission), Connectivity, Timeout, or Verification (the resource is
// not there or not as expected).
func Fail(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	return contract.Fail(Category(err), "%s: %s", what, Reason(err))
}

// Category is err's failure category.
func Category(err error) contract.Category {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch code := api.ErrorCode(); {
		case code == "AccessDenied" && isAssumeRole(err):
			return contract.Authentication
		case strings.Contains(code, "AccessDenied"), code == "UnauthorizedOperation", code == "Forbidden", code == "AuthorizationError":
			return contract.Authorization
		case code == "InvalidAccessKeyId", code == "SignatureDoesNotMatch", code == "InvalidClientTokenId", code == "UnrecognizedClientException",
			code == "ExpiredToken", code == "ExpiredTokenException", code == "MissingAuthenticationTokenException", code == "InvalidToken":
			return contract.Authentication
		case code == "RequestTimeout", code == "RequestTimeoutException":
			return contract.Timeout
		}
		return contract.Verification
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return contract.Timeout
	case errors.As(err, &ne) && ne.Timeout():
		return contract.Timeout
	case errors.As(err, &ne), strings.Contains(err.Error(), "connection refused"), strings.Contains(err.Error(), "no such host"):
		return contract.Connectivity
	case strings.Contains(err.Error(), "failed to retrieve credentials"), strings.Contains(err.Error(), "no EC2 IMDS role found"):
		return contract.Authentication
	}
	return contract.Unknown
}

// isAssumeRole reports an error of the STS AssumeRole a connector's credentials made.
func isAssumeRole(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if op, ok := e.(*smithy.OperationError); ok && op.Service() == "STS" && op.Operation() == "AssumeRole" {
			return true
		}
	}
	return false
}

// Reason is err's message without the SDK's request details: the service's code and message.
func Reason(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		msg := api.ErrorMessage()
		if isAssumeRole(err) {
			return fmt.Sprintf("assume role: %s: %s", api.ErrorCode(), msg)
		}
		if msg == "" {
			return api.ErrorCode()
		}
		return api.ErrorCode() + ": " + msg
	}
	return err.Error()
}
