package webui

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
)

// immutablePrefix holds the UI's content-hashed build files: a name never changes content.
const immutablePrefix = "/_app/immutable/"

// assets keeps the UI's immutable files as the UI server sent them (compressed once), and
// serves them with a year's caching. The UI server itself marks every file with a fresh CSRF
// cookie and `Vary: Cookie` and compresses it anew on each request, so a browser fetched the
// ~190 files of a page on every page load, and the compression ran in the process that also
// runs the pipelines.
type assets struct {
	next  http.Handler
	mu    sync.RWMutex
	files map[string]*asset
}

type asset struct {
	header http.Header
	body   []byte
}

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, immutablePrefix) {
		a.next.ServeHTTP(w, r)
		return
	}
	key := r.URL.Path
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		key += "|gzip"
	} else {
		r.Header.Del("Accept-Encoding")
	}
	a.mu.RLock()
	f := a.files[key]
	a.mu.RUnlock()
	if f == nil {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		a.next.ServeHTTP(rec, r)
		if rec.status != http.StatusOK {
			copyHeader(w.Header(), rec.header)
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.body.Bytes())
			return
		}
		f = &asset{header: http.Header{}, body: rec.body.Bytes()}
		for _, k := range []string{"Content-Type", "Content-Encoding", "X-Content-Type-Options"} {
			if v := rec.header.Get(k); v != "" {
				f.header.Set(k, v)
			}
		}
		f.header.Set("Cache-Control", "public, max-age=31536000, immutable")
		f.header.Set("Vary", "Accept-Encoding")
		a.mu.Lock()
		if a.files == nil {
			a.files = map[string]*asset{}
		}
		a.files[key] = f
		a.mu.Unlock()
	}
	copyHeader(w.Header(), f.header)
	_, _ = w.Write(f.body)
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// recorder captures a response of the UI server.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
