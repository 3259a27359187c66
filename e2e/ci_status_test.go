package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
)

// githubShaped serves a GitHub Enterprise-shaped host: the commit status endpoint of its API
// (POST /api/v3/repos/OWNER/REPO/statuses/SHA, recorded) and, for clones, repository
// OWNER/REPO.git from the Git server (its owner stripped).
type githubShaped struct {
	URL      string
	mu       sync.Mutex
	statuses []githubStatus
}

type githubStatus struct {
	Repo, SHA, Auth                   string
	State, Context, Description, Link string
}

func newGitHubShaped(t *testing.T, git *gittest.Server, owner string) *githubShaped {
	g := &githubShaped{}
	target, err := url.Parse(git.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	clones := httputil.NewSingleHostReverseProxy(target)
	route := regexp.MustCompile(`^/api/v3/repos/([^/]+/[^/]+)/statuses/([0-9a-f]{40})$`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := route.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost {
			var body struct {
				State       string `json:"state"`
				Context     string `json:"context"`
				Description string `json:"description"`
				TargetURL   string `json:"target_url"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
				return
			}
			g.mu.Lock()
			g.statuses = append(g.statuses, githubStatus{Repo: m[1], SHA: m[2], Auth: r.Header.Get("Authorization"),
				State: body.State, Context: body.Context, Description: body.Description, Link: body.TargetURL})
			g.mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":1}`))
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/"+owner+"/") {
			http.NotFound(w, r)
			return
		}
		r.URL.Path = strings.TrimPrefix(r.URL.Path, "/"+owner)
		clones.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func (g *githubShaped) seen() []githubStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]githubStatus(nil), g.statuses...)
}

// A CI stage whose codebase connector has API access reports its build on the commit it
// cloned: pending once cloned, then failure for a failing build, in that order, with the
// connector's API token.
func TestCICommitStatusPendingThenFailure(t *testing.T) {
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"README.md": "x\n"})
	gh := newGitHubShaped(t, srv, "acme")
	t.Setenv(secrets.EnvName("ci_github_api"), "ghp-api-token")
	connector := fmt.Sprintf(`connector:
  name: Repo
  identifier: app_git
  type: Github
  spec:
    url: %s/acme/app.git
    type: Repo
    authentication:
      type: Http
      spec: {type: UsernamePassword, spec: {username: %s, passwordRef: ci_clone_token}}
    apiAccess: {type: Token, spec: {tokenRef: ci_github_api}}
`, gh.URL, srv.Username)
	p := ciPipelineWith(t, srv, "checks", ciStage("build", ciStageOpts{Clone: true})+`              - step: {type: Run, name: unit, identifier: unit, spec: {image: IMAGE, shell: Sh, command: "test -f README.md && exit 1"}}
`, load.Options{ForRun: true}, "git.yaml", connector)
	exec, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "build.unit": status.Failed})
	if *updateHistories { // a CI stage reporting its commit status (changeCommitStatus)
		recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
	}
	got := gh.seen()
	if len(got) != 2 || got[0].State != "pending" || got[1].State != "failure" {
		t.Fatalf("statuses %+v, want pending then failure", got)
	}
	for _, s := range got {
		if s.Repo != "acme/app" || s.SHA != got[0].SHA || s.Auth != "Bearer ghp-api-token" || s.Context != "gantry/checks/build" || s.Link == "" {
			t.Errorf("status %+v", s)
		}
	}
	if !strings.Contains(got[1].Description, "failed") {
		t.Errorf("description %q", got[1].Description)
	}
	if notes := strings.Join(res.Tree.Find("build").Notes, "\n"); strings.Contains(notes, "could not be reported") {
		t.Errorf("notes: %s", notes)
	}
}
