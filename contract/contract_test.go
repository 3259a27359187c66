package contract_test

import (
	"testing"

	"github.com/gantry-cd/gantry/contract"
)

// An artifact's name never shows a URL's credentials, and a registry host with a port is not
// read as a URL scheme.
func TestDeployArtifactString(t *testing.T) {
	for want, a := range map[string]*contract.DeployArtifact{
		"none":                                        nil,
		"s3://builds/shop/shop-1.0.tgz":               {Bucket: "builds", Key: "shop/shop-1.0.tgz"},
		"https://repo.example.com/shop-2.0.tgz":       {Type: "CustomArtifact", Image: "2.0", URL: "https://u:p@repo.example.com/shop-2.0.tgz?token=s3cr3t"},
		"registry.example.com:5000/shop:1.4@sha256:a": {Image: "registry.example.com:5000/shop:1.4@sha256:a"},
		"1.0": {Type: "CustomArtifact", Image: "1.0"},
	} {
		if got := a.String(); got != want {
			t.Errorf("%+v: %q, want %q", a, got, want)
		}
	}
}
