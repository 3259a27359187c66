// Package registrytest runs a real OCI registry for tests on loopback (go-containerregistry's
// registry package) behind basic auth, and pushes images to it.
package registrytest

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	Port int
}

// Start starts a registry on loopback.
func Start(t testing.TB) *Registry {
	t.Helper()
	return start(t, "127.0.0.1:0")
}

// StartExposed starts a registry on every address of the machine, for clients in other
// network namespaces (containers reach it at their gateway's address); Host is still loopback.
func StartExposed(t testing.TB) *Registry {
	t.Helper()
	return start(t, "0.0.0.0:0")
}

func start(t testing.TB, addr string) *Registry {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0))) // its request log would split benchmark lines
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != Username || p != Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	port := l.Addr().(*net.TCPAddr).Port
	host := "127.0.0.1:" + strconv.Itoa(port)
	return &Registry{URL: "http://" + host, Host: host, Port: port}
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
