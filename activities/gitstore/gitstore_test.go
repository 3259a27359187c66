package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/plan"
)

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"

func setup(t *testing.T) (*gittest.Server, *Fetcher, string) {
	srv := gittest.Start(t)
	first := srv.NewRepo("app", map[string]string{
		"k8s/deployment.yaml": deployment,
		"k8s/service.yml":     "kind: Service\n",
		"k8s/README.md":       "not a manifest",
		"values/prod.yaml":    "replicas: 3\n",
	})
	f := &Fetcher{CacheDir: t.TempDir(), Secrets: secrets.Map{"git_user": srv.Username, "git_token": srv.Password, "git_key": srv.SSHKey}}
	return srv, f, first
}

func httpStore(srv *gittest.Server) *plan.GitStore {
	return &plan.GitStore{Type: "Git", Branch: "main", Paths: []string{"k8s"}, ValuesPaths: []string{"values/prod.yaml"},
		Connector: plan.GitConnector{ID: "repo", Type: "Git", URL: srv.HTTPURL + "/app.git", ConnectionType: "Repo",
			UsernameRef: "git_user", PasswordRef: "git_token"}}
}

func category(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

// A branch's head over HTTP with a username and token: the manifests of the folder in path
// order, the values file, the commit; the second fetch of the same commit reads the cache, and
// a new commit on the branch is fetched anew.
func TestFetchBranchOverHTTP(t *testing.T) {
	srv, f, first := setup(t)
	ctx := context.Background()
	got, err := f.Fetch(ctx, httpStore(srv))
	if err != nil {
		t.Fatal(err)
	}
	if got.Commit != first || got.Cached {
		t.Errorf("commit %s cached %v, want %s fetched", got.Commit, got.Cached, first)
	}
	if len(got.Files) != 2 || got.Files[0].Path != "k8s/deployment.yaml" || got.Files[0].Text != deployment || got.Files[1].Path != "k8s/service.yml" {
		t.Errorf("files %+v", got.Files)
	}
	if len(got.Values) != 1 || got.Values[0].Text != "replicas: 3\n" {
		t.Errorf("values %+v", got.Values)
	}
	again, err := f.Fetch(ctx, httpStore(srv))
	if err != nil || !again.Cached || again.Commit != first || len(again.Files) != 2 {
		t.Errorf("second fetch: %+v %v", again, err)
	}
	second := srv.Commit("app", "main", map[string]string{"values/prod.yaml": "replicas: 5\n"})
	moved, err := f.Fetch(ctx, httpStore(srv))
	if err != nil || moved.Cached || moved.Commit != second || moved.Values[0].Text != "replicas: 5\n" {
		t.Errorf("after a new commit: %+v %v", moved, err)
	}
	// The first commit, by ID: its own files, though the branch has moved.
	st := httpStore(srv)
	st.Commit = first
	pinned, err := f.Fetch(ctx, st)
	if err != nil || pinned.Commit != first || pinned.Values[0].Text != "replicas: 3\n" {
		t.Errorf("commit %s: %+v %v", first, pinned, err)
	}
}

// An Account connector names the organization; the store names the repository.
func TestFetchThroughAnAccountConnector(t *testing.T) {
	srv, f, first := setup(t)
	st := httpStore(srv)
	st.Connector.ConnectionType, st.Connector.URL, st.RepoName = "Account", srv.HTTPURL, "app.git"
	got, err := f.Fetch(context.Background(), st)
	if err != nil || got.Commit != first {
		t.Fatalf("%+v %v", got, err)
	}
}

// A Kustomize folder is fetched whole: generators' files and patches, not only manifests.
func TestFetchAllFiles(t *testing.T) {
	srv, f, _ := setup(t)
	st := httpStore(srv)
	st.AllFiles, st.ValuesPaths = true, nil
	got, err := f.Fetch(context.Background(), st)
	if err != nil || len(got.Files) != 3 || got.Files[0].Path != "k8s/README.md" {
		t.Fatalf("%+v %v", got.Files, err)
	}
}

// A folder too large to carry in a run is refused with a Verification failure, not sent.
func TestFetchTooLarge(t *testing.T) {
	srv, f, _ := setup(t)
	srv.Commit("app", "main", map[string]string{"k8s/big.yaml": strings.Repeat("# padding\n", 110000)})
	_, err := f.Fetch(context.Background(), httpStore(srv))
	if category(err) != string(contract.Verification) || !strings.Contains(err.Error(), "too much to carry") {
		t.Fatalf("%v", err)
	}
}

// SSH key auth, the server's key checked against known_hosts.
func TestFetchOverSSH(t *testing.T) {
	srv, f, first := setup(t)
	t.Setenv("SSH_KNOWN_HOSTS", srv.KnownHosts)
	st := httpStore(srv)
	st.Connector = plan.GitConnector{ID: "repo", Type: "Git", URL: srv.SSHURL + "/app.git", ConnectionType: "Repo", SSHKeyRef: "git_key"}
	got, err := f.Fetch(context.Background(), st)
	if err != nil || got.Commit != first || len(got.Files) != 2 {
		t.Fatalf("%+v %v", got, err)
	}
}

// Each failure has its category and names the repository and the ref or path, never the token.
func TestFetchFailures(t *testing.T) {
	srv, f, _ := setup(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(*plan.GitStore)
		want   contract.Category
		says   string
	}{
		{"bad token", func(s *plan.GitStore) { s.Connector.PasswordRef = "wrong" }, contract.Authentication, "refused"},
		{"no branch", func(s *plan.GitStore) { s.Branch = "release" }, contract.Verification, "branch release"},
		{"no commit", func(s *plan.GitStore) { s.Commit = strings.Repeat("ab", 20) }, contract.Verification, "no commit"},
		{"no path", func(s *plan.GitStore) { s.Paths = []string{"helm"} }, contract.Verification, "helm: no such file or folder"},
		{"no repository", func(s *plan.GitStore) { s.Connector.URL = srv.HTTPURL + "/other.git" }, contract.Verification, "other.git"},
		{"unreachable", func(s *plan.GitStore) { s.Connector.URL = "http://127.0.0.1:1/app.git" }, contract.Connectivity, "cannot reach"},
	}
	f.Secrets.(secrets.Map)["wrong"] = "not-the-token"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := httpStore(srv)
			c.change(st)
			_, err := f.Fetch(ctx, st)
			if err == nil {
				t.Fatal("fetched")
			}
			if got := category(err); got != string(c.want) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v, want %s saying %q", got, err, c.want, c.says)
			}
			if strings.Contains(err.Error(), srv.Password) || strings.Contains(err.Error(), "not-the-token") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}

// BenchmarkFetchCached is a deploy's fetch of a branch whose head the worker already holds:
// the server is asked for the head (ls-remote over HTTP to a local git http-backend), the files
// come from the cache. BenchmarkFetchCold is the first fetch of a commit (a shallow clone),
// its baseline in the same run.
func BenchmarkFetchCached(b *testing.B) {
	srv, f := benchSetup(b)
	st := httpStore(srv)
	if _, err := f.Fetch(context.Background(), st); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := f.Fetch(context.Background(), st)
		if err != nil || !got.Cached {
			b.Fatalf("%+v %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/fetch")
}

// BenchmarkFetchCachedCommit is the same with the commit named (a rerun, a pipeline
// rollback): no request to the server at all.
func BenchmarkFetchCachedCommit(b *testing.B) {
	srv, f := benchSetup(b)
	st := httpStore(srv)
	got, err := f.Fetch(context.Background(), st)
	if err != nil {
		b.Fatal(err)
	}
	st.Commit = got.Commit
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, err := f.Fetch(context.Background(), st); err != nil || !got.Cached {
			b.Fatalf("%+v %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/fetch")
}

// BenchmarkRefAdvertisement is the baseline of BenchmarkFetchCached: the server's answer to
// the one request a cached fetch makes (GET info/refs, git http-backend behind the test's
// HTTP server), read by a plain HTTP client.
func BenchmarkRefAdvertisement(b *testing.B) {
	srv, _ := benchSetup(b)
	req, _ := http.NewRequest(http.MethodGet, srv.HTTPURL+"/app.git/info/refs?service=git-upload-pack", nil)
	req.SetBasicAuth(srv.Username, srv.Password)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/fetch")
}

func BenchmarkFetchCold(b *testing.B) {
	srv, f := benchSetup(b)
	st := httpStore(srv)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.CacheDir = b.TempDir()
		got, err := f.Fetch(context.Background(), st)
		if err != nil || got.Cached {
			b.Fatalf("%+v %v", got, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/fetch")
}

func benchSetup(b *testing.B) (*gittest.Server, *Fetcher) {
	srv := gittest.Start(b)
	files := map[string]string{"values/prod.yaml": "replicas: 3\n"}
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("k8s/object-%02d.yaml", i)] = deployment
	}
	srv.NewRepo("app", files)
	return srv, &Fetcher{CacheDir: b.TempDir(), Secrets: secrets.Map{"git_user": srv.Username, "git_token": srv.Password}}
}

// A snapshot interrupted part way (the process killed while it wrote the files) leaves no mark,
// so the next start fetches the commit again rather than trusting half a tree; a complete one
// is read without asking the server, its full commit from the mark.
func TestSnapshotSurvivesAnInterruptedFetch(t *testing.T) {
	srv, f, first := setup(t)
	ctx := context.Background()
	st := httpStore(srv)
	st.Commit = first
	dir, full, err := f.Snapshot(ctx, st)
	if err != nil || full != first {
		t.Fatalf("snapshot: %s %v", full, err)
	}
	// What a kill between the files and the mark leaves: some files, no mark.
	if err := os.Remove(markOf(dir, "\x00snapshot")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "files", "values", "prod.yaml")); err != nil {
		t.Fatal(err)
	}
	before := srv.Requests()
	if _, _, err := f.Snapshot(ctx, st); err != nil {
		t.Fatal(err)
	}
	if srv.Requests() == before {
		t.Error("a snapshot without its mark was trusted")
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "values", "prod.yaml")); err != nil {
		t.Errorf("the re-fetch did not restore the tree: %v", err)
	}
	before = srv.Requests()
	st.Commit = first[:8]
	if _, full, err := f.Snapshot(ctx, st); err != nil || full != first {
		t.Errorf("abbreviated: %s %v", full, err)
	}
	st.Commit = first
	if _, _, err := f.Snapshot(ctx, st); err != nil || srv.Requests() != before+2 {
		t.Errorf("a complete snapshot asked the server again: %d requests, %v", srv.Requests()-before, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "files", "README.md")); err == nil {
		t.Errorf("a snapshot holds a file that is not YAML: %s", b)
	}
}
