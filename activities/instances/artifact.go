package instances

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/activities/registry"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Artifacts resolves CustomArtifact sources whose versions a script lists.
type Artifacts struct {
	Secrets secrets.Resolver
	// WorkDir holds the script's folder while it runs; "" is the system temp directory.
	WorkDir string
}

// Resolve runs the source's fetchAllArtifacts script with its inputs as environment
// variables (Secret ones resolved and masked) and picks the version: the one named, which the
// list must hold, or the highest matching versionRegex (the whole version, compared as
// versions are). The version's attributes are its metadata. Failures are Verification
// failures naming what was looked for; the script's output is only in their message.
func (a *Artifacts) Resolve(ctx context.Context, in contract.CustomArtifactInput) (contract.CustomArtifactResolved, error) {
	sc := in.Script
	mask := &secrets.Masker{}
	script, err := secrets.Expand(ctx, a.Secrets, mask, sc.Script)
	if err != nil {
		return contract.CustomArtifactResolved{}, contract.Fail(contract.Unknown, "artifact %s: script: %v", in.Artifact, err)
	}
	var env []string
	for _, v := range sc.Inputs {
		val, err := secrets.Value(ctx, a.Secrets, mask, v.Type, v.Value)
		if err != nil {
			return contract.CustomArtifactResolved{}, contract.Fail(contract.Unknown, "artifact %s: input %s: %v", in.Artifact, v.Name, err)
		}
		env = append(env, v.Name+"="+val)
	}
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	b, last, err := runScript(runCtx, a.WorkDir, script, "HARNESS_ARTIFACT_RESULT_PATH", env, mask, func(string) {})
	switch {
	case ctx.Err() != nil:
		return contract.CustomArtifactResolved{}, ctx.Err()
	case err == errNoOutput:
		return contract.CustomArtifactResolved{}, contract.Fail(contract.Verification, "artifact %s: the script wrote nothing to $HARNESS_ARTIFACT_RESULT_PATH; last output: %s", in.Artifact, last)
	case err != nil:
		return contract.CustomArtifactResolved{}, contract.Fail(contract.Unknown, "artifact %s: the script failed (%v); last output: %s", in.Artifact, err, last)
	}
	versions, metadata, err := ParseArtifacts(b, sc.ArrayPath, sc.VersionPath, sc.Attributes)
	if err != nil {
		return contract.CustomArtifactResolved{}, contract.Fail(contract.Verification, "artifact %s: %s", in.Artifact, mask.Apply(err.Error()))
	}
	pick := -1
	switch {
	case sc.Version != "":
		pick = slices.Index(versions, sc.Version)
		if pick < 0 {
			return contract.CustomArtifactResolved{}, contract.Fail(contract.Verification, "artifact %s: version %s is not among the %d the script listed", in.Artifact, sc.Version, len(versions))
		}
	default:
		re, err := regexp.Compile("^(?:" + sc.VersionRegex + ")$")
		if err != nil {
			return contract.CustomArtifactResolved{}, contract.Fail(contract.Unknown, "artifact %s: versionRegex %q: %v", in.Artifact, sc.VersionRegex, err)
		}
		for i, v := range versions {
			if re.MatchString(v) && (pick < 0 || registry.CompareVersions(v, versions[pick]) > 0) {
				pick = i
			}
		}
		if pick < 0 {
			return contract.CustomArtifactResolved{}, contract.Fail(contract.Verification, "artifact %s: none of the %d versions the script listed matches %q (%s)",
				in.Artifact, len(versions), sc.VersionRegex, strings.Join(versions[:min(len(versions), 5)], ", "))
		}
	}
	return contract.CustomArtifactResolved{Version: versions[pick], Metadata: metadata[pick], Listed: len(versions)}, nil
}

// ParseArtifacts reads the artifacts of a script's JSON: the list at arrayPath, each one's
// version at versionPath and its attributes at their paths.
func ParseArtifacts(js []byte, arrayPath, versionPath string, attrs []plan.InstanceAttribute) ([]string, []map[string]any, error) {
	items, err := listAt(js, arrayPath, "artifactsArrayPath")
	if err != nil {
		return nil, nil, err
	}
	versions := make([]string, len(items))
	metadata := make([]map[string]any, len(items))
	for i, it := range items {
		v, err := dig(it, versionPath)
		if err != nil {
			return nil, nil, fmt.Errorf("artifact %d: versionPath %q: %v", i, versionPath, err)
		}
		versions[i] = fmt.Sprint(scalar(v))
		metadata[i] = map[string]any{}
		for _, a := range attrs {
			if v, err := dig(it, a.JSONPath); err == nil {
				metadata[i][a.Name] = scalar(v)
			}
		}
	}
	return versions, metadata, nil
}
