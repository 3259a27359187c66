package commitstatus

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// call is one request a provider server received.
type call struct {
	host, path, auth, private string
	body                      map[string]string
}

// provider is a loopback server that answers every POST with status and records it; the
// activity's client sends requests for any host to it (the cloud APIs' hosts included).
type provider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []call
	status int
}

func newProvider(t *testing.T) *provider {
	p := &provider{status: http.StatusCreated}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		p.calls = append(p.calls, call{host: r.Host, path: r.URL.EscapedPath(), auth: r.Header.Get("Authorization"), private: r.Header.Get("PRIVATE-TOKEN"), body: body})
		status := p.status
		p.mu.Unlock()
		w.WriteHeader(status)
		if status >= 400 {
			_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// activity sends every request to the provider, keeping the Host it was meant for.
func (p *provider) activity() *Activity {
	target, _ := url.Parse(p.srv.URL)
	return &Activity{
		Secrets: secrets.Map{"pat": "s3cr3t-token", "bb_user": "ci-bot"},
		UIURL:   func() string { return "http://ui.example:8233" },
		Client: &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Host = r.URL.Host
			r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
			return http.DefaultTransport.RoundTrip(r)
		})},
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func input(typ, repoURL, state string, api plan.GitAPI) contract.CommitStatusInput {
	return contract.CommitStatusInput{
		Repo: plan.GitStore{Connector: plan.GitConnector{ID: "scm", Type: typ, URL: repoURL, ConnectionType: "Repo", API: &api}},
		SHA:  "0123456789abcdef0123456789abcdef01234567", State: state, Context: "gantry/build/test", Description: "Stage test failed",
		Namespace: "default", ExecutionID: "build-7",
	}
}

// Each provider gets the request its API documents: path, authentication and body.
func TestReportPerProvider(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	link := "http://ui.example:8233/namespaces/default/workflows/build-7"
	for _, c := range []struct {
		name, typ, repo, state string
		api                    plan.GitAPI
		want                   call
	}{
		{"GitHub", "Github", "https://github.com/acme/app.git", contract.CommitFailure, plan.GitAPI{TokenRef: "pat"},
			call{host: "api.github.com", path: "/repos/acme/app/statuses/" + sha, auth: "Bearer s3cr3t-token",
				body: map[string]string{"state": "failure", "context": "gantry/build/test", "description": "Stage test failed", "target_url": link}}},
		{"GitHub Enterprise over SSH", "Github", "git@ghe.example.com:acme/app.git", contract.CommitPending, plan.GitAPI{TokenRef: "pat"},
			call{host: "ghe.example.com", path: "/api/v3/repos/acme/app/statuses/" + sha, auth: "Bearer s3cr3t-token",
				body: map[string]string{"state": "pending", "context": "gantry/build/test", "description": "Stage test failed", "target_url": link}}},
		{"GitLab subgroup", "Gitlab", "https://gitlab.example.com/acme/platform/app.git", contract.CommitSuccess, plan.GitAPI{TokenRef: "pat"},
			call{host: "gitlab.example.com", path: "/api/v4/projects/acme%2Fplatform%2Fapp/statuses/" + sha, private: "s3cr3t-token",
				body: map[string]string{"state": "success", "name": "gantry/build/test", "description": "Stage test failed", "target_url": link}}},
		{"GitLab with an OAuth token", "Gitlab", "https://gitlab.com/acme/app", contract.CommitError, plan.GitAPI{Type: "OAuth", TokenRef: "pat"},
			call{host: "gitlab.com", path: "/api/v4/projects/acme%2Fapp/statuses/" + sha, auth: "Bearer s3cr3t-token",
				body: map[string]string{"state": "canceled", "name": "gantry/build/test", "description": "Stage test failed", "target_url": link}}},
		{"Bitbucket Cloud", "Bitbucket", "https://bitbucket.org/acme/app.git", contract.CommitPending, plan.GitAPI{UsernameRef: "bb_user", TokenRef: "pat"},
			call{host: "api.bitbucket.org", path: "/2.0/repositories/acme/app/commit/" + sha + "/statuses/build", auth: "Basic Y2ktYm90OnMzY3IzdC10b2tlbg==",
				body: map[string]string{"key": "gantry/build/test", "state": "INPROGRESS", "name": "gantry/build/test", "description": "Stage test failed", "url": link}}},
		{"Bitbucket Server", "Bitbucket", "https://bitbucket.example.com/scm/acme/app.git", contract.CommitError, plan.GitAPI{Username: "ci-bot", TokenRef: "pat"},
			call{host: "bitbucket.example.com", path: "/rest/build-status/1.0/commits/" + sha, auth: "Basic Y2ktYm90OnMzY3IzdC10b2tlbg==",
				body: map[string]string{"key": "gantry/build/test", "state": "STOPPED", "name": "gantry/build/test", "description": "Stage test failed", "url": link}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProvider(t)
			if err := p.activity().Report(context.Background(), input(c.typ, c.repo, c.state, c.api)); err != nil {
				t.Fatal(err)
			}
			if len(p.calls) != 1 {
				t.Fatalf("calls %+v", p.calls)
			}
			got := p.calls[0]
			if got.host != c.want.host || got.path != c.want.path || got.auth != c.want.auth || got.private != c.want.private {
				t.Errorf("request %s %s auth %q private %q, want %s %s auth %q private %q", got.host, got.path, got.auth, got.private, c.want.host, c.want.path, c.want.auth, c.want.private)
			}
			for k, v := range c.want.body {
				if got.body[k] != v {
					t.Errorf("body %s = %q, want %q", k, got.body[k], v)
				}
			}
			if len(got.body) != len(c.want.body) {
				t.Errorf("body %v", got.body)
			}
		})
	}
}

// A refusal is not retried and says what the provider answered, never the token; a provider
// that errs is retried.
func TestReportRefusedAndFailing(t *testing.T) {
	p := newProvider(t)
	p.status = http.StatusUnauthorized
	err := p.activity().Report(context.Background(), input("Github", "https://github.com/acme/app", contract.CommitPending, plan.GitAPI{TokenRef: "pat"}))
	var app *temporal.ApplicationError
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Bad credentials") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("refusal: %v", err)
	}
	if !asApp(err, &app) || !app.NonRetryable() {
		t.Errorf("a 401 should not be retried: %v", err)
	}
	p.status = http.StatusBadGateway
	err = p.activity().Report(context.Background(), input("Github", "https://github.com/acme/app", contract.CommitPending, plan.GitAPI{TokenRef: "pat"}))
	if err == nil || asApp(err, &app) {
		t.Errorf("a 502 should be retried: %v", err)
	}
	err = p.activity().Report(context.Background(), input("Github", "https://github.com/acme/app", contract.CommitPending, plan.GitAPI{TokenRef: "missing"}))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown secret: %v", err)
	}
}

func asApp(err error, app **temporal.ApplicationError) bool {
	a, ok := err.(*temporal.ApplicationError)
	*app = a
	return ok
}

func TestBitbucketKeyFits(t *testing.T) {
	long := strings.Repeat("stage-", 12)
	if k := key(long); len(k) > 40 || key(long) != k || key(long+"x") == k {
		t.Errorf("key %q", k)
	}
}
