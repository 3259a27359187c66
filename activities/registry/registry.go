// Package registry resolves a service's image artifact against its registry (a DockerRegistry
// connector) with go-containerregistry: a tag to its digest, or the highest tag matching a
// regular expression, so that a stage deploys one image by digest and a rerun the same one.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// Resolver resolves artifacts. Safe for concurrent use.
type Resolver struct {
	Secrets secrets.Resolver
}

// Activity is the ResolveArtifact activity.
func (r *Resolver) Activity(ctx context.Context, in contract.ResolveInput) (contract.Resolved, error) {
	return r.Resolve(ctx, &in.Artifact)
}

// Resolve returns the artifact's tag, digest and image reference. A pinned digest is checked
// to exist; otherwise the tag (or the highest tag matching TagRegex, compared as versions) is
// resolved. Failures are step failures: Authentication, Connectivity, or Verification (no such
// repository, tag or digest; no tag matches), naming the image, never a credential.
func (r *Resolver) Resolve(ctx context.Context, a *plan.Artifact) (contract.Resolved, error) {
	repo, err := Repository(a.Connector, a.ImagePath)
	if err != nil {
		return contract.Resolved{}, contract.Fail(contract.Verification, "artifact %s: %v", a.ID, err)
	}
	ro, err := Options(ctx, r.Secrets, a.Connector)
	if err != nil {
		return contract.Resolved{}, err
	}
	tag := a.Tag
	if a.Digest == "" && (a.TagRegex != "" || tag == "") {
		if tag, err = highestTag(repo, a.TagRegex, ro); err != nil {
			return contract.Resolved{}, err
		}
	}
	var ref name.Reference
	if a.Digest != "" {
		ref = repo.Digest(a.Digest)
	} else {
		ref = repo.Tag(tag)
	}
	desc, err := remote.Head(ref, ro...)
	if err != nil {
		return contract.Resolved{}, classify(err, ref.String())
	}
	out := contract.Resolved{Tag: tag, Digest: desc.Digest.String()}
	out.Image = repo.String() + "@" + out.Digest
	if tag != "" {
		out.Image = repo.String() + ":" + tag + "@" + out.Digest
	}
	return out, nil
}

// versionTag is a tag that reads as a version (1.4.2, v2, 20240501-3): without a tag or a
// pattern, the latest is the highest of these, and `latest` only when the repository has none.
var versionTag = regexp.MustCompile(`^v?\d+([._-].*)?$`)

// highestTag lists the repository's tags and returns the highest matching pattern (the whole
// tag must match), comparing dot-, dash- and underscore-separated parts numerically where both
// are numbers: 1.10 is above 1.9. An empty pattern asks for the latest tag.
func highestTag(repo name.Repository, pattern string, ro []remote.Option) (string, error) {
	re := versionTag
	if pattern != "" {
		var err error
		if re, err = regexp.Compile("^(?:" + pattern + ")$"); err != nil {
			return "", contract.Fail(contract.Verification, "tagRegex %q: %v", pattern, err)
		}
	}
	tags, err := remote.List(repo, ro...)
	if err != nil {
		return "", classify(err, repo.String())
	}
	var matching []string
	for _, t := range tags {
		if re.MatchString(t) {
			matching = append(matching, t)
		}
	}
	switch {
	case len(matching) > 0:
		return slices.MaxFunc(matching, CompareVersions), nil
	case pattern == "" && slices.Contains(tags, "latest"):
		return "latest", nil
	case pattern == "":
		return "", contract.Fail(contract.Verification, "%s: no tag to deploy: the artifact names none and the repository has no version tag nor `latest` (%d tags)", repo, len(tags))
	}
	return "", contract.Fail(contract.Verification, "%s: no tag matches %q (%d tags)", repo, pattern, len(tags))
}

// CompareVersions orders versions (tags, a custom artifact's versions) by their dot-, dash- and
// underscore-separated parts, numerically where both are numbers: 1.10 is above 1.9.
func CompareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '_' })
	}
	pa, pb := split(a), split(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			if na < nb {
				return -1
			}
			return 1
		case (ea != nil || eb != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}

// Repository names the repository at path in the connector's registry. The URL may lack a
// scheme or use oci:// (HTTPS either way); http:// reaches a plain-HTTP registry; a path in the
// URL prefixes the repository (except /v2/, the API's root).
func Repository(c *plan.RegistryConnector, path string) (name.Repository, error) {
	raw := c.URL
	if rest, ok := strings.CutPrefix(raw, "oci://"); ok {
		raw = "https://" + rest
	} else if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return name.Repository{}, fmt.Errorf("connector %s: registry URL %q is not a URL", c.ID, c.URL)
	}
	var opts []name.Option
	if u.Scheme == "http" {
		opts = append(opts, name.Insecure)
	}
	host := u.Host
	if host == "index.docker.io" || host == "registry-1.docker.io" || host == "hub.docker.com" {
		host = name.DefaultRegistry
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix == "v2" || prefix == "v1" { // the registry API's root, as Docker registry URLs often end
		prefix = ""
	}
	full := prefix + "/" + strings.Trim(path, "/")
	repo, err := name.NewRepository(host+"/"+strings.Trim(full, "/"), opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("path %q: %v", path, err)
	}
	return repo, nil
}

// Options are the remote options reaching the connector's registry with its credentials
// (anonymous without a password secret).
func Options(ctx context.Context, r secrets.Resolver, c *plan.RegistryConnector) ([]remote.Option, error) {
	auth := authn.Anonymous
	if c.PasswordRef != "" {
		user, pw, err := secrets.Login(ctx, r, c.ID, c.Username, c.UsernameRef, c.PasswordRef)
		if err != nil {
			return nil, err
		}
		auth = &authn.Basic{Username: user, Password: pw}
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth)}, nil
}

// Classify turns a registry call's error about what into a step failure with its category.
func Classify(err error, what string) error {
	return classify(err, what)
}

func classify(err error, what string) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return contract.Fail(contract.Authentication, "%s: the registry refused the connector's credentials (%d)", what, te.StatusCode)
		case http.StatusNotFound:
			return contract.Fail(contract.Verification, "%s: not found in the registry", what)
		}
		return contract.Fail(contract.Unknown, "%s: the registry answered %d", what, te.StatusCode)
	}
	var netErr net.Error
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return contract.Fail(contract.Connectivity, "%s: cannot reach the registry: %v", what, err)
	}
	return contract.Fail(contract.Unknown, "%s: %v", what, err)
}
