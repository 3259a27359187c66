// Package charttest packages Helm charts and serves them from real chart repositories on
// loopback for tests: an HTTP chart repository (index.yaml and archives, as `helm repo index`
// lays them out, behind basic auth) and an OCI registry, to which charts are pushed with the
// Helm SDK's registry client as `helm push` does.
package charttest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/internal/registrytest"
)

// The HTTP repository's credentials.
const (
	Username = "charts"
	Password = "chart-token"
)

// Package builds a chart archive (.tgz, as `helm package` writes it) from files relative to
// the chart's root; Chart.yaml is written from name and version unless files hold one.
func Package(t testing.TB, name, version string, files map[string]string) []byte {
	t.Helper()
	var buffered []*loader.BufferedFile
	if _, ok := files["Chart.yaml"]; !ok {
		buffered = append(buffered, &loader.BufferedFile{Name: "Chart.yaml",
			Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %s\nappVersion: \"%s\"\ndescription: %s test chart\n", name, version, version, name)})
	}
	for n, text := range files {
		buffered = append(buffered, &loader.BufferedFile{Name: n, Data: []byte(text)})
	}
	ch, err := loader.LoadFiles(buffered)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Archive writes a chart archive of files as they are, below the chart's folder, as `helm
// package` does for a folder (which keeps dependency archives in charts/ packed, unlike
// Package); Chart.yaml must be among the files.
func Archive(t testing.TB, name string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Repo is an HTTP chart repository.
type Repo struct {
	URL string

	mu       sync.Mutex
	index    *repo.IndexFile
	archives map[string][]byte
}

// StartRepo serves an empty chart repository behind basic auth (Username, Password).
func StartRepo(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{index: repo.NewIndexFile(), archives: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != Username || p != Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		name := strings.TrimPrefix(req.URL.Path, "/")
		if name == "index.yaml" {
			b, err := yaml.Marshal(r.index)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Write(b)
			return
		}
		b, ok := r.archives[name]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Add publishes a chart archive under charts/NAME-VERSION.tgz, its digest in the index.
func (r *Repo) Add(t testing.TB, archive []byte) {
	t.Helper()
	ch, err := loader.LoadArchive(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("charts/%s-%s.tgz", ch.Name(), ch.Metadata.Version)
	sum := sha256.Sum256(archive)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.index.MustAdd(ch.Metadata, file, "", hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	r.index.SortEntries()
	r.archives[file] = archive
}

// PushOCI pushes a chart archive to reg under path (oci://HOST/path/NAME:VERSION) with the
// Helm SDK, and returns the manifest's digest.
func PushOCI(t testing.TB, reg *registrytest.Registry, path string, archive []byte) string {
	t.Helper()
	ch, err := loader.LoadArchive(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptBasicAuth(registrytest.Username, registrytest.Password),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", reg.Host, strings.Trim(path, "/"), ch.Name(), strings.ReplaceAll(ch.Metadata.Version, "+", "_"))
	res, err := c.Push(archive, ref)
	if err != nil {
		t.Fatal(err)
	}
	return res.Manifest.Digest
}
