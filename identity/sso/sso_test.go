package sso_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/internal/oidctest"
)

const cookie = "gantry_token"

// site is Gantry's sign-in pages in front of a real provider, with a clock tests move.
type site struct {
	idp  *oidctest.Provider
	sso  *sso.Provider
	url  string
	dir  *identity.Directory
	mu   sync.Mutex
	skew time.Duration
}

func (s *site) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Add(s.skew)
}

func (s *site) directory() (*identity.Directory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir, nil
}

func newSite(t *testing.T) *site {
	var h http.Handler = http.NotFoundHandler()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(web.Close)
	s := &site{url: web.URL, dir: &identity.Directory{Groups: []identity.Group{{Name: "release_managers", OIDCGroups: []string{"eng-release"}}, {Name: "sre"}}}}
	s.idp = oidctest.Start(t, map[string][]string{"alice": {"eng-release", "everyone"}, "bob": {"marketing"}, "carol": {"sre"}}, web.URL+sso.CallbackPath)
	p, err := sso.New(context.Background(), sso.Config{Issuer: s.idp.Issuer, ClientID: s.idp.ClientID, ClientSecret: s.idp.ClientSecret,
		RedirectURL: web.URL + sso.CallbackPath, Now: s.now})
	if err != nil {
		t.Fatal(err)
	}
	s.sso = p
	h = p.Handler(sso.HandlerOptions{Directory: s.directory, Cookie: cookie})
	return s
}

func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// signIn signs a browser in through the provider's login page and returns the session cookie.
func (s *site) signIn(t *testing.T, user string) (string, string) {
	t.Helper()
	b := browser(t)
	resp, err := s.idp.LogIn(b, s.url+sso.StartPath+"?next=/gantry/logs/x/y", user)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	u, _ := url.Parse(s.url + "/gantry/")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == cookie {
			return c.Value, string(body)
		}
	}
	return "", string(body)
}

// A person signs in through the provider's login page; the Web UI's cookie holds an ID token
// whose groups the identity file maps; a mapping removed from the file applies to the next
// request, and so do expiry and sign-out.
func TestBrowserSignIn(t *testing.T) {
	s := newSite(t)
	token, page := s.signIn(t, "alice")
	if token == "" || !strings.Contains(page, "Signed in as <b>alice</b>") || !strings.Contains(page, "/gantry/logs/x/y") {
		t.Fatalf("no session after signing in: %q", page)
	}
	if !sso.LooksLikeIDToken(token) {
		t.Fatalf("the session is not an ID token: %q", token)
	}
	ctx := context.Background()
	u, err := s.sso.User(ctx, s.dir, token)
	if err != nil || u.Name != "alice" || u.Email != "alice@example.com" || strings.Join(u.Groups, ",") != "release_managers" {
		t.Fatalf("alice: %+v %v", u, err)
	}
	// The mapping goes: the same token names nobody the file lets in.
	s.mu.Lock()
	s.dir = &identity.Directory{Groups: []identity.Group{{Name: "sre"}}}
	s.mu.Unlock()
	if _, err := s.sso.User(ctx, s.dir, token); !errors.Is(err, identity.ErrNoGroup) {
		t.Fatalf("after the mapping went: %v", err)
	}
	// A tampered token is refused.
	if _, err := s.sso.Verify(ctx, token[:len(token)-4]+"AAAA"); err == nil {
		t.Fatal("a token with a changed signature was accepted")
	}
	// Expiry applies to a token verified before.
	s.mu.Lock()
	s.skew = 2 * time.Hour
	s.mu.Unlock()
	if _, err := s.sso.Verify(ctx, token); !errors.Is(err, sso.ErrExpired) {
		t.Fatalf("an expired token: %v", err)
	}
	s.mu.Lock()
	s.skew = 0
	s.mu.Unlock()
	if _, err := s.sso.Verify(ctx, token); err != nil {
		t.Fatal(err)
	}
	s.sso.SignOut(token)
	if _, err := s.sso.Verify(ctx, token); !errors.Is(err, sso.ErrSignedOut) {
		t.Fatalf("a signed-out token: %v", err)
	}
}

// Someone whose groups the identity file does not map gets no session.
func TestSignInRefusedOutsideTheGroups(t *testing.T) {
	s := newSite(t)
	token, page := s.signIn(t, "bob")
	if token != "" || !strings.Contains(page, "Signed in as bob, who may not use Gantry") {
		t.Fatalf("bob: token %q page %q", token, page)
	}
	// A group removed at the provider shows in the next sign-in.
	s.idp.SetGroups("carol")
	if token, _ := s.signIn(t, "carol"); token != "" {
		t.Fatal("carol signed in after leaving her only group")
	}
}

// gantry login's handoff: the provider's redirect reaches the command's loopback listener
// with a code only the holder of the PKCE verifier can redeem.
func TestCommandLineHandoff(t *testing.T) {
	s := newSite(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan url.Values, 1)
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- r.URL.Query()
			_, _ = io.WriteString(w, "signed in")
		}))
	}()
	defer ln.Close()
	verifier := oauth2.GenerateVerifier()
	start := s.url + sso.StartPath + "?" + url.Values{"cli_port": {strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, "cli_state": {"st4te"},
		"cli_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}}.Encode()
	resp, err := s.idp.LogIn(browser(t), start, "carol")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	q := <-got
	if q.Get("state") != "st4te" || q.Get("code") == "" {
		t.Fatalf("the loopback redirect: %v", q)
	}
	ctx := context.Background()
	if _, _, err := s.sso.Redeem(ctx, q.Get("code"), oauth2.GenerateVerifier()); !errors.Is(err, sso.ErrHandoff) {
		t.Fatalf("redeemed with another verifier: %v", err)
	}
	token, c, err := s.sso.Redeem(ctx, q.Get("code"), verifier)
	if err != nil || c.Name != "carol" || !sso.LooksLikeIDToken(token) {
		t.Fatalf("redeem: %+v %v", c, err)
	}
	if u, err := s.sso.User(ctx, s.dir, token); err != nil || strings.Join(u.Groups, ",") != "sre" {
		t.Fatalf("carol: %+v %v", u, err)
	}
	// A damaged link is refused before the provider sees it.
	resp, err = http.Get(s.url + sso.StartPath + "?cli_port=99999&cli_state=x&cli_challenge=y")
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a damaged link: %v %v", resp.Status, err)
	}
}

// An issuer that does not answer is an error at start, naming it.
func TestUnreachableIssuer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = sso.New(context.Background(), sso.Config{Issuer: "http://" + addr + "/", ClientID: "x"})
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("unreachable issuer: %v", err)
	}
}
