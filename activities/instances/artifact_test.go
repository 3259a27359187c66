package instances

import (
	"context"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// A fetchAllArtifacts script runs with its inputs (a Secret one resolved, masked in failures);
// the version named must be listed, a versionRegex picks the highest matching version (1.10
// above 1.9), and the picked one's attributes are its metadata.
func TestResolveCustomArtifact(t *testing.T) {
	a := &Artifacts{Secrets: secrets.Map{"repo_token": "s3cr3t"}, WorkDir: t.TempDir()}
	script := plan.CustomArtifactScript{
		Script: `test "$TOKEN" = s3cr3t || { echo "bad token $TOKEN"; exit 1; }
cat > "$HARNESS_ARTIFACT_RESULT_PATH" <<JSON
{"builds": [{"v": "1.9", "link": "https://repo/$REPO/1.9.tgz"}, {"v": "1.10", "link": "https://repo/$REPO/1.10.tgz"}, {"v": "2.0-rc1", "link": "x"}]}
JSON`,
		Inputs:    []plan.Variable{{Name: "REPO", Type: "String", Value: "shop"}, {Name: "TOKEN", Type: "Secret", Value: "repo_token"}},
		ArrayPath: "builds", VersionPath: "v", Attributes: []plan.InstanceAttribute{{Name: "url", JSONPath: "link"}},
	}
	resolve := func(mod func(*plan.CustomArtifactScript)) (contract.CustomArtifactResolved, error) {
		sc := script
		mod(&sc)
		return a.Resolve(context.Background(), contract.CustomArtifactInput{Artifact: "pkg", Script: sc})
	}
	got, err := resolve(func(sc *plan.CustomArtifactScript) { sc.VersionRegex = `1\..*` })
	if err != nil || got.Version != "1.10" || got.Metadata["url"] != "https://repo/shop/1.10.tgz" || got.Listed != 3 {
		t.Errorf("regex: %+v, %v", got, err)
	}
	if got, err := resolve(func(sc *plan.CustomArtifactScript) { sc.Version = "1.9" }); err != nil || got.Metadata["url"] != "https://repo/shop/1.9.tgz" {
		t.Errorf("version: %+v, %v", got, err)
	}
	for name, c := range map[string]struct {
		mod  func(*plan.CustomArtifactScript)
		want string
	}{
		"not listed":    {func(sc *plan.CustomArtifactScript) { sc.Version = "3.0" }, "version 3.0 is not among the 3"},
		"no match":      {func(sc *plan.CustomArtifactScript) { sc.VersionRegex = "9.*" }, `none of the 3 versions the script listed matches "9.*"`},
		"wrong path":    {func(sc *plan.CustomArtifactScript) { sc.Version, sc.ArrayPath = "1.9", "items" }, `artifactsArrayPath "items": no field items`},
		"no output":     {func(sc *plan.CustomArtifactScript) { sc.Version, sc.Script = "1.9", "echo hello" }, "wrote nothing to $HARNESS_ARTIFACT_RESULT_PATH; last output: hello"},
		"script fails":  {func(sc *plan.CustomArtifactScript) { sc.Version, sc.Inputs = "1.9", sc.Inputs[:1] }, "last output: bad token"},
		"secret masked": {func(sc *plan.CustomArtifactScript) { sc.Version, sc.Script = "1.9", "echo token $TOKEN; exit 3" }, "token ***"},
	} {
		_, err := resolve(c.mod)
		if f := contract.Classify(err); err == nil || !strings.Contains(f.Message, c.want) || strings.Contains(f.Message, "s3cr3t") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
