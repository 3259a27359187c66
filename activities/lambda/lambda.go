// Package lambda runs the AwsLambda steps with aws-sdk-go-v2: AwsLambdaDeploy and
// AwsLambdaRollback, and the canary's AwsLambdaCanaryDeploy, AwsLambdaTrafficShift and
// AwsLambdaCanaryRollback (canary.go).
//
// Deploy creates the function from the service's AwsLambdaFunctionDefinition manifest, or
// updates its code and configuration, publishes a version and waits until it is active and
// its update has succeeded. Before it changes anything it records, as tags on the function,
// the execution and the version to go back to (the latest published one; an unpublished
// $LATEST is published first so that it can be), so a rollback needs no state of its own and a
// retried deploy keeps the first record. Rollback restores that version's code and
// configuration and publishes them as a new version, or deletes a function the execution
// created.
package lambda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// The tags a deploy leaves on the function for its rollback.
const (
	tagExecution = "gantry-rollback-execution"
	tagVersion   = "gantry-rollback-version" // a version number, or "none": the deploy created it
)

// Activity runs the Lambda steps.
type Activity struct {
	Secrets secrets.Resolver
	Logs    logs.Store
	// HTTP downloads a previous version's code for a rollback (nil: http.DefaultClient).
	HTTP *http.Client
}

// Definition is an AwsLambdaFunctionDefinition manifest: CreateFunction's fields, in the
// reference's lowerCamel spelling.
type Definition struct {
	FunctionName  string            `json:"functionName"`
	Runtime       string            `json:"runtime,omitempty"`
	Handler       string            `json:"handler,omitempty"`
	Role          string            `json:"role"`
	Description   string            `json:"description,omitempty"`
	MemorySize    *int32            `json:"memorySize,omitempty"`
	Timeout       *int32            `json:"timeout,omitempty"`
	PackageType   string            `json:"packageType,omitempty"`
	Architectures []string          `json:"architectures,omitempty"`
	Layers        []string          `json:"layers,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
	Environment   *struct {
		Variables map[string]string `json:"variables"`
	} `json:"environment,omitempty"`
	EphemeralStorage *struct {
		Size int32 `json:"size"`
	} `json:"ephemeralStorage,omitempty"`
	VpcConfig *struct {
		SubnetIDs        []string `json:"subnetIds"`
		SecurityGroupIDs []string `json:"securityGroupIds"`
	} `json:"vpcConfig,omitempty"`
}

// fnState is a function's (or version's) configuration as Lambda reports it.
type fnState = lambda.GetFunctionConfigurationOutput

type run struct {
	a      *Activity
	in     contract.StepInput
	c      *lambda.Client
	log    *logs.Writer
	mask   *secrets.Masker
	region string
}

// A handler runs one step type on the function its service defines.
type handler func(ctx context.Context, r *run, def *Definition, d *contract.DeployInput) (map[string]any, error)

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.AwsLambdaDeploy: func(ctx context.Context, r *run, def *Definition, d *contract.DeployInput) (map[string]any, error) {
		return r.deploy(ctx, def, d.Artifact)
	},
	stepspec.AwsLambdaRollback: func(ctx context.Context, r *run, def *Definition, _ *contract.DeployInput) (map[string]any, error) {
		return r.rollback(ctx, def.FunctionName)
	},
	stepspec.AwsLambdaCanaryDeploy: withAlias(func(ctx context.Context, r *run, def *Definition, alias *AliasDefinition, d *contract.DeployInput) (map[string]any, error) {
		return r.canaryDeploy(ctx, def, alias, d.Artifact)
	}),
	stepspec.AwsLambdaTrafficShift: withAlias(func(ctx context.Context, r *run, def *Definition, alias *AliasDefinition, _ *contract.DeployInput) (map[string]any, error) {
		sp, err := stepspec.Decode[stepspec.AwsLambdaTrafficShiftSpec](r.in.Spec)
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "%s spec: %v", r.in.Type, err)
		}
		return r.trafficShift(ctx, def, alias, sp)
	}),
	stepspec.AwsLambdaCanaryRollback: withAlias(func(ctx context.Context, r *run, def *Definition, alias *AliasDefinition, _ *contract.DeployInput) (map[string]any, error) {
		return r.canaryRollback(ctx, def, alias)
	}),
}

// withAlias gives a handler the alias definition the service's manifests hold.
func withAlias(h func(context.Context, *run, *Definition, *AliasDefinition, *contract.DeployInput) (map[string]any, error)) handler {
	return func(ctx context.Context, r *run, def *Definition, d *contract.DeployInput) (map[string]any, error) {
		alias, err := aliasDefinition(d)
		if err != nil {
			return nil, err
		}
		return h(ctx, r, def, alias, d)
	}
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

// Run runs one of the family's steps: the handler of its type.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	st, err := awsauth.Start(ctx, in, a.Logs, a.Secrets, "AwsLambda")
	if err != nil {
		return contract.StepResult{}, err
	}
	defer st.End()
	ctx, d := st.Ctx, in.Deploy
	r := &run{a: a, in: in, log: st.Log, mask: st.Mask, region: d.Region}
	r.c = lambda.NewFromConfig(st.Cfg)
	def, err := definition(d)
	if err != nil {
		return contract.StepResult{}, err
	}
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the AwsLambda activity runs no step of type %s", in.Type)
	}
	out, err := h(ctx, r, def, d)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return contract.StepResult{}, contract.Fail(contract.Timeout, "%s: function %s did not finish within the step's timeout %s", in.Type, def.FunctionName, in.Timeout)
		}
		return contract.StepResult{}, err
	}
	return contract.StepResult{Outputs: out}, nil
}

// definition parses the service's function definition manifest (JSON or YAML).
func definition(d *contract.DeployInput) (*Definition, error) {
	for _, m := range d.Manifests {
		if m.Type != "AwsLambdaFunctionDefinition" || len(m.Files) == 0 {
			continue
		}
		f := m.Files[0]
		var def Definition
		if err := yaml.UnmarshalStrict([]byte(f.Text), &def); err != nil {
			return nil, contract.Fail(contract.Verification, "function definition %s (manifest %s): %v", f.Path, m.ID, err)
		}
		if def.FunctionName == "" || def.Role == "" {
			return nil, contract.Fail(contract.Verification, "function definition %s (manifest %s) needs functionName and role", f.Path, m.ID)
		}
		return &def, nil
	}
	return nil, contract.Fail(contract.Verification, "the service has no AwsLambdaFunctionDefinition manifest")
}

func (r *run) logf(format string, args ...any) {
	r.log.Line(r.mask.Apply(fmt.Sprintf(format, args...)))
}

func (r *run) fail(err error, format string, args ...any) error {
	return awsauth.Fail(err, "%s (region %s, connector %s)", fmt.Sprintf(format, args...), r.region, r.in.Deploy.Aws.ID)
}

func notFound(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}

// deploy creates or updates the function and publishes a version.
func (r *run) deploy(ctx context.Context, def *Definition, art *contract.DeployArtifact) (map[string]any, error) {
	name := def.FunctionName
	if art == nil || (art.Key == "" && art.Image == "") {
		return nil, contract.Fail(contract.Verification, "function %s: the service has no artifact (an S3 object or an image) to deploy", name)
	}
	code := codeOf(art)
	got, err := r.c.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name)})
	if err != nil && !notFound(err) {
		return nil, r.fail(err, "read function %s", name)
	}
	var fn *fnState
	if err != nil { // a new function
		tags := map[string]string{tagExecution: r.in.ExecutionID, tagVersion: "none"}
		for k, v := range def.Tags {
			tags[k] = v
		}
		in := &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String(def.Role), Code: code, Publish: true, Tags: tags}
		r.configure(def, &in.Handler, &in.Runtime, &in.Description, &in.MemorySize, &in.Timeout, &in.Environment, &in.Layers, &in.EphemeralStorage, &in.VpcConfig)
		in.PackageType = packageType(def, art)
		for _, a := range def.Architectures {
			in.Architectures = append(in.Architectures, types.Architecture(a))
		}
		r.logf("creating function %s from %s", name, describe(art))
		out, err := r.c.CreateFunction(ctx, in)
		if err != nil {
			return nil, r.fail(err, "create function %s", name)
		}
		if fn, err = r.waitActive(ctx, name, aws.ToString(out.Version)); err != nil {
			return nil, err
		}
		return r.outputs(fn, "none"), nil
	}
	arn := aws.ToString(got.Configuration.FunctionArn)
	previous, err := r.recordRollback(ctx, name, arn, got.Tags)
	if err != nil {
		return nil, err
	}
	r.logf("updating function %s: code from %s (a rollback goes back to version %s)", name, describe(art), previous)
	uc := &lambda.UpdateFunctionCodeInput{FunctionName: aws.String(name), S3Bucket: code.S3Bucket, S3Key: code.S3Key, ImageUri: code.ImageUri}
	if _, err := r.c.UpdateFunctionCode(ctx, uc); err != nil {
		return nil, r.fail(err, "update the code of function %s", name)
	}
	if _, err := r.waitUpdated(ctx, name); err != nil {
		return nil, err
	}
	cfg := &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String(name), Role: aws.String(def.Role)}
	r.configure(def, &cfg.Handler, &cfg.Runtime, &cfg.Description, &cfg.MemorySize, &cfg.Timeout, &cfg.Environment, &cfg.Layers, &cfg.EphemeralStorage, &cfg.VpcConfig)
	if _, err := r.c.UpdateFunctionConfiguration(ctx, cfg); err != nil {
		return nil, r.fail(err, "update the configuration of function %s", name)
	}
	if _, err := r.waitUpdated(ctx, name); err != nil {
		return nil, err
	}
	if fn, err = r.publish(ctx, name); err != nil {
		return nil, err
	}
	return r.outputs(fn, previous), nil
}

// recordRollback tags the function with this execution and the version a rollback restores,
// unless an earlier attempt of this execution's deploy already did. It returns that version.
func (r *run) recordRollback(ctx context.Context, name, arn string, tags map[string]string) (string, error) {
	if tags[tagExecution] == r.in.ExecutionID && tags[tagVersion] != "" {
		return tags[tagVersion], nil
	}
	previous, err := r.latestVersion(ctx, name)
	if err != nil {
		return "", err
	}
	if previous == "" { // only $LATEST: publish it, so a rollback has a version to restore
		fn, err := r.publish(ctx, name)
		if err != nil {
			return "", err
		}
		previous = aws.ToString(fn.Version)
	}
	if _, err := r.c.TagResource(ctx, &lambda.TagResourceInput{Resource: aws.String(arn),
		Tags: map[string]string{tagExecution: r.in.ExecutionID, tagVersion: previous}}); err != nil {
		return "", r.fail(err, "tag function %s with its rollback version", name)
	}
	return previous, nil
}

// latestVersion is the highest published version ("" when none is).
func (r *run) latestVersion(ctx context.Context, name string) (string, error) {
	var nums []int
	p := lambda.NewListVersionsByFunctionPaginator(r.c, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", r.fail(err, "list the versions of function %s", name)
		}
		for _, v := range page.Versions {
			if n, err := strconv.Atoi(aws.ToString(v.Version)); err == nil {
				nums = append(nums, n)
			}
		}
	}
	if len(nums) == 0 {
		return "", nil
	}
	sort.Ints(nums)
	return strconv.Itoa(nums[len(nums)-1]), nil
}

func (r *run) publish(ctx context.Context, name string) (*fnState, error) {
	out, err := r.c.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String(name), Description: aws.String("gantry " + r.in.ExecutionID)})
	if err != nil {
		return nil, r.fail(err, "publish a version of function %s", name)
	}
	return r.waitActive(ctx, name, aws.ToString(out.Version))
}

// configure copies the definition's settings into a create or update request.
func (r *run) configure(def *Definition, handler **string, runtime *types.Runtime, desc **string, memory, timeout **int32, env **types.Environment,
	layers *[]string, storage **types.EphemeralStorage, vpc **types.VpcConfig) {
	if def.Handler != "" {
		*handler = aws.String(def.Handler)
	}
	if def.Runtime != "" {
		*runtime = types.Runtime(def.Runtime)
	}
	if def.Description != "" {
		*desc = aws.String(def.Description)
	}
	*memory, *timeout = def.MemorySize, def.Timeout
	if def.Environment != nil {
		*env = &types.Environment{Variables: def.Environment.Variables}
	}
	*layers = def.Layers
	if def.EphemeralStorage != nil {
		*storage = &types.EphemeralStorage{Size: aws.Int32(def.EphemeralStorage.Size)}
	}
	if def.VpcConfig != nil {
		*vpc = &types.VpcConfig{SubnetIds: def.VpcConfig.SubnetIDs, SecurityGroupIds: def.VpcConfig.SecurityGroupIDs}
	}
}

func codeOf(art *contract.DeployArtifact) *types.FunctionCode {
	if art.Image != "" {
		return &types.FunctionCode{ImageUri: aws.String(art.Image)}
	}
	return &types.FunctionCode{S3Bucket: aws.String(art.Bucket), S3Key: aws.String(art.Key)}
}

func packageType(def *Definition, art *contract.DeployArtifact) types.PackageType {
	if def.PackageType != "" {
		return types.PackageType(def.PackageType)
	}
	if art.Image != "" {
		return types.PackageTypeImage
	}
	return types.PackageTypeZip
}

func describe(art *contract.DeployArtifact) string {
	if art.Image != "" {
		return "image " + art.Image
	}
	return "s3://" + art.Bucket + "/" + art.Key
}

// waitActive waits until a version (or $LATEST) is Active with its last update successful.
func (r *run) waitActive(ctx context.Context, name, qualifier string) (*fnState, error) {
	return r.wait(ctx, name, qualifier)
}

// waitUpdated waits until $LATEST's last update has succeeded.
func (r *run) waitUpdated(ctx context.Context, name string) (*fnState, error) {
	return r.wait(ctx, name, "")
}

// wait polls the function's configuration: State Active and LastUpdateStatus Successful is
// done; Failed states fail the step with Lambda's reason.
func (r *run) wait(ctx context.Context, name, qualifier string) (*fnState, error) {
	in := &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)}
	if qualifier != "" && qualifier != "$LATEST" {
		in.Qualifier = aws.String(qualifier)
	}
	what := "function " + name
	if in.Qualifier != nil {
		what += " version " + qualifier
	}
	delay := 50 * time.Millisecond
	for {
		fn, err := r.c.GetFunctionConfiguration(ctx, in)
		if err != nil {
			return nil, r.fail(err, "read %s", what)
		}
		switch {
		case fn.State == types.StateFailed:
			return nil, contract.Fail(contract.Verification, "%s failed to become active: %s: %s", what, fn.StateReasonCode, aws.ToString(fn.StateReason))
		case fn.LastUpdateStatus == types.LastUpdateStatusFailed:
			return nil, contract.Fail(contract.Verification, "%s: its update failed: %s: %s", what, fn.LastUpdateStatusReasonCode, aws.ToString(fn.LastUpdateStatusReason))
		case fn.State == types.StateActive && (fn.LastUpdateStatus == "" || fn.LastUpdateStatus == types.LastUpdateStatusSuccessful):
			r.logf("%s is active (%s, %d MB, code %s)", what, fn.Runtime, aws.ToInt32(fn.MemorySize), aws.ToString(fn.CodeSha256))
			return fn, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// outputs are what the step publishes as <+execution.steps.ID.output.*>.
func (r *run) outputs(fn *fnState, previous string) map[string]any {
	return map[string]any{"functionName": aws.ToString(fn.FunctionName), "functionArn": aws.ToString(fn.FunctionArn),
		"version": aws.ToString(fn.Version), "runtime": string(fn.Runtime), "handler": aws.ToString(fn.Handler),
		"memorySize": aws.ToInt32(fn.MemorySize), "codeSha256": aws.ToString(fn.CodeSha256), "region": r.region,
		"previousVersion": previous}
}

// rollback restores the version this execution's deploy recorded, or deletes the function it
// created; when this execution changed nothing, there is nothing to do.
func (r *run) rollback(ctx context.Context, name string) (map[string]any, error) {
	got, err := r.c.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name)})
	if notFound(err) {
		r.logf("function %s does not exist: nothing to roll back", name)
		return map[string]any{"functionName": name, "rolledBack": false}, nil
	}
	if err != nil {
		return nil, r.fail(err, "read function %s", name)
	}
	if got.Tags[tagExecution] != r.in.ExecutionID {
		r.logf("function %s was not changed by this execution (its last deploy was %s): nothing to roll back", name, got.Tags[tagExecution])
		return map[string]any{"functionName": name, "rolledBack": false}, nil
	}
	to := got.Tags[tagVersion]
	if to == "none" {
		r.logf("function %s was created by this execution: deleting it", name)
		if _, err := r.c.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String(name)}); err != nil && !notFound(err) {
			return nil, r.fail(err, "delete function %s", name)
		}
		return map[string]any{"functionName": name, "rolledBack": true, "deleted": true}, nil
	}
	old, err := r.c.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name), Qualifier: aws.String(to)})
	if err != nil {
		return nil, r.fail(err, "read version %s of function %s", to, name)
	}
	r.logf("rolling function %s back to version %s", name, to)
	uc := &lambda.UpdateFunctionCodeInput{FunctionName: aws.String(name)}
	if img := aws.ToString(old.Code.ImageUri); img != "" {
		uc.ImageUri = aws.String(img)
	} else {
		zip, err := r.download(ctx, aws.ToString(old.Code.Location))
		if err != nil {
			return nil, contract.Fail(contract.Connectivity, "download the code of version %s of function %s: %v", to, name, err)
		}
		uc.ZipFile = zip
	}
	if _, err := r.c.UpdateFunctionCode(ctx, uc); err != nil {
		return nil, r.fail(err, "restore the code of function %s", name)
	}
	if _, err := r.waitUpdated(ctx, name); err != nil {
		return nil, err
	}
	c := old.Configuration
	cfg := &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String(name), Role: c.Role, Handler: c.Handler,
		Description: c.Description, MemorySize: c.MemorySize, Timeout: c.Timeout, Runtime: c.Runtime}
	if c.Environment != nil {
		cfg.Environment = &types.Environment{Variables: c.Environment.Variables}
	} else {
		cfg.Environment = &types.Environment{Variables: map[string]string{}}
	}
	for _, l := range c.Layers {
		cfg.Layers = append(cfg.Layers, aws.ToString(l.Arn))
	}
	if cfg.Layers == nil {
		cfg.Layers = []string{}
	}
	if _, err := r.c.UpdateFunctionConfiguration(ctx, cfg); err != nil {
		return nil, r.fail(err, "restore the configuration of function %s", name)
	}
	if _, err := r.waitUpdated(ctx, name); err != nil {
		return nil, err
	}
	fn, err := r.publish(ctx, name)
	if err != nil {
		return nil, err
	}
	out := r.outputs(fn, to)
	out["rolledBack"], out["rolledBackTo"] = true, to
	return out, nil
}

// download fetches a version's code from the presigned URL Lambda gives for it.
func (r *run) download(ctx context.Context, url string) ([]byte, error) {
	if url == "" {
		return nil, fmt.Errorf("lambda gave no code location")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := r.a.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 250<<20))
}
