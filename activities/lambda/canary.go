package lambda

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// A Lambda canary deploys and publishes the new version as AwsLambdaDeploy does, and routes to
// it through the service's alias (its AwsLambdaFunctionAliasDefinition manifest): the canary
// deploy leaves the alias on the stable version with the new one at weight 0,
// AwsLambdaTrafficShift gives the new version its percentage (at 100 the alias moves to it
// whole), and AwsLambdaCanaryRollback puts the alias back on the stable version alone. The
// versions are kept as tags on the function beside the rollback record, so every step of the
// stage, on any worker, finds them.
const (
	tagCanaryVersion = "gantry-canary-version"
	tagStableVersion = "gantry-canary-stable" // "none": the canary created the alias
)

// AliasDefinition is an AwsLambdaFunctionAliasDefinition manifest: CreateAlias's fields.
type AliasDefinition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Where the alias routes is the canary's to decide; given here it is ignored.
	FunctionVersion string `json:"functionVersion,omitempty"`
	RoutingConfig   any    `json:"routingConfig,omitempty"`
}

// aliasDefinition parses the service's alias definition manifest.
func aliasDefinition(d *contract.DeployInput) (*AliasDefinition, error) {
	for _, m := range d.Manifests {
		if m.Type != "AwsLambdaFunctionAliasDefinition" || len(m.Files) == 0 {
			continue
		}
		f := m.Files[0]
		var def AliasDefinition
		if err := yaml.UnmarshalStrict([]byte(f.Text), &def); err != nil {
			return nil, contract.Fail(contract.Verification, "alias definition %s (manifest %s): %v", f.Path, m.ID, err)
		}
		if def.Name == "" {
			return nil, contract.Fail(contract.Verification, "alias definition %s (manifest %s) needs name", f.Path, m.ID)
		}
		return &def, nil
	}
	return nil, contract.Fail(contract.Verification, "the service has no AwsLambdaFunctionAliasDefinition manifest: a Lambda canary routes through the alias it names")
}

// canaryDeploy deploys and publishes the new version, then points the alias at the stable
// version with the new one at weight 0 (a first deployment: the alias is created on the new
// version, which has nothing to share traffic with).
func (r *run) canaryDeploy(ctx context.Context, def *Definition, alias *AliasDefinition, art *contract.DeployArtifact) (map[string]any, error) {
	name := def.FunctionName
	cur, err := r.c.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String(name), Name: aws.String(alias.Name)})
	if err != nil && !notFound(err) {
		return nil, r.fail(err, "read alias %s of function %s", alias.Name, name)
	}
	var fnBefore *lambda.GetFunctionOutput
	if fnBefore, err = r.c.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name)}); err != nil && !notFound(err) {
		return nil, r.fail(err, "read function %s", name)
	}
	stable := "none"
	switch {
	case fnBefore != nil && fnBefore.Tags[tagExecution] == r.in.ExecutionID && fnBefore.Tags[tagStableVersion] != "":
		stable = fnBefore.Tags[tagStableVersion] // a retried canary deploy keeps the first record
	case cur != nil:
		stable = aws.ToString(cur.FunctionVersion)
	}
	out, err := r.deploy(ctx, def, art)
	if err != nil {
		return nil, err
	}
	version := fmt.Sprint(out["version"])
	arn := strings.TrimSuffix(fmt.Sprint(out["functionArn"]), ":"+version) // tags go on the function, not a version
	if _, err := r.c.TagResource(ctx, &lambda.TagResourceInput{Resource: aws.String(arn),
		Tags: map[string]string{tagExecution: r.in.ExecutionID, tagCanaryVersion: version, tagStableVersion: stable}}); err != nil {
		return nil, r.fail(err, "tag function %s with its canary versions", name)
	}
	if stable == "none" || stable == version {
		if err := r.route(ctx, name, alias, cur != nil, version, "", 0); err != nil {
			return nil, err
		}
		r.logf("alias %s routes to version %s (nothing before it to share traffic with)", alias.Name, version)
	} else {
		if err := r.route(ctx, name, alias, cur != nil, stable, version, 0); err != nil {
			return nil, err
		}
		r.logf("alias %s routes to stable version %s; canary version %s gets no traffic until AwsLambdaTrafficShift", alias.Name, stable, version)
	}
	out["alias"], out["stableVersion"], out["canaryVersion"] = alias.Name, stable, version
	return out, nil
}

// route points the alias at version, with extra at weight (0..1) when extra is not "".
func (r *run) route(ctx context.Context, name string, alias *AliasDefinition, exists bool, version, extra string, weight float64) error {
	var rc *types.AliasRoutingConfiguration
	if extra != "" {
		rc = &types.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{extra: weight}}
	} else {
		rc = &types.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{}}
	}
	var err error
	if exists {
		_, err = r.c.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String(name), Name: aws.String(alias.Name),
			FunctionVersion: aws.String(version), RoutingConfig: rc})
	} else {
		in := &lambda.CreateAliasInput{FunctionName: aws.String(name), Name: aws.String(alias.Name), FunctionVersion: aws.String(version)}
		if extra != "" {
			in.RoutingConfig = rc
		}
		if alias.Description != "" {
			in.Description = aws.String(alias.Description)
		}
		_, err = r.c.CreateAlias(ctx, in)
	}
	if err != nil {
		return r.fail(err, "point alias %s of function %s at version %s", alias.Name, name, version)
	}
	return nil
}

// canaryState reads the versions this execution's canary deploy recorded.
func (r *run) canaryState(ctx context.Context, name string) (canary, stable string, ok bool, err error) {
	got, err := r.c.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(name)})
	if notFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, r.fail(err, "read function %s", name)
	}
	if got.Tags[tagExecution] != r.in.ExecutionID || got.Tags[tagCanaryVersion] == "" {
		return "", "", false, nil
	}
	return got.Tags[tagCanaryVersion], got.Tags[tagStableVersion], true, nil
}

// trafficShift gives the canary version trafficPercentage of the alias's traffic; at 100 the
// alias routes to it alone.
func (r *run) trafficShift(ctx context.Context, def *Definition, alias *AliasDefinition, sp stepspec.AwsLambdaTrafficShiftSpec) (map[string]any, error) {
	name := def.FunctionName
	pct, err := strconv.ParseFloat(string(sp.TrafficPercentage), 64)
	if err != nil || pct <= 0 || pct > 100 {
		return nil, contract.Fail(contract.Verification, "%s trafficPercentage %v is not a number above 0 and at most 100", r.in.Type, sp.TrafficPercentage)
	}
	canary, stable, ok, err := r.canaryState(ctx, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, contract.Fail(contract.Verification, "function %s has no canary version deployed by this execution: AwsLambdaCanaryDeploy comes first", name)
	}
	out := map[string]any{"functionName": name, "alias": alias.Name, "canaryVersion": canary, "stableVersion": stable, "trafficPercentage": pct}
	if pct == 100 || stable == "none" || stable == canary {
		if err := r.route(ctx, name, alias, true, canary, "", 0); err != nil {
			return nil, err
		}
		r.logf("alias %s routes all traffic to version %s", alias.Name, canary)
		return out, nil
	}
	weight := math.Round(pct*100) / 10000 // Lambda takes weights to 1/10000
	if err := r.route(ctx, name, alias, true, stable, canary, weight); err != nil {
		return nil, err
	}
	r.logf("alias %s: version %s takes %g%% of traffic, stable version %s the rest", alias.Name, canary, pct, stable)
	return out, nil
}

// canaryRollback puts the alias back on the stable version alone, and deletes a function the
// canary created; when this execution deployed no canary there is nothing to do.
func (r *run) canaryRollback(ctx context.Context, def *Definition, alias *AliasDefinition) (map[string]any, error) {
	name := def.FunctionName
	canary, stable, ok, err := r.canaryState(ctx, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		r.logf("function %s has no canary deployed by this execution: nothing to roll back", name)
		return map[string]any{"functionName": name, "rolledBack": false}, nil
	}
	if stable == "none" {
		// The canary created the alias; the rollback record says whether it created the function.
		out, err := r.rollback(ctx, name)
		if err != nil {
			return nil, err
		}
		if out["deleted"] != true {
			if _, err := r.c.DeleteAlias(ctx, &lambda.DeleteAliasInput{FunctionName: aws.String(name), Name: aws.String(alias.Name)}); err != nil && !notFound(err) {
				return nil, r.fail(err, "delete alias %s of function %s", alias.Name, name)
			}
		}
		out["alias"], out["canaryVersion"] = alias.Name, canary
		return out, nil
	}
	if err := r.route(ctx, name, alias, true, stable, "", 0); err != nil {
		return nil, err
	}
	r.logf("alias %s routes all traffic to stable version %s again (canary version %s no longer gets any)", alias.Name, stable, canary)
	return map[string]any{"functionName": name, "rolledBack": true, "alias": alias.Name, "stableVersion": stable, "canaryVersion": canary}, nil
}
