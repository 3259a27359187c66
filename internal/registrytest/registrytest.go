// Package registrytest runs a real OCI registry for tests on loopback (go-containerregistry's
// registry package) behind basic auth, and pushes images to it.
package registrytest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The credentials the registry accepts.
const (
	Username = "puller"
	Password = "pull-token"
)

// Registry is a running registry; it stops when the test ends.
type Registry struct {
	URL  string // http://127.0.0.1:port
	Host string // 127.0.0.1:port
}

// Start starts a registry.
func Start(t testing.TB) *Registry {
	t.Helper()
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != Username || p != Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &Registry{URL: srv.URL, Host: strings.TrimPrefix(srv.URL, "http://")}
}

// Push pushes a new random image as repo:tag and returns its digest.
func (r *Registry) Push(t testing.TB, repo, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: Username, Password: Password})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
