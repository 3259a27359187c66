package container

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gantry-cd/gantry/activities"
	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/plan"
)

// DefaultBuildKitImage is the image BuildAndPush steps run in when the worker names none
// (hack/buildkit-image builds and pushes it).
const DefaultBuildKitImage = "ghcr.io/gantry-cd/gantry-buildkit:1"

// buildStep says whether a step type builds an image with BuildKit in its container.
func buildStep(typ string) bool { return typ == "BuildAndPushDockerRegistry" }

// buildSpec is a BuildAndPushDockerRegistry step's rendered spec.
type buildSpec struct {
	ConnectorRef    string          `json:"connectorRef"`
	Repo            string          `json:"repo"`
	Tags            []text          `json:"tags"`
	Context         string          `json:"context"`
	Dockerfile      string          `json:"dockerfile"`
	Target          string          `json:"target"`
	Labels          map[string]text `json:"labels"`
	BuildArgs       map[string]text `json:"buildArgs"`
	CacheFrom       []string        `json:"cacheFrom"`
	CacheTo         string          `json:"cacheTo"`
	RemoteCacheRepo string          `json:"remoteCacheRepo"`
}

// built is what a build pushed: one image under several tags.
type built struct {
	image string // registry host and repository, without a tag
	tags  []string
}

// buildRequest is what the helper runs for a BuildAndPush step: `gantry-helper build` with
// buildctl's arguments, the push credentials and the plain-HTTP registries in its environment
// (on the exec stream, masked in the log).
func (a *Activity) buildRequest(ctx context.Context, in activities.StepInput, mask *secrets.Masker) (wire.Request, built, error) {
	var spec buildSpec
	if err := json.Unmarshal(in.Spec, &spec); err != nil {
		return wire.Request{}, built{}, activities.Fail(activities.Unknown, "%s spec: %v", in.Type, err)
	}
	r, ok := in.Pod.Pod.Pod.Registries[spec.ConnectorRef]
	if !ok {
		return wire.Request{}, built{}, activities.Fail(activities.Unknown, "%s: connector %q was not resolved before the run", in.Type, spec.ConnectorRef)
	}
	if len(spec.Tags) == 0 {
		return wire.Request{}, built{}, activities.Fail(activities.Unknown, "%s: no tags to push", in.Type)
	}
	out := built{image: imageName(r, spec.Repo)}
	names := make([]string, 0, len(spec.Tags))
	for _, t := range spec.Tags {
		out.tags = append(out.tags, string(t))
		names = append(names, out.image+":"+string(t))
	}
	context := workspacePath(spec.Context, ".")
	dockerfile := workspacePath(spec.Dockerfile, "Dockerfile")
	args := []string{"--frontend", "dockerfile.v0", "--local", "context=" + context,
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
	host := registryHost(r)
	plain := strings.HasPrefix(r.URL, "http://")
	output := fmt.Sprintf("type=image,%q,push=true", "name="+strings.Join(names, ","))
	if plain {
		output += ",registry.insecure=true"
	}
	args = append(args, "--output", output)

	config := ""
	if plain {
		config = fmt.Sprintf("[registry.%q]\n  http = true\n  insecure = true\n", host)
	}
	creds := map[string][2]string{}
	if r.PasswordRef != "" {
		user, pw, err := a.registryLogin(ctx, r)
		if err != nil {
			return wire.Request{}, built{}, err
		}
		mask.Add(pw)
		creds[host] = [2]string{user, pw}
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

// registryLogin resolves a registry connector's user name and password.
func (a *Activity) registryLogin(ctx context.Context, r plan.RegistryConnector) (string, string, error) {
	user := r.Username
	if r.UsernameRef != "" {
		u, err := a.Secrets.Resolve(ctx, r.UsernameRef)
		if err != nil {
			return "", "", activities.Fail(activities.Authentication, "connector %s: username secret %q: %v", r.ID, r.UsernameRef, err)
		}
		user = u
	}
	pw, err := a.Secrets.Resolve(ctx, r.PasswordRef)
	if err != nil {
		return "", "", activities.Fail(activities.Authentication, "connector %s: password secret %q: %v", r.ID, r.PasswordRef, err)
	}
	return user, pw, nil
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
