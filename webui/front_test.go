package webui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The UI's build files come back with a year's caching, without the UI server's per-request
// cookie, and the same bytes each time.
func TestImmutableFilesAreCached(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ui, err := Start(ctx, Options{Listen: "127.0.0.1:0", Temporal: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()
	resp, err := http.Get(ui.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	file := regexp.MustCompile(`/_app/immutable/[^"']+\.js`).FindString(string(page))
	if file == "" {
		t.Fatalf("no build file named in the UI's page:\n%.500s", page)
	}
	var bodies []string
	for range 2 {
		resp, err := http.Get(ui.URL + file)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("%s: %d %v", file, resp.StatusCode, resp.Header)
		}
		bodies = append(bodies, string(b))
	}
	if bodies[0] != bodies[1] || len(bodies[0]) == 0 {
		t.Error("the cached file differs from the first answer")
	}
}

// One page's history long-polls are spaced by the interval; other pages and other requests
// are not held back.
func TestLivePollsAreSpaced(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Time
	l := &livePolls{interval: 200 * time.Millisecond, next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, time.Now())
		mu.Unlock()
	})}
	poll := func(cookie string) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/workflows/a-1/history?waitNewEvent=true&execution.runId=r", nil)
		r.AddCookie(&http.Cookie{Name: "_csrf", Value: cookie})
		l.ServeHTTP(httptest.NewRecorder(), r)
	}
	start := time.Now()
	for range 3 {
		poll("page-1")
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("three long-polls of one page took %s, want at least two intervals", d)
	}
	other := time.Now()
	poll("page-2")
	l.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/workflows/a-1/history?waitNewEvent=false", nil))
	if d := time.Since(other); d > 100*time.Millisecond {
		t.Errorf("another page's long-poll and a plain history read waited %s", d)
	}
}

// The sign-in page sets the token cookie only for a good token posted from its own origin.
func TestSignIn(t *testing.T) {
	h := signIn(func(token string) (string, error) {
		if token == "good" {
			return "ann", nil
		}
		return "", http.ErrNoCookie
	}, nil)
	post := func(token, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://ui.example/gantry/sign-in", strings.NewReader("token="+token))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := post("good", "http://ui.example"); w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Set-Cookie"), "gantry_token=good") ||
		!strings.Contains(w.Header().Get("Set-Cookie"), "HttpOnly") || !strings.Contains(w.Body.String(), "Signed in as <b>ann</b>") {
		t.Errorf("good token: %d %v", w.Code, w.Header())
	}
	if w := post("bad", ""); w.Code != http.StatusUnauthorized || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("bad token: %d %v", w.Code, w.Header())
	}
	if w := post("good", "http://evil.example"); w.Code != http.StatusForbidden || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("another origin: %d %v", w.Code, w.Header())
	}
}
