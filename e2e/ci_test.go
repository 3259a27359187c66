package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// ciPipeline loads a pipeline whose codebase is repository app of srv (branch main) and whose
// stages (YAML list items) run on the node; IMAGE is the node's busybox image.
func ciPipeline(t testing.TB, srv *gittest.Server, id, stages string, extra ...string) *plan.Plan {
	t.Helper()
	return ciPipelineWith(t, srv, id, stages, load.Options{ForRun: true}, extra...)
}

// ciPipelineWith is ciPipeline loaded with opts.
func ciPipelineWith(t testing.TB, srv *gittest.Server, id, stages string, opts load.Options, extra ...string) *plan.Plan {
	t.Helper()
	n, _ := realNode(t)
	dir := t.TempDir()
	files := ciConnectors(t, srv)
	files[id+".yaml"] = `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  properties:
    ci:
      codebase:
        connectorRef: app_git
        build: {type: branch, spec: {branch: main}}
  stages:
` + strings.ReplaceAll(stages, "IMAGE", n.Image(nodetest.Busybox))
	for i := 0; i+1 < len(extra); i += 2 {
		files[extra[i]] = extra[i+1]
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := load.File(filepath.Join(dir, id+".yaml"), opts)
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// ciConnectors are the files of the connectors a CI pipeline of these tests uses: node (the
// real node's cluster) and app_git (repository app of srv).
func ciConnectors(t testing.TB, srv *gittest.Server) map[string]string {
	n, _ := realNode(t)
	t.Setenv(secrets.EnvName("ci_clone_token"), srv.Password)
	return map[string]string{
		"node.yaml": fmt.Sprintf("connector:\n  name: Node\n  identifier: node\n  type: K8sCluster\n  spec:\n    credential:\n      type: ManualConfig\n      spec:\n        masterUrl: %s\n        insecureSkipTlsVerify: true\n        auth: {type: ServiceAccount, spec: {serviceAccountTokenRef: %s}}\n", n.Server, nodeTokenSecret),
		"git.yaml":  fmt.Sprintf("connector:\n  name: Repo\n  identifier: app_git\n  type: Git\n  spec:\n    url: %s/app.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: ci_clone_token}\n", srv.HTTPURL, srv.Username),
	}
}

// C130: a CI stage clones the codebase into /harness and runs its steps as containers of one
// pod sharing the workspace; an output variable of one step reaches the next; no pod is left.
func TestC130CIStageOnePodSharedWorkspace(t *testing.T) {
	_, cs := realNode(t)
	srv := gittest.Start(t)
	commit := srv.NewRepo("app", map[string]string{"hello.txt": "hello from the codebase\n"})
	p := ciPipeline(t, srv, "c130", ciStage("build", ciStageOpts{Clone: true})+`              - step:
                  type: Run
                  name: a
                  identifier: a
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: cat hello.txt > out.txt; export V=1
                    outputVariables: [{name: V}]
              - step:
                  type: Run
                  name: b
                  identifier: b
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: |
                      cat out.txt
                      TEXT=$(cat out.txt)
                      FROM_A=<+execution.steps.a.output.outputVariables.V>
                      HOST=$(hostname)
                      SHA=<+codebase.commitSha>
                      SHORT=<+codebase.shortCommitSha>
                      BR=<+codebase.branch>
                      DRONE="$CI $HARNESS_WORKSPACE $DRONE_BRANCH $DRONE_COMMIT_SHA $DRONE_REPO_NAME $DRONE_STEP_NAME"
                    outputVariables: [{name: TEXT}, {name: FROM_A}, {name: HOST}, {name: SHA}, {name: SHORT}, {name: BR}, {name: DRONE}]
              - step:
                  type: Run
                  name: c
                  identifier: c
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: HOST=$(hostname)
                    outputVariables: [{name: HOST}]
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.cloneCodebase": status.Succeeded,
		"build.a": status.Succeeded, "build.b": status.Succeeded, "build.c": status.Succeeded})
	if got := res.Tree.Find("build.cloneCodebase").Outputs["commitSha"]; got != commit {
		t.Errorf("cloned %v, want %s", got, commit)
	}
	b, _ := res.Tree.Find("build.b").Outputs["outputVariables"].(map[string]any)
	c, _ := res.Tree.Find("build.c").Outputs["outputVariables"].(map[string]any)
	if b["TEXT"] != "hello from the codebase" || b["FROM_A"] != "1" {
		t.Errorf("b's outputs %v", b)
	}
	if b["SHA"] != commit || b["SHORT"] != commit[:7] || b["BR"] != "main" {
		t.Errorf("<+codebase.*>: %v %v %v, want %s on main", b["SHA"], b["SHORT"], b["BR"], commit)
	}
	if want := "true /harness main " + commit + " app b"; b["DRONE"] != want {
		t.Errorf("built-in variables %q, want %q", b["DRONE"], want)
	}
	if b["HOST"] == nil || b["HOST"] != c["HOST"] {
		t.Errorf("steps b and c ran in different pods: %v, %v", b["HOST"], c["HOST"])
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the stage: %v", left)
	}
}

// C134: a CI stage that names a runtime (the reference's hosted machines) runs on the build
// infrastructure the operator names: the node's connector and namespace, and the default image
// for its step that names none.
func TestC134RuntimeRunsOnBuildInfrastructure(t *testing.T) {
	n, cs := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"hello.txt": "hi\n"})
	p := ciPipelineWith(t, srv, "c134", `    - stage:
        name: build
        identifier: build
        type: CI
        spec:
          cloneCodebase: true
          platform: {os: Linux, arch: Amd64}
          runtime: {type: Cloud, spec: {}}
          execution:
            steps:
              - step: {type: Run, name: a, identifier: a, spec: {shell: Sh, command: "T=$(cat hello.txt)", outputVariables: [{name: T}]}}
`, load.Options{ForRun: true, BuildInfra: &pipeline.BuildInfra{Connector: "node", Namespace: "default", Image: n.Image(nodetest.Busybox)}})
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.a": status.Succeeded})
	if got := res.Tree.Find("build.a").Outputs["outputVariables"]; fmt.Sprint(got) != "map[T:hi]" {
		t.Errorf("outputs %v", got)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the stage: %v", left)
	}
}

// C131: a Run step's JUnit report becomes its test summary (3 tests, 1 failed, named), read
// although the command failed (its failure strategy ignores it); a failing Run step fails its
// CI stage with the command's exit code; the stage's pod is deleted.
func TestC131CIStageExitCode(t *testing.T) {
	_, cs := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"README.md": "x\n"})
	p := ciPipeline(t, srv, "c131", ciStage("test", ciStageOpts{})+`              - step:
                  type: Run
                  name: unit
                  identifier: unit
                  failureStrategies:
                    - onFailure: {errors: [AllErrors], action: {type: Ignore}}
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: |
                      mkdir -p reports
                      cat > reports/unit.xml <<'XML'
                      <testsuites><testsuite name="pkg">
                        <testcase classname="pkg" name="TestA"/>
                        <testcase classname="pkg" name="TestB"><failure message="boom"/></testcase>
                        <testcase classname="pkg" name="TestC"/>
                      </testsuite></testsuites>
                      XML
                      exit 1
                    reports: {type: JUnit, spec: {paths: ["reports/*.xml"]}}
              - step: {type: Run, name: fail, identifier: fail, spec: {image: IMAGE, shell: Sh, command: exit 3}}
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "test.unit": status.IgnoreFailed, "test.fail": status.Failed})
	if got := res.Tree.Find("test.unit").Tests; got == nil || got.Total != 3 || got.Failed != 1 || got.Reports != 1 || fmt.Sprint(got.Failing) != "[pkg.TestB]" {
		t.Errorf("test summary %+v", got)
	}
	if f := res.Tree.Find("test.fail").Failure; f == nil || !strings.Contains(f.Message, "exited with code 3") {
		t.Errorf("failure %+v", f)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the stage: %v", left)
	}
}

// C133: a signed push webhook for branch feature at commit c starts a pipeline whose codebase
// build is left to the run; the CI stage clones feature at c (not the branch's newer head),
// and <+codebase.branch> and <+codebase.commitSha> say so.
func TestC133PushWebhookBuildsItsCommit(t *testing.T) {
	realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"version.txt": "main\n"})
	pushed := srv.Commit("app", "feature", map[string]string{"version.txt": "pushed\n"})
	srv.Commit("app", "feature", map[string]string{"version.txt": "newer\n"})
	n, _ := realNode(t)
	files := ciConnectors(t, srv)
	files["c133.yaml"] = `pipeline:
  name: c133
  identifier: c133
  properties:
    ci:
      codebase:
        connectorRef: app_git
        build: <+input>
  stages:
` + ciStage("build", ciStageOpts{Clone: true}) + `              - step:
                  type: Run
                  name: show
                  identifier: show
                  spec:
                    image: ` + n.Image(nodetest.Busybox) + `
                    shell: Sh
                    command: |
                      VERSION=$(cat version.txt)
                      BRANCH=<+codebase.branch>
                      SHA=<+codebase.commitSha>
                      MSG="<+codebase.commitMessage>"
                    outputVariables: [{name: VERSION}, {name: BRANCH}, {name: SHA}, {name: MSG}]
`
	files["c133.trigger.yaml"] = githubTrigger("feature_push", "c133", "Push", "          payloadConditions:\n            - {key: targetBranch, operator: Equals, value: feature}\n")
	api := webhookAPI(t, files)
	payload := []byte(fmt.Sprintf(`{"ref": "refs/heads/feature", "before": "0000000000000000000000000000000000000000", "after": %q,
  "repository": {"name": "app", "full_name": "acme/app", "html_url": %q, "default_branch": "main"},
  "pusher": {"name": "dev"}, "sender": {"login": "dev"}, "head_commit": {"id": %q, "message": "pushed"}}`, pushed, srv.HTTPURL+"/app", pushed))
	started := deliverGithub(t, api, "push", "c133-1", payload, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := node.starter.Result(ctx, started[0])
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	got, _ := res.Tree.Find("build.show").Outputs["outputVariables"].(map[string]any)
	if got["VERSION"] != "pushed" || got["BRANCH"] != "feature" || got["SHA"] != pushed || got["MSG"] != "pushed" {
		t.Errorf("built %v, want version pushed of branch feature at %s", got, pushed)
	}
}

// SaveCacheS3 and RestoreCacheS3 on a real S3 server (versitygw): a first restore finds no
// cache and succeeds; a saved directory (gzip) comes back in the next CI stage's new pod, and
// S3Upload puts a file of it under its target, its prefix stripped.
func TestCICacheS3(t *testing.T) {
	realNode(t)
	git := gittest.Start(t)
	git.NewRepo("app", map[string]string{"README.md": "x\n"})
	s3, aws := ciS3(t)
	cache := "{connectorRef: aws, region: " + s3test.Region + ", bucket: cache, key: deps-v1, endpoint: " + s3.Endpoint + ", archiveFormat: Gzip"
	p := ciPipeline(t, git, "cache_s3", ciStage("build", ciStageOpts{})+`              - step: {type: RestoreCacheS3, name: restore, identifier: restore, spec: `+cache+`}}
              - step: {type: Run, name: make, identifier: make, spec: {image: IMAGE, shell: Sh, command: "mkdir -p deps/lib && echo built > deps/lib/a.txt"}}
              - step: {type: SaveCacheS3, name: save, identifier: save, spec: `+cache+`, sourcePaths: [deps]}}
    - stage:
        name: test
        identifier: test
        type: CI
        spec:
          infrastructure: {type: UseFromStage, useFromStage: build}
          execution:
            steps:
              - step: {type: RestoreCacheS3, name: restore, identifier: restore, spec: `+cache+`, failIfKeyNotFound: true}}
              - step: {type: Run, name: use, identifier: use, spec: {image: IMAGE, shell: Sh, command: "LIB=$(cat deps/lib/a.txt)", outputVariables: [{name: LIB}]}}
              - step: {type: S3Upload, name: upload, identifier: upload, spec: {connectorRef: aws, region: `+s3test.Region+`, bucket: cache, endpoint: `+s3.Endpoint+`, sourcePath: "deps/**/*.txt", target: artifacts, stripPrefix: deps}}
`, "aws.yaml", aws)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.restore": status.Succeeded, "build.save": status.Succeeded,
		"test.restore": status.Succeeded, "test.use": status.Succeeded})
	if got := res.Tree.Find("build.restore").Outputs["restored"]; got != "false" {
		t.Errorf("the first restore found a cache: %v", got)
	}
	if got := res.Tree.Find("test.restore").Outputs["restored"]; got != "true" {
		t.Errorf("the second restore: %v", got)
	}
	if out, _ := res.Tree.Find("test.use").Outputs["outputVariables"].(map[string]any); out["LIB"] != "built" {
		t.Errorf("restored file: %v", out)
	}
	obj, err := s3.Client().GetObject(context.Background(), &awss3.GetObjectInput{Bucket: awssdk.String("cache"), Key: awssdk.String("artifacts/lib/a.txt")})
	if err != nil {
		t.Fatalf("S3Upload's object: %v (outputs %v)", err, res.Tree.Find("test.upload").Outputs)
	}
	defer obj.Body.Close()
	if b, _ := io.ReadAll(obj.Body); string(b) != "built\n" {
		t.Errorf("uploaded %q", b)
	}
}

// A CI stage's service dependency starts before its steps (after the codebase clone) and
// serves them on localhost until the stage ends; its args follow the image's entrypoint.
func TestCIServiceDependency(t *testing.T) {
	realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"hello.txt": "served from the codebase\n"})
	p := ciPipeline(t, srv, "ci_service", ciStage("build", ciStageOpts{Clone: true, Spec: `          serviceDependencies:
            - identifier: web
              name: web
              type: Service
              spec:
                image: IMAGE
                entrypoint: [httpd]
                args: ["-f", "-p", "8081", "-h", "/harness"]
`})+`              - step:
                  type: Run
                  name: get
                  identifier: get
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: |
                      for i in 1 2 3 4 5 6 7 8 9 10; do BODY=$(wget -qO- http://127.0.0.1:8081/hello.txt) && break; sleep 0.5; done
                    outputVariables: [{name: BODY}]
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.cloneCodebase": status.Succeeded,
		"build.web": status.Succeeded, "build.get": status.Succeeded})
	if out, _ := res.Tree.Find("build.get").Outputs["outputVariables"].(map[string]any); out["BODY"] != "served from the codebase" {
		t.Errorf("the step read %v", out)
	}
}

// A pull request webhook builds the pull request: with the default prCloneStrategy
// (MergeCommit) the merge into its target the Git server computed (the target's newer
// commit included), with SourceBranch its head; <+codebase.*> names the pull request and its
// head commit either way. One delivery starts both pipelines.
func TestCIPullRequestClones(t *testing.T) {
	n, _ := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"base.txt": "old\n"})
	head, merge := srv.PullRequest("app", 7, "main", map[string]string{"feature.txt": "feature\n"}, map[string]string{"base.txt": "new\n"})
	files := ciConnectors(t, srv)
	for id, strategy := range map[string]string{"pr_merge": "", "pr_source": "\n        prCloneStrategy: SourceBranch"} {
		files[id+".yaml"] = `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  properties:
    ci:
      codebase:
        connectorRef: app_git
        build: <+input>` + strategy + `
  stages:
` + ciStage("build", ciStageOpts{Clone: true}) + `              - step:
                  type: Run
                  name: show
                  identifier: show
                  spec:
                    image: ` + n.Image(nodetest.Busybox) + `
                    shell: Sh
                    command: |
                      BASE=$(cat base.txt); FEATURE=$(cat feature.txt); HEAD=$(git rev-parse HEAD 2>/dev/null || true)
                      PR=<+codebase.prNumber>; SHA=<+codebase.commitSha>; SOURCE=<+codebase.sourceBranch>; TYPE=<+codebase.build.type>; STATE=<+codebase.state>
                    outputVariables: [{name: BASE}, {name: FEATURE}, {name: PR}, {name: SHA}, {name: SOURCE}, {name: TYPE}, {name: STATE}]
`
		files[id+".trigger.yaml"] = githubTrigger(id+"_prs", id, "PullRequest", "")
	}
	api := webhookAPI(t, files)
	payload := []byte(fmt.Sprintf(`{"action": "opened", "number": 7,
  "pull_request": {"number": 7, "title": "Add a feature", "state": "open", "head": {"ref": "feature", "sha": %q}, "base": {"ref": "main", "sha": "0000000000000000000000000000000000000000"}},
  "repository": {"name": "app", "full_name": "acme/app", "html_url": %q, "default_branch": "main"}, "sender": {"login": "dev"}}`, head, srv.HTTPURL+"/app"))
	started := deliverGithub(t, api, "pull_request", "pr-7", payload, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := map[string]string{"pr_merge": "new", "pr_source": "old"}
	for _, execution := range started {
		res, err := node.starter.Result(ctx, execution)
		if err != nil {
			t.Fatal(err)
		}
		id := res.Tree.Find("").Name
		conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded})
		got, _ := res.Tree.Find("build.show").Outputs["outputVariables"].(map[string]any)
		if got["BASE"] != want[id] || got["FEATURE"] != "feature" || got["PR"] != "7" || got["SHA"] != head || got["SOURCE"] != "feature" || got["TYPE"] != "PR" || got["STATE"] != "open" {
			t.Errorf("%s built %v, want base %q, the feature, PR 7 at %s", id, got, want[id], head)
		}
		cloned := res.Tree.Find("build.cloneCodebase").Outputs["commitSha"]
		if (id == "pr_merge" && cloned != merge) || (id == "pr_source" && cloned != head) {
			t.Errorf("%s cloned %v (merge %s, head %s)", id, cloned, merge, head)
		}
	}
}

// A looped CI stage has a pod per iteration: each iteration clones and runs in its own, and
// none is left.
func TestCIStageLoopPodPerIteration(t *testing.T) {
	_, cs := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"hello.txt": "hi\n"})
	stage := strings.Replace(ciStage("build", ciStageOpts{Clone: true}), "        type: CI\n", "        type: CI\n        strategy: {repeat: {times: 2}}\n", 1)
	p := ciPipeline(t, srv, "ci_loop", stage+`              - step: {type: Run, name: a, identifier: a, spec: {image: IMAGE, shell: Sh, command: "echo x >> /harness/n; N=$(wc -l < /harness/n); HOST=$(hostname)", outputVariables: [{name: N}, {name: HOST}]}}
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded})
	var hosts []string
	res.Tree.Walk(func(a *workflows.Node) {
		if !strings.HasSuffix(a.Path, ".a") {
			return
		}
		out, _ := a.Outputs["outputVariables"].(map[string]any)
		if a.Status != status.Succeeded || out["N"] != "1" {
			t.Errorf("step %s: %s, saw %v (another iteration's workspace?)", a.Path, a.Status, out)
		}
		hosts = append(hosts, fmt.Sprint(out["HOST"]))
	})
	if len(hosts) != 2 || hosts[0] == hosts[1] {
		t.Errorf("iterations ran in pods %v, want two", hosts)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left: %v", left)
	}
}
