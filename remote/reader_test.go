package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

const pipelineV1 = `pipeline:
  name: release
  identifier: release
  stages:
    - stage:
        name: build
        identifier: build
        template:
          templateRef: build_stage
          versionLabel: v1
          gitBranch: stable
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        spec:
          service:
            serviceRef: checkout
`

const templateStable = `template:
  name: build stage
  identifier: build_stage
  versionLabel: v1
  type: Stage
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step: {type: ShellScript, name: say, identifier: say, spec: {shell: Bash, source: {type: Inline, spec: {script: echo stable}}}}
`

const service = `service:
  name: checkout
  identifier: checkout
  serviceDefinition:
    type: Kubernetes
    spec: {}
`

const inputSet = `inputSet:
  name: prod
  identifier: prod
  pipeline:
    identifier: release
`

type rig struct {
	srv      *gittest.Server
	reg      *Registry
	reader   *Reader
	app      string // first commit of app
	conns    map[string]plan.GitConnector
	fetcher  *gitstore.Fetcher
	cacheDir string
}

func newRig(t *testing.T) *rig {
	srv := gittest.Start(t)
	r := &rig{srv: srv, cacheDir: t.TempDir()}
	r.app = srv.NewRepo("app", map[string]string{
		".harness/release.yaml":   pipelineV1,
		".harness/checkout.yaml":  service,
		".harness/input/prod.yml": inputSet,
		"README.md":               "not read",
	})
	srv.NewRepo("shared", map[string]string{"templates/build.yaml": strings.Replace(templateStable, "echo stable", "echo main", 1)})
	srv.Commit("shared", "stable", map[string]string{"templates/build.yaml": templateStable})
	http := func(repo string) plan.GitConnector {
		return plan.GitConnector{ID: repo, Type: "Git", URL: srv.HTTPURL + "/" + repo + ".git", ConnectionType: "Repo", UsernameRef: "git_user", PasswordRef: "git_token"}
	}
	r.conns = map[string]plan.GitConnector{"app_repo": http("app"), "shared_repo": http("shared"),
		"wrong_token": {ID: "wrong_token", Type: "Git", URL: srv.HTTPURL + "/app.git", ConnectionType: "Repo", UsernameRef: "git_user", PasswordRef: "wrong"},
		"nowhere":     {ID: "nowhere", Type: "Git", URL: fmt.Sprintf("http://127.0.0.1:%d/app.git", freePort(t)), ConnectionType: "Repo"}}
	var err error
	if r.reg, err = Open("", filepath.Join(t.TempDir(), "remote.json")); err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{
		{Kind: KindPipeline, Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "main"},
		{Kind: KindService, Identifier: "checkout", ConnectorRef: "app_repo", FilePath: ".harness/checkout.yaml", Branch: "main"},
		{Kind: KindInputSet, Identifier: "prod", ConnectorRef: "app_repo", FilePath: ".harness/input/prod.yml", Branch: "main"},
		{Kind: KindTemplate, Identifier: "build_stage", ConnectorRef: "shared_repo", FilePath: "templates/build.yaml", Branch: "main"},
	} {
		if err := r.reg.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	r.fetcher = &gitstore.Fetcher{CacheDir: r.cacheDir, Secrets: secrets.Map{"git_user": srv.Username, "git_token": srv.Password, "wrong": "nope"}}
	r.reader = &Reader{Registry: r.reg, Git: r.fetcher, Backoff: 1, Connector: func(ref string) (plan.GitConnector, error) {
		c, ok := r.conns[ref]
		if !ok {
			return plan.GitConnector{}, errors.New("no connector " + ref)
		}
		return c, nil
	}}
	return r
}

func freePort(t *testing.T) int {
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

func sourceOf(ws *Workspace, kind string) plan.Source {
	for _, s := range ws.Sources {
		if s.Kind == kind {
			return s
		}
	}
	return plan.Source{}
}

// A start reads the pipeline, its input set and the service it deploys at one commit of the
// pipeline's repository and branch, and the template it links from another repository at the
// link's gitBranch; each file's commit is recorded. A push after the read changes nothing in
// what a read at the recorded commit returns, and a warm read asks the Git server only for the
// branches' heads.
func TestReadPinsOneCommitPerRepositoryAndBranch(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ws, err := r.reader.Read(ctx, Request{Pipeline: "release", InputSets: []string{"prod"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if len(ws.Sources) != 4 {
		t.Fatalf("sources %+v, want pipeline, input set, template and service", ws.Sources)
	}
	for _, kind := range []string{KindPipeline, KindInputSet, KindService} {
		if s := sourceOf(ws, kind); s.Commit != r.app || s.Branch != "main" || s.Repo != "app" {
			t.Errorf("%s read at %+v, want app@%s on main", kind, s, r.app)
		}
	}
	tpl := sourceOf(ws, KindTemplate)
	if tpl.Branch != "stable" || tpl.Repo != "shared" || len(tpl.Commit) != 40 {
		t.Errorf("template read at %+v, want shared on stable", tpl)
	}
	text, _ := os.ReadFile(filepath.Join(ws.Dir, "template-build_stage.yaml"))
	if !strings.Contains(string(text), "echo stable") {
		t.Errorf("the template was not read at its link's gitBranch:\n%s", text)
	}
	if got := ws.Name(ws.Pipeline); got != "app@"+r.app[:12]+":.harness/release.yaml" {
		t.Errorf("the pipeline is named %q in diagnostics", got)
	}

	second := r.srv.Commit("app", "main", map[string]string{".harness/release.yaml": strings.Replace(pipelineV1, "name: release", "name: release two", 1)})
	old, err := r.reader.Read(ctx, Request{Pipeline: "release", Commit: r.app})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if text, _ := os.ReadFile(old.Pipeline); strings.Contains(string(text), "release two") {
		t.Error("a read at the recorded commit returned the pushed pipeline")
	}
	before := r.srv.Requests()
	warm, err := r.reader.Read(ctx, Request{Pipeline: "release", Commit: r.app})
	if err != nil {
		t.Fatal(err)
	}
	warm.Close()
	if n := r.srv.Requests() - before; n != 1 {
		t.Errorf("a warm read at a pinned commit made %d Git requests, want 1 (the template branch's head)", n)
	}
	abbreviated, err := r.reader.Read(ctx, Request{Pipeline: "release", Commit: r.app[:10]})
	if err != nil {
		t.Fatal(err)
	}
	defer abbreviated.Close()
	if s := sourceOf(abbreviated, KindPipeline); s.Commit != r.app {
		t.Errorf("an abbreviated commit is recorded as %q, want %s", s.Commit, r.app)
	}
	head, err := r.reader.Read(ctx, Request{Pipeline: "release"})
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	if s := sourceOf(head, KindPipeline); s.Commit != second {
		t.Errorf("the branch's head read %s, want %s", s.Commit, second)
	}
}

// What cannot be read refuses the start, naming what is missing and where, never a credential.
func TestReadRefusals(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	put := func(e Entry) {
		if err := r.reg.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	put(Entry{Kind: KindPipeline, Identifier: "gone", ConnectorRef: "app_repo", FilePath: ".harness/gone.yaml", Branch: "main"})
	put(Entry{Kind: KindPipeline, Identifier: "locked", ConnectorRef: "wrong_token", FilePath: ".harness/release.yaml", Branch: "main"})
	put(Entry{Kind: KindPipeline, Identifier: "offline", ConnectorRef: "nowhere", FilePath: ".harness/release.yaml", Branch: "main"})
	put(Entry{Kind: KindPipeline, Identifier: "other", ConnectorRef: "app_repo", FilePath: ".harness/checkout.yaml", Branch: "main"})
	for _, c := range []struct {
		req    Request
		status int
		says   string
	}{
		{Request{Pipeline: "nothere"}, http.StatusNotFound, "no remote pipeline nothere"},
		{Request{Pipeline: "release", Branch: "feature"}, http.StatusNotFound, "branch feature"},
		{Request{Pipeline: "release", Commit: strings.Repeat("1", 40)}, http.StatusNotFound, "no commit 1111"},
		{Request{Pipeline: "gone"}, http.StatusNotFound, "has no file .harness/gone.yaml at " + r.app[:12]},
		{Request{Pipeline: "release", InputSets: []string{"qa"}}, http.StatusNotFound, "no remote input set qa"},
		{Request{Pipeline: "locked"}, http.StatusFailedDependency, "refused the connector's credentials"},
		{Request{Pipeline: "offline"}, http.StatusBadGateway, "cannot reach the Git server"},
		{Request{Pipeline: "other"}, http.StatusUnprocessableEntity, "holds service checkout"},
	} {
		ws, err := r.reader.Read(ctx, c.req)
		var re *Error
		if !errors.As(err, &re) || re.Status != c.status || !strings.Contains(re.Msg, c.says) {
			t.Errorf("%+v: %v, want %d saying %q", c.req, err, c.status, c.says)
		}
		if err == nil {
			ws.Close()
		} else if strings.Contains(err.Error(), r.srv.Password) || strings.Contains(err.Error(), "nope") {
			t.Errorf("%+v: the refusal shows a credential: %v", c.req, err)
		}
	}
}

// The registry keeps what the API registers across restarts; what the declarative file
// declares is read-only through the API and shadows a registration of the same entity.
func TestRegistryKeepsRegistrations(t *testing.T) {
	dir := t.TempDir()
	declared := filepath.Join(dir, "remote.yaml")
	if err := os.WriteFile(declared, []byte("remoteEntities:\n  - {kind: pipeline, identifier: release, connectorRef: app, filePath: .harness/release.yaml, branch: main}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "data", "remote.json")
	reg, err := Open(declared, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Put(Entry{Kind: KindPipeline, Identifier: "release", ConnectorRef: "x", FilePath: "a.yaml", Branch: "main"}); !errors.Is(err, ErrDeclared) {
		t.Errorf("replacing a declared entity: %v", err)
	}
	if err := reg.Put(Entry{Kind: KindService, Identifier: "checkout", ConnectorRef: "app", FilePath: "svc.yaml", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	again, err := Open(declared, store)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.List(); len(got) != 2 || got[0].DeclaredIn != declared || got[1].Identifier != "checkout" {
		t.Errorf("after a restart: %+v", got)
	}
	if ok, err := again.Remove(KindService, "checkout"); !ok || err != nil {
		t.Errorf("remove: %v %v", ok, err)
	}
	if _, err := again.Remove(KindPipeline, "release"); !errors.Is(err, ErrDeclared) {
		t.Errorf("removing a declared entity: %v", err)
	}
	for _, bad := range []string{
		"remoteEntities:\n  - {kind: pipeline, identifier: a, connectorRef: c, filePath: a.yaml}\n",
		"remoteEntities:\n  - {kind: policy, identifier: a, connectorRef: c, filePath: a.yaml, branch: main}\n",
		"remoteEntities:\n  - {kind: pipeline, identifier: a, connectorRef: c, filePath: a.txt, branch: main}\n",
		"remoteEntity: []\n",
	} {
		if err := os.WriteFile(declared, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(declared, ""); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// References are found where the reference writes them; one given as an expression stands for
// every registered entity of its kind.
func TestScanRefs(t *testing.T) {
	refs := scanRefs([]byte(pipelineV1 + `          environment:
            environmentRef: <+input>
            infrastructureDefinitions:
              - identifier: eks_eu
`))
	var got []string
	for _, r := range refs {
		got = append(got, strings.Join(r.kinds, ",")+":"+r.id+":"+r.gitBranch)
	}
	want := "template:build_stage:stable service:checkout: environment:: infrastructure:eks_eu:"
	if strings.Join(got, " ") != want {
		t.Errorf("refs %v, want %s", got, want)
	}
}

// A checkout is laid out as a start is: a pipeline finds the template kept elsewhere in the
// tree, and diagnostics name the files by their paths in the checkout.
func TestCheckoutResolvesAcrossTheTree(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		".harness/release.yaml":         strings.Split(strings.Replace(pipelineV1, "          gitBranch: stable\n", "", 1), "    - stage:\n        name: deploy")[0],
		".harness/templates/build.yaml": strings.Replace(templateStable, "  type: Stage", "  orgIdentifier: default\n  projectIdentifier: default\n  type: Stage", 1),
		"deploy/services/checkout.yml":  service,
		".harness/broken.yaml":          "pipeline:\n  name: b\n  identifier: b\n  stages:\n    - stage:\n        name: a\n       identifier: a\n",
		".git/config.yaml":              "pipeline: {}",
		"k8s/deployment.yaml":           "apiVersion: apps/v1\nkind: Deployment\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, pipelines, err := Checkout(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if got := strings.Join(Sorted(pipelines), " "); got != ".harness/broken.yaml .harness/release.yaml" {
		t.Fatalf("pipelines %s", got)
	}
	res, err := load.File(pipelines[".harness/release.yaml"], load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || len(res.Templates) != 1 {
		t.Errorf("the template kept under .harness/templates was not linked: %v", ws.Rename(res.Diags))
	}
	broken, _ := load.File(pipelines[".harness/broken.yaml"], load.Options{})
	if errs := ws.Rename(broken.Diags.Errors()); len(errs) != 1 || !strings.HasPrefix(errs[0].String(), ".harness/broken.yaml:7:8:") {
		t.Errorf("broken: %v", errs)
	}
}

// A policy library is read at its own branch's head, its Rego files with its sets; the folder
// missing at that commit is a 404 naming it. A folder, or the repository's root, is what a
// policy entry names.
func TestPoliciesReadAtTheirBranch(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if got, _ := r.reader.Policies(ctx, nil); got != nil {
		t.Fatalf("no library registered, yet read %+v", got)
	}
	rules := r.srv.Commit("shared", "rules", map[string]string{"gov/no_latest.rego": "package gantry.no_latest\n", "gov/sets.yaml": "policySets: []\n"})
	lib := Entry{Kind: KindPolicy, Identifier: "gov", ConnectorRef: "shared_repo", FilePath: "gov/", Branch: "rules"}
	if err := lib.Check(); err != nil || lib.FilePath != "gov" {
		t.Fatalf("check: %v %q", err, lib.FilePath)
	}
	root := Entry{Kind: KindPolicy, Identifier: "all", ConnectorRef: "shared_repo", FilePath: "/", Branch: "rules"}
	if err := root.Check(); err != nil || root.FilePath != "." {
		t.Errorf("the root folder: %v %q", err, root.FilePath)
	}
	if err := r.reg.Put(lib); err != nil {
		t.Fatal(err)
	}
	if !r.reg.HasPolicies() {
		t.Fatal("HasPolicies is false")
	}
	libs, err := r.reader.Policies(ctx, nil)
	if err != nil || len(libs) != 1 {
		t.Fatalf("%+v %v", libs, err)
	}
	if b, err := os.ReadFile(filepath.Join(libs[0].Dir, "no_latest.rego")); err != nil || !strings.Contains(string(b), "gantry.no_latest") {
		t.Errorf("the library's Rego: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(libs[0].Dir, "sets.yaml")); err != nil {
		t.Errorf("the library's sets: %v", err)
	}
	if s := libs[0].Source; s.Commit != rules || s.Branch != "rules" || libs[0].Name != "shared@"+rules[:12]+":gov" {
		t.Errorf("source %+v named %s", s, libs[0].Name)
	}
	lib.FilePath = "elsewhere"
	_, err = r.reader.Policies(ctx, &lib)
	var re *Error
	if !errors.As(err, &re) || re.Status != http.StatusNotFound || !strings.Contains(re.Msg, "no folder elsewhere at "+rules[:12]+" (branch rules)") {
		t.Errorf("a missing folder: %v", err)
	}
}

// A pipeline read from Git finds the pipeline its Pipeline stage chains, and that one's input
// sets, among the registered entities: read at the parent's branch when they share its
// repository, recorded as sources, and loaded for the run from there (not from the pipelines
// directory).
func TestReadFollowsChainedPipelines(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	parent := `pipeline:
  name: platform
  identifier: platform
  stages:
    - stage:
        name: team
        identifier: team
        type: Pipeline
        spec:
          org: default
          project: demo
          pipeline: team_deploy
          inputSetReferences: [eu_defaults]
`
	child := `pipeline:
  name: team deploy
  identifier: team_deploy
  orgIdentifier: default
  projectIdentifier: demo
  variables:
    - {name: region, type: String, value: <+input>}
  stages:
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: say, identifier: say, spec: {shell: Bash, source: {type: Inline, spec: {script: echo main <+pipeline.variables.region>}}}}
`
	set := `inputSet:
  name: eu
  identifier: eu_defaults
  orgIdentifier: default
  projectIdentifier: demo
  pipeline:
    identifier: team_deploy
    variables:
      - {name: region, type: String, value: eu-west-1}
`
	r.srv.Commit("app", "main", map[string]string{".harness/platform.yaml": parent, ".harness/team.yaml": child, ".harness/eu.yaml": set})
	feature := r.srv.Commit("app", "feature", map[string]string{".harness/team.yaml": strings.Replace(child, "echo main", "echo feature", 1)})
	for _, e := range []Entry{
		{Kind: KindPipeline, Identifier: "platform", ConnectorRef: "app_repo", FilePath: ".harness/platform.yaml", Branch: "main"},
		{Kind: KindPipeline, Identifier: "team_deploy", ConnectorRef: "app_repo", FilePath: ".harness/team.yaml", Branch: "main"},
		{Kind: KindInputSet, Identifier: "eu_defaults", ConnectorRef: "app_repo", FilePath: ".harness/eu.yaml", Branch: "main"},
	} {
		if err := r.reg.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := r.reader.Read(ctx, Request{Pipeline: "platform", Branch: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var read []string
	for _, s := range ws.Sources {
		read = append(read, s.Kind+" "+s.Identifier+"@"+s.Branch)
		if s.Commit != feature {
			t.Errorf("%s %s read at %s, want the parent's commit %s", s.Kind, s.Identifier, s.Commit, feature)
		}
	}
	if got := strings.Join(read, ", "); got != "pipeline platform@feature, pipeline team_deploy@feature, inputSet eu_defaults@feature" {
		t.Errorf("read %s", got)
	}
	res, err := load.File(ws.Root, load.Options{ForRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Plan == nil {
		t.Fatalf("the chain does not load from Git:\n%s", ws.Rename(res.Diags).Render(ws.RenameSources(res.Sources)))
	}
	b, _ := json.Marshal(res.Plan)
	if !strings.Contains(string(b), "echo feature") || strings.Contains(string(b), "echo main") || !strings.Contains(string(b), "eu-west-1") {
		t.Errorf("the chained pipeline's plan is not the one on the parent's branch with its input set:\n%s", b)
	}
}
