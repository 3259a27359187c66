package webui

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultLivePollInterval is how often one page may long-poll a running workflow's history.
const DefaultLivePollInterval = 500 * time.Millisecond

// livePolls spaces out the history long-polls (waitNewEvent=true) of each page. An open page
// of a running workflow asks for the next events as soon as it has the last ones, and a stage
// of short steps writes several events a step: unspaced, that was hundreds of history reads a
// second through the same database connection that records the steps, and steps ran at half
// speed while someone watched. Spaced, a page gets the events of the last interval together.
type livePolls struct {
	next     http.Handler
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time // page (client and workflow) → when its last long-poll went through
}

func (l *livePolls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Query().Get("waitNewEvent") != "true" || !strings.HasSuffix(r.URL.Path, "/history") {
		l.next.ServeHTTP(w, r)
		return
	}
	key := client(r) + " " + r.URL.Path + "?" + r.URL.Query().Get("execution.runId")
	now := time.Now()
	l.mu.Lock()
	if l.last == nil || len(l.last) > 10000 {
		l.last = map[string]time.Time{} // forget old pages rather than grow without bound
	}
	at := l.last[key].Add(l.interval)
	if at.Before(now) {
		at = now
	}
	l.last[key] = at
	l.mu.Unlock()
	if wait := at.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	l.next.ServeHTTP(w, r)
}

// client tells browsers apart by the UI server's CSRF cookie, else by address.
func client(r *http.Request) string {
	if c, err := r.Cookie("_csrf"); err == nil {
		return c.Value
	}
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return host
}
