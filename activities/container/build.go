package container

import (
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/gantry-cd/gantry/activities/awsauth"
	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/stepspec"
)

// DefaultBuildKitImage is the image BuildAndPush steps run in when the worker names none
// (`go run ./hack/helper-image --buildkit REF` builds and pushes it).
const DefaultBuildKitImage = "ghcr.io/gantry-cd/gantry-buildkit:1"

// buildSpec is what the family builds and pushes, from either BuildAndPush type's spec:
// BuildAndPushDockerRegistry's repo, or BuildAndPushECR's account, region and imageName.
type buildSpec struct {
	ConnectorRef    string
	Repo            string
	Account         text
	Region          string
	ImageName       string
	RemoteCacheRepo string // or BuildAndPushECR's remoteCacheImage
	Tags            []text
	stepspec.BuildSettings
}

// pushToRegistry reads a BuildAndPushDockerRegistry step.
func pushToRegistry(sp stepspec.BuildAndPushSpec) buildSpec {
	return buildSpec{ConnectorRef: sp.ConnectorRef, Repo: sp.Repo, RemoteCacheRepo: sp.RemoteCacheRepo, Tags: sp.Tags, BuildSettings: sp.BuildSettings}
}

// pushToECR reads a BuildAndPushECR step.
func pushToECR(sp stepspec.BuildAndPushECRSpec) buildSpec {
	return buildSpec{ConnectorRef: sp.ConnectorRef, Account: sp.Account, Region: sp.Region, ImageName: sp.ImageName,
		RemoteCacheRepo: sp.RemoteCacheImage, Tags: sp.Tags, BuildSettings: sp.BuildSettings}
}

// buildOf makes a kind's build of a projection of the step type's spec S.
func buildOf[S any](project func(S) buildSpec) func(contract.StepInput) (buildSpec, error) {
	return func(in contract.StepInput) (buildSpec, error) {
		sp, err := decodeHelperSpec[S](in)
		return project(sp), err
	}
}

// built is what a build pushed: one image under several tags.
type built struct {
	image string // registry host and repository, without a tag
	tags  []string
}

// buildRequest is what the helper runs for a BuildAndPush step: `gantry-helper build` with
// buildctl's arguments, the push credentials and the plain-HTTP registries in its environment
// (on the exec stream, masked in the log).
func buildRequest(ctx context.Context, r secrets.Resolver, in contract.StepInput, mask *secrets.Masker) (wire.Request, built, error) {
	spec, err := kinds[in.Type].build(in)
	if err != nil {
		return wire.Request{}, built{}, err
	}
	reg, err := resolvePushTarget(ctx, r, in, spec)
	if err != nil {
		return wire.Request{}, built{}, err
	}
	out := built{image: reg.image}
	names := make([]string, 0, len(spec.Tags))
	for _, t := range spec.Tags {
		out.tags = append(out.tags, string(t))
		names = append(names, out.image+":"+string(t))
	}
	contextDir := workspacePath(spec.Context, ".")
	dockerfile := workspacePath(spec.Dockerfile, "Dockerfile")
	args := []string{"--frontend", "dockerfile.v0", "--local", "context=" + contextDir,
		"--local", "dockerfile=" + path.Dir(dockerfile), "--opt", "filename=" + path.Base(dockerfile)}
	if spec.Target != "" {
		args = append(args, "--opt", "target="+spec.Target)
	}
	for _, k := range sortedKeys(spec.BuildArgs) {
		args = append(args, "--opt", "build-arg:"+k+"="+string(spec.BuildArgs[k]))
	}
	for _, k := range sortedKeys(spec.Labels) {
		args = append(args, "--opt", "label:"+k+"="+string(spec.Labels[k]))
	}
	if c := spec.RemoteCacheRepo; c != "" {
		args = append(args, "--import-cache", "type=registry,ref="+c, "--export-cache", "type=registry,mode=max,ref="+c)
	}
	for _, c := range spec.CacheFrom {
		args = append(args, "--import-cache", c)
	}
	if spec.CacheTo != "" {
		args = append(args, "--export-cache", spec.CacheTo)
	}
	output := fmt.Sprintf("type=image,%q,push=true", "name="+strings.Join(names, ","))
	config := ""
	if reg.plain {
		output += ",registry.insecure=true"
		config = fmt.Sprintf("[registry.%q]\n  http = true\n  insecure = true\n", reg.host)
	}
	args = append(args, "--output", output)
	creds := map[string][2]string{}
	if reg.password != "" {
		mask.Add(reg.password)
		creds[reg.host] = [2]string{reg.user, reg.password}
	}
	auth := dockerConfig(creds)
	if auth == nil {
		auth = []byte(`{"auths":{}}`)
	}
	env := map[string]string{}
	for k, v := range in.Env {
		env[k] = v
	}
	env[wire.BuildConfigEnv], env[wire.BuildAuthEnv] = config, string(auth)
	req := wire.Request{Entrypoint: append([]string{wire.Helper, "build"}, args...), Dir: wire.Workspace,
		Env: env, Outputs: []string{"digest"}}
	return req, out, nil
}

// pushTarget is where a build pushes and with which credentials.
type pushTarget struct {
	host, image    string // the registry's host; the repository on it, without a tag
	plain          bool   // the registry speaks plain HTTP
	user, password string
}

// resolvePushTarget resolves a build's registry: the DockerRegistry connector's, or the ECR
// registry of the account, logged in with an authorization token of the Aws connector.
func resolvePushTarget(ctx context.Context, sr secrets.Resolver, in contract.StepInput, spec buildSpec) (pushTarget, error) {
	if kinds[in.Type].ecr {
		return ecrTarget(ctx, sr, in, spec)
	}
	r, ok := in.Pod.Pod.Pod.Registries[spec.ConnectorRef]
	if !ok {
		return pushTarget{}, contract.Fail(contract.Unknown, "%s: connector %q was not resolved before the run", in.Type, spec.ConnectorRef)
	}
	t := pushTarget{host: registryHost(r), image: imageName(r, spec.Repo), plain: strings.HasPrefix(r.URL, "http://")}
	if r.PasswordRef != "" {
		var err error
		if t.user, t.password, err = secrets.Login(ctx, sr, r.ID, r.Username, r.UsernameRef, r.PasswordRef); err != nil {
			return t, err
		}
	}
	return t, nil
}

// ecrTarget logs in to the account's ECR registry in the step's region.
func ecrTarget(ctx context.Context, sr secrets.Resolver, in contract.StepInput, spec buildSpec) (pushTarget, error) {
	conn, ok := in.Pod.Pod.Pod.Aws[spec.ConnectorRef]
	if !ok {
		return pushTarget{}, contract.Fail(contract.Unknown, "BuildAndPushECR: connector %q was not resolved before the run", spec.ConnectorRef)
	}
	cfg, err := awsauth.Config(ctx, conn, spec.Region, sr, nil)
	if err != nil {
		return pushTarget{}, err
	}
	in2 := &ecr.GetAuthorizationTokenInput{}
	if spec.Account != "" {
		in2.RegistryIds = []string{string(spec.Account)}
	}
	out, err := ecr.NewFromConfig(cfg).GetAuthorizationToken(ctx, in2)
	if err != nil {
		return pushTarget{}, awsauth.Fail(err, "BuildAndPushECR: log in to ECR of account %s in %s with connector %s", spec.Account, spec.Region, spec.ConnectorRef)
	}
	if len(out.AuthorizationData) == 0 || out.AuthorizationData[0].AuthorizationToken == nil || out.AuthorizationData[0].ProxyEndpoint == nil {
		return pushTarget{}, contract.Fail(contract.Unknown, "BuildAndPushECR: ECR returned no authorization token")
	}
	d := out.AuthorizationData[0]
	raw, err := base64.StdEncoding.DecodeString(*d.AuthorizationToken)
	user, pw, ok := strings.Cut(string(raw), ":")
	if err != nil || !ok {
		return pushTarget{}, contract.Fail(contract.Authentication, "BuildAndPushECR: ECR's authorization token is not user:password")
	}
	endpoint := *d.ProxyEndpoint
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://"), "/")
	return pushTarget{host: host, image: host + "/" + strings.TrimPrefix(spec.ImageName, "/"), plain: strings.HasPrefix(endpoint, "http://"),
		user: user, password: pw}, nil
}

// imageName is the repository a build pushes to: repo as given when it names its registry,
// else on the connector's registry (Docker Hub's repositories need no host).
func imageName(r plan.RegistryConnector, repo string) string {
	if first, _, ok := strings.Cut(repo, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return repo
	}
	host := registryHost(r)
	if strings.HasPrefix(host, "https://index.docker.io") {
		return "docker.io/" + repo
	}
	return host + "/" + repo
}

// workspacePath is a path of the spec relative to the workspace (absolute ones stay).
func workspacePath(p, def string) string {
	if p == "" {
		p = def
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wire.Workspace, p)
}

func sortedKeys(m map[string]text) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// publishedImages are a build's outputs as the reference exposes them under the step's
// artifact_<id>: stepArtifacts.publishedImageArtifacts, one per tag.
func publishedImages(b built, digest string) map[string]any {
	var images []any
	for _, t := range b.tags {
		images = append(images, map[string]any{"imageName": b.image, "tag": t, "digest": digest, "url": b.image + ":" + t})
	}
	return map[string]any{"stepArtifacts": map[string]any{"publishedImageArtifacts": images}}
}
