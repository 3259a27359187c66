package container

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/container/wire"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// A BuildAndPush step becomes `gantry-helper build` with buildctl's arguments: the context and
// Dockerfile below the workspace, target, build args and labels in order, every tag in one
// push, plain HTTP for an http:// registry, and the credentials in the environment only.
func TestBuildRequest(t *testing.T) {
	t.Setenv(secrets.EnvName("reg_pw"), "s3cret")
	spec, _ := json.Marshal(map[string]any{"connectorRef": "reg", "repo": "team/app", "tags": []any{"1", 2},
		"context": "app", "dockerfile": "build/Dockerfile.prod", "target": "runtime",
		"buildArgs": map[string]any{"B": "2", "A": "1"}, "labels": map[string]any{"org": "acme"}, "remoteCacheRepo": "reg.local:5000/cache"})
	pod := &contract.PodStep{Pod: contract.PodInput{Pod: plan.Pod{Registries: map[string]plan.RegistryConnector{
		"reg": {ID: "reg", URL: "http://reg.local:5000", Username: "ci", PasswordRef: "reg_pw"}}}}}
	mask := &secrets.Masker{}
	req, out, err := buildRequest(context.Background(), &secrets.Store{}, contract.StepInput{Type: "BuildAndPushDockerRegistry", Spec: spec, Pod: pod,
		Env: map[string]string{"CI": "true"}}, mask)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(req.Entrypoint, " ")
	for _, want := range []string{
		wire.Helper + " build --frontend dockerfile.v0 --local context=/harness/app --local dockerfile=/harness/build --opt filename=Dockerfile.prod",
		"--opt target=runtime --opt build-arg:A=1 --opt build-arg:B=2 --opt label:org=acme",
		"--import-cache type=registry,ref=reg.local:5000/cache --export-cache type=registry,mode=max,ref=reg.local:5000/cache",
		`--output type=image,"name=reg.local:5000/team/app:1,reg.local:5000/team/app:2",push=true,registry.insecure=true`,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("arguments %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "s3cret") || !strings.Contains(req.Env[wire.BuildAuthEnv], `"password":"s3cret"`) ||
		!strings.Contains(req.Env[wire.BuildConfigEnv], `[registry."reg.local:5000"]`) || req.Env["CI"] != "true" {
		t.Errorf("environment %v", req.Env)
	}
	if mask.Apply("pw s3cret") == "pw s3cret" {
		t.Error("the password is not masked")
	}
	if out.image != "reg.local:5000/team/app" || strings.Join(out.tags, ",") != "1,2" {
		t.Errorf("built %+v", out)
	}
}

// RunTests runs its build tool with args between preCommand and postCommand.
func TestRunTestsCommand(t *testing.T) {
	spec, _ := json.Marshal(map[string]any{"language": "Java", "buildTool": "Maven", "args": "test -B", "preCommand": "echo pre",
		"postCommand": "echo post", "shell": "Sh", "reports": map[string]any{"type": "JUnit", "spec": map[string]any{"paths": []any{"target/*.xml"}}}})
	got, err := runTestsCommand(contract.StepInput{Type: "RunTests", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if got.Command != "echo pre\nmvn test -B\necho post" || got.Shell != "Sh" || got.Reports == nil || got.Reports.Spec.Paths[0] != "target/*.xml" {
		t.Errorf("%+v", got)
	}
}
