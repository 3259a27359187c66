// Package oidctest serves a real OpenID Connect provider on loopback for tests: zitadel's
// example provider (its op package, in-memory storage and login page), with people whose
// groups a test sets and changes, and a confidential web client for Gantry.
package oidctest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// Password is every test person's password.
const Password = "Correct-Horse-9"

// Provider is a running identity provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:PORT/).
	Issuer string
	// ClientID and ClientSecret are Gantry's confidential client.
	ClientID, ClientSecret string

	users  storage.UserStore
	mu     sync.Mutex
	groups map[string][]string
}

// Start serves a provider until the test ends, for people (user name → groups) and Gantry's
// client with the redirect URLs given.
func Start(t testing.TB, people map[string][]string, redirectURLs ...string) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String() + "/", ClientID: "gantry-" + filepath.Base(t.TempDir()), ClientSecret: "client-secret-for-tests", groups: map[string][]string{}}
	users := map[string]*storage.User{}
	for name, groups := range people {
		users[name] = &storage.User{ID: name, Username: name, Password: Password, FirstName: name, LastName: "Tester",
			Email: name + "@example.com", EmailVerified: true, PreferredLanguage: language.English}
		p.groups[name] = groups
	}
	b, _ := json.Marshal(users)
	file := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if p.users, err = storage.StoreFromFile(file); err != nil {
		t.Fatal(err)
	}
	storage.RegisterClients(storage.WebClient(p.ClientID, p.ClientSecret, redirectURLs...))
	store := &groupStorage{Storage: storage.NewStorage(p.users), p: p}
	// No logger: the example would make it the process's default.
	router := exampleop.SetupServer(p.Issuer, store, nil, false)
	srv := &http.Server{Handler: router}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return p
}

// SetGroups changes a person's groups at the provider (tokens issued from now carry them).
func (p *Provider) SetGroups(user string, groups ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups[user] = groups
}

// groupStorage adds what Gantry reads to every ID token: the user name, e-mail address and
// groups claim.
type groupStorage struct {
	*storage.Storage
	p *Provider
}

func (s *groupStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, req, scopes); err != nil {
		return err
	}
	u := s.p.users.GetUserByID(req.GetSubject())
	if u == nil {
		return nil
	}
	s.p.mu.Lock()
	groups := append([]string{}, s.p.groups[u.Username]...)
	s.p.mu.Unlock()
	ui.PreferredUsername, ui.Email = u.Username, u.Email
	ui.AppendClaims("groups", groups)
	return nil
}

var loginID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// LogIn follows a sign-in from its first address (Gantry's start page) to the provider's
// login page as a browser would, and signs in there as user; the response is what the
// provider's redirects lead to. The client needs a cookie jar.
func (p *Provider) LogIn(client *http.Client, start, user string) (*http.Response, error) {
	resp, err := client.Get(start)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginID.FindSubmatch(b)
	if m == nil {
		return nil, fmt.Errorf("no login form at %s (%s): %.300s", resp.Request.URL, resp.Status, b)
	}
	return client.PostForm(strings.TrimSuffix(p.Issuer, "/")+"/login/username", url.Values{"id": {html.UnescapeString(string(m[1]))}, "username": {user}, "password": {Password}})
}
