package lambda

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// Instances reads an AwsLambda target's instances: the versions of its function that serve
// traffic, each with its share. Through the service's alias those are the alias's version and
// its additional versions with their weights; without one, the newest published version. A
// function serving a version Gantry did not publish, or whose code changed outside Gantry
// ($LATEST differing from the newest published version), has drifted. The target is gone
// when its function is.
func (a *Activity) Instances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error) {
	if t.Aws == nil || t.Function == "" {
		return contract.InstanceRead{}, contract.Fail(contract.Unknown, "target %s/%s names no AWS connector and function", t.Key.Environment, t.Key.Infra)
	}
	cfg, err := awsauth.Config(ctx, *t.Aws, t.Region, a.Secrets, &secrets.Masker{})
	if err != nil {
		return contract.InstanceRead{}, err
	}
	r := &run{a: a, c: lambda.NewFromConfig(cfg), region: t.Region, in: contract.StepInput{Deploy: &contract.DeployInput{Aws: t.Aws}}}
	name := t.Function
	latest, err := r.c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if notFound(err) {
		return contract.InstanceRead{Gone: "function " + name + " no longer exists"}, nil
	} else if err != nil {
		return contract.InstanceRead{}, r.fail(err, "read function %s", name)
	}
	shares := map[string]float64{} // version → its share of the traffic
	var drift []string
	if t.Alias != "" {
		al, err := r.c.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String(name), Name: aws.String(t.Alias)})
		switch {
		case notFound(err):
			drift = append(drift, fmt.Sprintf("alias %s of function %s no longer exists", t.Alias, name))
		case err != nil:
			return contract.InstanceRead{}, r.fail(err, "read alias %s of function %s", t.Alias, name)
		default:
			rest := 1.0
			if al.RoutingConfig != nil {
				for v, w := range al.RoutingConfig.AdditionalVersionWeights {
					shares[v], rest = w, rest-w
				}
			}
			shares[aws.ToString(al.FunctionVersion)] = rest
		}
	}
	newest, err := r.latestVersion(ctx, name)
	if err != nil {
		return contract.InstanceRead{}, err
	}
	if len(shares) == 0 && newest != "" {
		shares[newest] = 1
	}
	var all []contract.Instance
	for _, v := range slices.SortedFunc(maps.Keys(shares), byNumber) {
		conf, err := r.c.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name), Qualifier: aws.String(v)})
		if err != nil {
			return contract.InstanceRead{}, r.fail(err, "read version %s of function %s", v, name)
		}
		all = append(all, contract.Instance{Name: name + ":" + v, Artifact: "version " + v, Node: fmt.Sprintf("%g%% of the traffic", shares[v]*100),
			Ready: conf.State == types.StateActive || conf.State == ""})
		if !strings.HasPrefix(aws.ToString(conf.Description), "gantry ") {
			drift = append(drift, fmt.Sprintf("function %s serves version %s, which Gantry did not publish", name, v))
		}
		if v == newest && aws.ToString(conf.CodeSha256) != aws.ToString(latest.CodeSha256) {
			drift = append(drift, fmt.Sprintf("the code of function %s changed outside Gantry: $LATEST differs from version %s, which Gantry published last", name, v))
		}
	}
	return contract.ReadOf(all, drift), nil
}

// byNumber orders versions by number ($LATEST, not a number, last).
func byNumber(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return x - y
}
