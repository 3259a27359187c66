package ami_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/ami"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/plan"
)

// An image is found by name (version) or as the newest whose name matches versionRegex, among
// the available private images with the tags and filters; public and failed images are not
// candidates; no match is a Verification failure naming what was looked for.
func TestResolve(t *testing.T) {
	fake := awsfake.Start()
	defer fake.Close()
	t.Setenv("AWS_ENDPOINT_URL_EC2", fake.URL)
	for _, im := range []awsfake.Image{
		{ID: "ami-01", Name: "shop-1.0", Created: "2026-01-01T00:00:00.000Z", Tags: map[string]string{"app": "shop"}},
		{ID: "ami-02", Name: "shop-1.1", Created: "2026-02-01T00:00:00.000Z", Tags: map[string]string{"app": "shop", "build": "42"}},
		{ID: "ami-03", Name: "shop-1.2", Created: "2026-03-01T00:00:00.000Z", Tags: map[string]string{"app": "shop"}, State: "failed"},
		{ID: "ami-04", Name: "shop-1.3", Created: "2026-04-01T00:00:00.000Z", Tags: map[string]string{"app": "shop"}, Public: true},
		{ID: "ami-05", Name: "shop-2.0", Created: "2026-05-01T00:00:00.000Z", Tags: map[string]string{"app": "other"}},
	} {
		fake.AddImage(im)
	}
	r := &ami.Resolver{Secrets: awsfake.Secrets{"k": "secret"}}
	resolve := func(a plan.AmiArtifact) (contract.AmiResolved, error) {
		a.Connector = plan.AwsConnector{ID: "aws", Credential: "ManualConfig", AccessKey: "AKIDAMI", SecretKeyRef: "k"}
		a.Region = "eu-west-1"
		return r.Resolve(context.Background(), contract.AmiResolveInput{ID: "image", Artifact: a})
	}
	shop := []plan.NameValue{{Name: "app", Value: "shop"}}
	if got, err := resolve(plan.AmiArtifact{Tags: shop, Version: "shop-1.0"}); err != nil || got.AmiID != "ami-01" {
		t.Fatalf("by name: %+v %v", got, err)
	}
	got, err := resolve(plan.AmiArtifact{Tags: shop, VersionRegex: "shop-1.*"})
	if err != nil || got.AmiID != "ami-02" || got.Version != "shop-1.1" || got.Metadata["build"] != "42" || got.Metadata["ownerId"] != "123456789012" {
		t.Fatalf("newest match: %+v %v", got, err)
	}
	if got, err = resolve(plan.AmiArtifact{VersionRegex: "shop-*", Filters: []plan.NameValue{{Name: "ami-image-id", Value: "ami-05"}}}); err != nil || got.AmiID != "ami-05" {
		t.Fatalf("filter: %+v %v", got, err)
	}
	_, err = resolve(plan.AmiArtifact{Tags: shop, Version: "shop-1.3"})
	if f := contract.Classify(err); f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, `no available image named "shop-1.3"`) {
		t.Fatalf("a public image: %+v", f)
	}
	if _, err = resolve(plan.AmiArtifact{VersionRegex: "shop-[", Tags: shop}); err == nil || !strings.Contains(err.Error(), "versionRegex") {
		t.Fatalf("a broken versionRegex: %v", err)
	}
}
