package registry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/plan"
)

func artifact(r *registrytest.Registry) *plan.Artifact {
	return &plan.Artifact{ID: "web", Type: "DockerRegistry", ImagePath: "team/web", Tag: "1.2.0",
		Connector: &plan.RegistryConnector{ID: "registry", URL: r.URL, Username: registrytest.Username, PasswordRef: "registry_token"}}
}

func category(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

// A tag resolves to its digest; the highest tag matching a pattern is picked by version; a
// pinned digest is checked and kept though the tag has moved.
func TestResolve(t *testing.T) {
	reg := registrytest.Start(t)
	r := &Resolver{Secrets: secrets.Map{"registry_token": registrytest.Password}}
	ctx := context.Background()
	first := reg.Push(t, "team/web", "1.2.0")
	reg.Push(t, "team/web", "1.9.0")
	newest := reg.Push(t, "team/web", "1.10.0")
	reg.Push(t, "team/web", "latest")

	got, err := r.Resolve(ctx, artifact(reg))
	if err != nil || got.Digest != first || got.Image != reg.Host+"/team/web:1.2.0@"+first {
		t.Fatalf("tag: %+v %v", got, err)
	}
	a := artifact(reg)
	a.Tag, a.TagRegex = "", `1\.\d+\.\d+`
	if got, err := r.Resolve(ctx, a); err != nil || got.Tag != "1.10.0" || got.Digest != newest {
		t.Errorf("tagRegex: %+v %v, want 1.10.0", got, err)
	}
	a.Tag, a.TagRegex = "", ""
	if got, err := r.Resolve(ctx, a); err != nil || got.Tag != "1.10.0" || got.Digest != newest {
		t.Errorf("no tag: %+v %v, want the latest version, 1.10.0", got, err)
	}
	reg.Push(t, "team/api", "latest")
	reg.Push(t, "team/api", "main")
	a.ImagePath = "team/api"
	if got, err := r.Resolve(ctx, a); err != nil || got.Tag != "latest" {
		t.Errorf("no tag, no version tags: %+v %v, want latest", got, err)
	}
	moved := reg.Push(t, "team/web", "1.2.0") // the tag now names another image
	a = artifact(reg)
	a.Digest = first
	if got, err := r.Resolve(ctx, a); err != nil || got.Digest != first || got.Tag != "1.2.0" {
		t.Errorf("pinned: %+v %v", got, err)
	}
	if got, _ := r.Resolve(ctx, artifact(reg)); got.Digest != moved {
		t.Errorf("the tag resolved to %s after it moved, want %s", got.Digest, moved)
	}
}

// Each failure has its category and names the image, never the token.
func TestResolveFailures(t *testing.T) {
	reg := registrytest.Start(t)
	reg.Push(t, "team/web", "1.2.0")
	reg.Push(t, "team/docs", "main")
	r := &Resolver{Secrets: secrets.Map{"registry_token": registrytest.Password, "wrong": "not-the-token"}}
	cases := []struct {
		name   string
		change func(*plan.Artifact)
		want   contract.Category
		says   string
	}{
		{"bad token", func(a *plan.Artifact) { a.Connector.PasswordRef = "wrong" }, contract.Authentication, "refused"},
		{"no tag", func(a *plan.Artifact) { a.Tag = "9.9.9" }, contract.Verification, "team/web:9.9.9: not found"},
		{"no match", func(a *plan.Artifact) { a.Tag, a.TagRegex = "", `2\..*` }, contract.Verification, "no tag matches"},
		{"no tag to deploy", func(a *plan.Artifact) { a.Tag, a.ImagePath = "", "team/docs" }, contract.Verification, "no tag to deploy"},
		{"no repository", func(a *plan.Artifact) { a.ImagePath = "team/api" }, contract.Verification, "team/api"},
		{"unreachable", func(a *plan.Artifact) { a.Connector.URL = "http://127.0.0.1:1" }, contract.Connectivity, "cannot reach"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := artifact(reg)
			c.change(a)
			_, err := r.Resolve(context.Background(), a)
			if err == nil {
				t.Fatal("resolved")
			}
			if got := category(err); got != string(c.want) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v, want %s saying %q", got, err, c.want, c.says)
			}
			if strings.Contains(err.Error(), registrytest.Password) || strings.Contains(err.Error(), "not-the-token") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"1.9.0", "1.10.0", true}, {"1.2", "1.2.1", true}, {"v1-b", "v1-a", false}, {"build_7", "build_12", true}} {
		if got := CompareVersions(c.a, c.b) < 0; got != c.less {
			t.Errorf("%s < %s = %v", c.a, c.b, got)
		}
	}
}
