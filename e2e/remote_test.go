package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/triggers"
	"github.com/gantry-cd/gantry/workflows"
)

// remotePipeline is a pipeline kept in Git whose one step says what it was given and where
// it was read from, after sleeping a while (so that a push lands during the run).
func remotePipeline(says string, sleep int) string {
	return fmt.Sprintf(`pipeline:
  name: release
  identifier: release
  variables:
    - {name: greeting, type: String, value: <+input>}
  stages:
    - stage:
        name: build
        identifier: build
        template:
          templateRef: say_stage
          versionLabel: v1
          gitBranch: stable
          templateInputs:
            type: Custom
            spec:
              execution:
                steps:
                  - step:
                      identifier: say
                      type: ShellScript
                      spec:
                        source:
                          type: Inline
                          spec:
                            script: |
                              sleep %d
                              said="%s <+pipeline.variables.greeting> from <+pipeline.storeType> <+pipeline.repo> <+pipeline.branch>"
`, sleep, says)
}

// sayStage is a stage template kept in another repository; its script is left to the link.
const sayStage = `template:
  name: say stage
  identifier: say_stage
  versionLabel: v1
  orgIdentifier: default
  projectIdentifier: default
  type: Stage
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step:
              name: say
              identifier: say
              type: ShellScript
              timeout: 2m
              spec:
                shell: Bash
                source: {type: Inline, spec: {script: <+input>}}
                outputVariables:
                  - {name: said, type: String, value: said}
`

type remoteRig struct {
	git   *gittest.Server
	api   *apiClient
	http  *httptest.Server
	dir   string // the server's pipelines directory
	token string
	first string            // app's first commit on main
	fetch *gitstore.Fetcher // the server's
	srv   *server.Server
}

func newRemoteRig(t testing.TB) *remoteRig {
	t.Helper()
	g := gittest.Start(t)
	rg := &remoteRig{git: g}
	rg.first = g.NewRepo("app", map[string]string{
		".harness/release.yaml": remotePipeline("main", 2),
		".harness/prod.yaml":    "inputSet:\n  name: prod\n  identifier: prod\n  pipeline:\n    identifier: release\n    variables:\n      - {name: greeting, type: String, value: hello-prod}\n",
	})
	g.NewRepo("shared", map[string]string{"say.yaml": strings.Replace(sayStage, "say stage", "say stage on main", 1)})
	g.Commit("shared", "stable", map[string]string{"say.yaml": sayStage})

	dir := t.TempDir()
	rg.dir = dir
	conn := func(id, repo string) string {
		return fmt.Sprintf("connector:\n  name: %s\n  identifier: %s\n  type: Git\n  spec:\n    url: %s/%s.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_token}\n", id, id, g.HTTPURL, repo, g.Username)
	}
	files := map[string]string{"app.yaml": conn("app_repo", "app"), "shared.yaml": conn("shared_repo", "shared"),
		"push.trigger.yaml": strings.Replace(githubTrigger("release_push", "release", "Push", ""), "encryptedWebhookSecretIdentifier: ci_hook_secret", "encryptedWebhookSecretIdentifier: remote_hook_secret", 1) +
			"  pipelineBranchName: <+trigger.branch>\n  inputSetRefs: [prod]\n",
		"orphan.trigger.yaml": strings.Replace(githubTrigger("orphan_push", "nothere", "Push", ""), "encryptedWebhookSecretIdentifier: ci_hook_secret", "encryptedWebhookSecretIdentifier: remote_hook_secret", 1)}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	declared := filepath.Join(dir, "registry", "remote.yaml")
	if err := os.MkdirAll(filepath.Dir(declared), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(declared, []byte("remoteEntities:\n  - {kind: template, identifier: say_stage, connectorRef: shared_repo, filePath: say.yaml, branch: main}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := remote.Open(declared, filepath.Join(t.TempDir(), "remote-entities.json"))
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(dir, "registry", "users.yaml")
	ids := &identity.Directory{}
	rg.token, _ = ids.AddUser("rel", "", []string{"release"})
	if err := ids.Save(idFile); err != nil {
		t.Fatal(err)
	}
	sec := secrets.Map{"git_token": g.Password, "remote_hook_secret": ciHookSecret}
	rg.fetch = &gitstore.Fetcher{Secrets: sec, CacheDir: t.TempDir()}
	rg.srv = server.New(server.Options{Starter: env.starter, IdentityFile: idFile, PipelinesDir: dir, Secrets: sec,
		Remote: reg, Git: rg.fetch, Events: &triggers.EventLog{Path: filepath.Join(t.TempDir(), "events.jsonl")}})
	api := httptest.NewServer(rg.srv)
	t.Cleanup(api.Close)
	rg.http, rg.api = api, &apiClient{t: t, url: api.URL, spec: openAPIPaths(t)}
	return rg
}

func (rg *remoteRig) register(t testing.TB, e remote.Entry, want int) map[string]any {
	t.Helper()
	code, out := rg.api.call("POST", "/api/v1/remote-entities", "/api/v1/remote-entities", rg.token, e)
	if code != want {
		t.Fatalf("register %s %s: %d %v, want %d", e.Kind, e.Identifier, code, out, want)
	}
	return out
}

func (rg *remoteRig) start(t testing.TB, req server.StartRequest, want int) (string, map[string]any) {
	t.Helper()
	code, out := rg.api.call("POST", "/api/v1/executions", "/api/v1/executions", rg.token, req)
	if code != want {
		t.Fatalf("start %+v: %d %v, want %d", req, code, out, want)
	}
	id, _ := out["executionId"].(string)
	return id, out
}

func saidAndSources(t *testing.T, id string) (string, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tree.Status != status.Succeeded {
		t.Fatalf("%s: %s\n%s", id, res.Tree.Status, treeText(res.Tree))
	}
	commits := map[string]string{}
	for _, s := range res.Tree.Sources {
		commits[s.Kind+" "+s.Identifier] = s.Branch + "@" + s.Commit
	}
	said, _ := res.Tree.Find("build.say").Outputs["outputVariables"].(map[string]any)["said"].(string)
	return said, commits
}

func treeText(n *workflows.Node) string {
	var b strings.Builder
	var walk func(n *workflows.Node, depth int)
	walk = func(n *workflows.Node, depth int) {
		fmt.Fprintf(&b, "%s%s %s %v\n", strings.Repeat("  ", depth), n.Path, n.Status, n.Failure)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// Pipelines from Git, end to end on a real Temporal server and a real Git server: registration
// fetches and validates (a broken file is refused at its repository, commit, line and column);
// two branches' pipelines run at the same time, each its own YAML; a push and a force-push
// during a run change nothing in it, and its rerun runs the recorded commits; a branch deleted
// after the start changes nothing either; the input set and the template (another repository,
// the link's gitBranch) are read with the pipeline; what is missing refuses the start.
func TestRemotePipelinesRunTheCommitTheyRead(t *testing.T) {
	rg := newRemoteRig(t)
	g := rg.git
	bad := g.Commit("app", "broken", map[string]string{".harness/release.yaml": "pipeline:\n  name: release\n  identifier: release\n  stages:\n    - stage:\n        name: a\n       identifier: a\n"})
	entry := remote.Entry{Kind: "pipeline", Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "broken"}
	out := rg.register(t, entry, 422)
	if details := fmt.Sprint(out["details"]); !strings.Contains(details, "app@"+bad[:12]+":.harness/release.yaml:7:") {
		t.Errorf("a broken pipeline is reported as %v", out)
	}
	entry.Branch = "main"
	rg.register(t, entry, 201)
	rg.register(t, remote.Entry{Kind: "inputSet", Identifier: "prod", ConnectorRef: "app_repo", FilePath: ".harness/prod.yaml", Branch: "main"}, 201)
	rg.register(t, remote.Entry{Kind: "template", Identifier: "say_stage", ConnectorRef: "shared_repo", FilePath: "say.yaml", Branch: "main"}, 409)
	if code, out := rg.api.call("GET", "/api/v1/remote-entities", "/api/v1/remote-entities", rg.token, nil); code != 200 || len(out["entities"].([]any)) != 3 {
		t.Errorf("list: %d %v", code, out)
	}
	// The registrations are in the audit trail, kept in Temporal.
	deadline := time.Now().Add(time.Minute)
	for {
		_, out := rg.api.call("GET", "/api/v1/audit?user=rel", "/api/v1/audit", rg.token, nil)
		text := fmt.Sprint(out["records"])
		if strings.Contains(text, "action:register") && strings.Contains(text, "pipeline release from .harness/release.yaml") && strings.Contains(text, "outcome:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit trail holds no registration: %s", text)
		}
		time.Sleep(200 * time.Millisecond)
	}

	feature := g.Commit("app", "feature", map[string]string{".harness/release.yaml": remotePipeline("feature", 2)})
	mainRun, _ := rg.start(t, server.StartRequest{Pipeline: "release", InputSets: []string{"prod"}}, 201)
	featureRun, _ := rg.start(t, server.StartRequest{Pipeline: "release", Branch: "feature", Sets: []string{"pipeline.variables.greeting=hi"}}, 201)
	// During both runs: main moves on, feature is force-pushed, then deleted.
	g.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("pushed", 0)})
	g.ForcePush("app", "feature", map[string]string{".harness/release.yaml": remotePipeline("forced", 0)})
	g.DeleteBranch("app", "feature")

	said, commits := saidAndSources(t, mainRun)
	if said != "main hello-prod from remote app main" {
		t.Errorf("the main run said %q", said)
	}
	if commits["pipeline release"] != "main@"+rg.first || commits["inputSet prod"] != "main@"+rg.first || !strings.HasPrefix(commits["template say_stage"], "stable@") {
		t.Errorf("the main run read %v", commits)
	}
	said, commits = saidAndSources(t, featureRun)
	if said != "feature hi from remote app feature" || commits["pipeline release"] != "feature@"+feature {
		t.Errorf("the feature run said %q, read %v", said, commits)
	}
	// A rerun runs the recorded plan: the commits the run read, though feature is gone.
	code, out := rg.api.call("POST", "/api/v1/executions/"+featureRun+"/rerun", "/api/v1/executions/{id}/rerun", rg.token, nil)
	if code != 201 {
		t.Fatalf("rerun: %d %v", code, out)
	}
	if said, commits := saidAndSources(t, out["executionId"].(string)); said != "feature hi from remote app feature" || commits["pipeline release"] != "feature@"+feature {
		t.Errorf("the rerun said %q, read %v", said, commits)
	}
	// The first commit, named, is still what it was.
	pinned, _ := rg.start(t, server.StartRequest{Pipeline: "release", Commit: rg.first[:10], InputSets: []string{"prod"}}, 201)
	if said, commits := saidAndSources(t, pinned); said != "main hello-prod from remote app main" || commits["pipeline release"] != "main@"+rg.first {
		t.Errorf("the pinned run said %q, read %v", said, commits)
	}

	for _, c := range []struct {
		req  server.StartRequest
		code int
		says string
	}{
		{server.StartRequest{Pipeline: "release", Branch: "feature"}, 404, "branch feature"},
		{server.StartRequest{Pipeline: "nothere"}, 404, "no remote pipeline nothere"},
		{server.StartRequest{Pipeline: "release", InputSets: []string{"qa"}}, 404, "no remote input set qa"},
		{server.StartRequest{Pipeline: "release", Branch: "broken"}, 422, "app@" + bad[:12] + ":.harness/release.yaml:7:"},
		{server.StartRequest{File: "x.yaml", Branch: "main"}, 400, "branch, commit and inputSets"},
	} {
		_, out := rg.start(t, c.req, c.code)
		if text := fmt.Sprint(out); !strings.Contains(text, c.says) {
			t.Errorf("%+v: %v, want %q", c.req, out, c.says)
		}
	}
}

// A push trigger runs exactly the pushed commit of its pipeline, with its input set read at
// that commit, even when the next push follows within a second (before the first delivery).
func TestRemoteTriggerRunsThePushedCommit(t *testing.T) {
	rg := newRemoteRig(t)
	g := rg.git
	rg.register(t, remote.Entry{Kind: "pipeline", Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "main"}, 201)
	rg.register(t, remote.Entry{Kind: "inputSet", Identifier: "prod", ConnectorRef: "app_repo", FilePath: ".harness/prod.yaml", Branch: "main"}, 201)
	one := g.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("one", 0)})
	two := g.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("two", 0),
		".harness/prod.yaml": "inputSet:\n  name: prod\n  identifier: prod\n  pipeline:\n    identifier: release\n    variables:\n      - {name: greeting, type: String, value: hello-two}\n"})
	push := func(sha string) []byte {
		return []byte(fmt.Sprintf(`{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000", "after": %q,
  "repository": {"name": "app", "full_name": "acme/app", "html_url": %q, "default_branch": "main"},
  "pusher": {"name": "dev"}, "sender": {"login": "dev"}, "head_commit": {"id": %q, "message": "change"}}`, sha, g.HTTPURL+"/app", sha))
	}
	// A trigger of a pipeline that is neither local nor registered says so, and starts nothing.
	req, _ := http.NewRequest("POST", rg.http.URL+"/api/v1/webhooks/github", bytes.NewReader(push(one)))
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", "push-orphan")
	req.Header.Set("X-Hub-Signature-256", sign(push(one), ciHookSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "pipeline nothere, which is neither in "+rg.dir+" nor registered as a remote pipeline") {
		t.Errorf("the orphan trigger's delivery: %s", body)
	}
	first := deliverGithub(t, rg.http, "push", "push-one", push(one), 1)
	second := deliverGithub(t, rg.http, "push", "push-two", push(two), 1)
	if said, commits := saidAndSources(t, first[0]); said != "one hello-prod from remote app main" || commits["pipeline release"] != "main@"+one || commits["inputSet prod"] != "main@"+one {
		t.Errorf("the first push ran %q from %v", said, commits)
	}
	if said, commits := saidAndSources(t, second[0]); said != "two hello-two from remote app main" || commits["pipeline release"] != "main@"+two {
		t.Errorf("the second push ran %q from %v", said, commits)
	}
}
