// Package charts pulls Helm charts from chart repositories: an Http store's repository (one
// serving index.yaml, as `helm repo add` reads it) with the Helm SDK's index, and an
// OciHelmChart store's OCI registry with go-containerregistry, both with the connector's
// credentials from the secret resolver. The chart's version may be exact, a semver constraint
// or empty (the latest stable one); the version pulled, and for OCI the manifest's digest, are
// returned so that a rerun pulls the same chart.
package charts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/registry"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/plan"
)

// ChartLayer is the media type of a chart's archive in an OCI registry.
const ChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// Puller pulls charts. Safe for concurrent use.
type Puller struct {
	Secrets secrets.Resolver
	// Client reaches Http chart repositories (default: http.DefaultClient).
	Client *http.Client
}

// Activity is the FetchChart activity.
func (p *Puller) Activity(ctx context.Context, in contract.ChartInput) (contract.Fetched, error) {
	return p.Pull(ctx, &in.Chart)
}

// Pull returns the chart's files (below its name), its values files and its metadata.
// Failures are step failures: Authentication, Connectivity, or Verification (no repository,
// chart, version or values file; a corrupt archive), naming the repository, chart and
// version, never a credential.
func (p *Puller) Pull(ctx context.Context, c *plan.ChartRepo) (contract.Fetched, error) {
	var archive []byte
	var out contract.Fetched
	var err error
	if c.Type == "OciHelmChart" {
		archive, out.Digest, err = p.pullOCI(ctx, c)
	} else {
		archive, err = p.pullHTTP(ctx, c)
	}
	if err != nil {
		return contract.Fetched{}, err
	}
	where := fmt.Sprintf("chart %s from %s", c.Name, redact(c.Connector.URL))
	files, err := unpack(archive)
	if err != nil {
		return contract.Fetched{}, contract.Fail(contract.Verification, "%s: not a chart archive: %v", where, err)
	}
	total := 0
	for _, f := range files {
		total += len(f.Text)
		out.Files = append(out.Files, plan.File{Path: path.Join(c.Name, f.Path), Text: f.Text})
		if f.Path == "Chart.yaml" {
			var meta contract.ChartMeta
			if err := yaml.Unmarshal([]byte(f.Text), &meta); err != nil {
				return contract.Fetched{}, contract.Fail(contract.Verification, "%s: Chart.yaml: %v", where, err)
			}
			out.Chart = &meta
		}
	}
	if out.Chart == nil {
		return contract.Fetched{}, contract.Fail(contract.Verification, "%s: the archive has no Chart.yaml", where)
	}
	if total > plan.MaxManifestBytes {
		return contract.Fetched{}, contract.Fail(contract.Verification, "%s %s: %d bytes unpacked, above the %d a run carries", where, out.Chart.Version, total, plan.MaxManifestBytes)
	}
	for _, v := range c.ValuesPaths {
		want := path.Join(c.Name, strings.TrimPrefix(path.Clean("/"+v), "/"))
		i := 0
		for i < len(out.Files) && out.Files[i].Path != want {
			i++
		}
		if i == len(out.Files) {
			return contract.Fetched{}, contract.Fail(contract.Verification, "%s %s: no values file %s in the chart", where, out.Chart.Version, v)
		}
		out.Values = append(out.Values, out.Files[i])
	}
	return out, nil
}

// unpack reads a chart archive's files, its packaged dependencies unpacked (see
// manifests.UnpackDependency).
func unpack(archive []byte) ([]manifests.File, error) {
	files, err := loader.LoadArchiveFiles(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	var out []manifests.File
	for _, f := range files {
		inner, err := manifests.UnpackDependencyFiles(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
	}
	return out, nil
}

// pullHTTP reads the repository's index, picks the version and downloads its archive, checking
// the digest the index records.
func (p *Puller) pullHTTP(ctx context.Context, c *plan.ChartRepo) ([]byte, error) {
	base := strings.TrimSuffix(c.Connector.URL, "/")
	user, pw := "", ""
	if c.Connector.PasswordRef != "" {
		var err error
		if user, pw, err = secrets.Login(ctx, p.Secrets, c.Connector.ID, c.Connector.Username, c.Connector.UsernameRef, c.Connector.PasswordRef); err != nil {
			return nil, err
		}
	}
	index, err := p.get(ctx, base+"/index.yaml", base, user, pw)
	if err != nil {
		return nil, err
	}
	var idx repo.IndexFile
	if err := yaml.Unmarshal(index, &idx); err != nil {
		return nil, contract.Fail(contract.Verification, "%s/index.yaml: not a chart repository index: %v", redact(base), err)
	}
	idx.SortEntries()
	cv, err := idx.Get(c.Name, c.Version)
	if err != nil || len(cv.URLs) == 0 {
		return nil, contract.Fail(contract.Verification, "%s: no chart %s at version %s (%s)", redact(base), c.Name, versionText(c.Version), available(idx.Entries[c.Name]))
	}
	if c.Version != "" && c.Version != cv.Version && !isConstraint(c.Version) {
		return nil, contract.Fail(contract.Verification, "%s: no chart %s at version %s", redact(base), c.Name, c.Version)
	}
	ref, err := repo.ResolveReferenceURL(base+"/", cv.URLs[0])
	if err != nil {
		return nil, contract.Fail(contract.Verification, "%s: chart %s %s: URL %q: %v", redact(base), c.Name, cv.Version, cv.URLs[0], err)
	}
	archive, err := p.get(ctx, ref, base, user, pw)
	if err != nil {
		return nil, err
	}
	if cv.Digest != "" {
		sum := sha256.Sum256(archive)
		if got := hex.EncodeToString(sum[:]); got != cv.Digest {
			return nil, contract.Fail(contract.Verification, "%s: chart %s %s: the archive's digest is %s, the index says %s", redact(base), c.Name, cv.Version, got, cv.Digest)
		}
	}
	c.Version = cv.Version
	return archive, nil
}

// get fetches u, sending the credentials only to the repository's own host (as Helm does
// unless told to pass them on).
func (p *Puller) get(ctx context.Context, u, base, user, pw string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, contract.Fail(contract.Verification, "%s: %v", redact(u), err)
	}
	if bu, err := url.Parse(base); err == nil && user != "" && bu.Host == req.URL.Host {
		req.SetBasicAuth(user, pw)
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var netErr net.Error
		if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
			return nil, contract.Fail(contract.Connectivity, "%s: cannot reach the chart repository: %v", redact(u), unwrapURL(err))
		}
		return nil, contract.Fail(contract.Unknown, "%s: %v", redact(u), unwrapURL(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, contract.Fail(contract.Authentication, "%s: the chart repository refused the connector's credentials (%d)", redact(u), resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound:
		return nil, contract.Fail(contract.Verification, "%s: not found in the chart repository", redact(u))
	case resp.StatusCode != http.StatusOK:
		return nil, contract.Fail(contract.Unknown, "%s: the chart repository answered %s", redact(u), resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4*plan.MaxManifestBytes+1))
	if err != nil {
		return nil, contract.Fail(contract.Connectivity, "%s: %v", redact(u), err)
	}
	if len(body) > 4*plan.MaxManifestBytes {
		return nil, contract.Fail(contract.Verification, "%s: larger than %d bytes", redact(u), 4*plan.MaxManifestBytes)
	}
	return body, nil
}

// pullOCI picks the version among the repository's tags (unless exact or pinned by digest)
// and reads the chart layer of its manifest.
func (p *Puller) pullOCI(ctx context.Context, c *plan.ChartRepo) ([]byte, string, error) {
	rp, err := registry.Repository(&c.Connector, path.Join(c.BasePath, c.Name))
	if err != nil {
		return nil, "", contract.Fail(contract.Verification, "chart %s: %v", c.Name, err)
	}
	ro, err := registry.Options(ctx, p.Secrets, &c.Connector)
	if err != nil {
		return nil, "", err
	}
	version := c.Version
	if c.Digest == "" && (version == "" || isConstraint(version)) {
		tags, err := remote.List(rp, ro...)
		if err != nil {
			return nil, "", registry.Classify(err, rp.String())
		}
		if version, err = highest(tags, version); err != nil {
			return nil, "", contract.Fail(contract.Verification, "%s: chart %s: %v", rp, c.Name, err)
		}
	}
	// OCI tags cannot hold '+': Helm pushes build metadata with '_' instead.
	var ref name.Reference = rp.Tag(strings.ReplaceAll(version, "+", "_"))
	what := fmt.Sprintf("%s:%s", rp, version)
	if c.Digest != "" {
		ref, what = rp.Digest(c.Digest), fmt.Sprintf("%s:%s@%s", rp, version, c.Digest)
	}
	desc, err := remote.Get(ref, ro...)
	if err != nil {
		return nil, "", registry.Classify(err, what)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, "", contract.Fail(contract.Verification, "%s: not a chart: %v", what, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, "", registry.Classify(err, what)
	}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil || string(mt) != ChartLayer {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, "", registry.Classify(err, what)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, 4*plan.MaxManifestBytes+1))
		if err != nil {
			return nil, "", registry.Classify(err, what)
		}
		c.Version = version
		return b, desc.Digest.String(), nil
	}
	return nil, "", contract.Fail(contract.Verification, "%s: the manifest holds no Helm chart (no %s layer)", what, ChartLayer)
}

// highest returns the highest stable version among tags that satisfies constraint (any when
// empty), as Helm picks one.
func highest(tags []string, constraint string) (string, error) {
	want, err := semver.NewConstraint(versionText(constraint))
	if err != nil {
		return "", fmt.Errorf("version %q: %v", constraint, err)
	}
	var best *semver.Version
	bestTag := ""
	for _, t := range tags {
		v, err := semver.NewVersion(strings.ReplaceAll(t, "_", "+"))
		if err != nil || !want.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, bestTag = v, strings.ReplaceAll(t, "_", "+")
		}
	}
	if best == nil {
		return "", fmt.Errorf("no version %s among %d tags", versionText(constraint), len(tags))
	}
	return bestTag, nil
}

// isConstraint tells a range (^1.2, ~1, >=2 <3, 1.x) from an exact version.
func isConstraint(v string) bool {
	if v == "" {
		return false
	}
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err != nil
}

func versionText(v string) string {
	if v == "" {
		return "*"
	}
	return v
}

func available(vs repo.ChartVersions) string {
	if len(vs) == 0 {
		return "the index has no such chart"
	}
	var names []string
	for i, v := range vs {
		if i == 5 {
			names = append(names, "...")
			break
		}
		names = append(names, v.Version)
	}
	return "versions: " + strings.Join(names, ", ")
}

// redact masks a password written into a URL.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		return p.Redacted()
	}
	return u
}

// unwrapURL drops the URL an *url.Error repeats (it may hold credentials; the message names
// the redacted URL itself).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
