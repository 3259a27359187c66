package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/freeport"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// buildFiles are the files beside a pipeline that builds on the node and deploys what it
// built: the node's registry as connector reg, service app (its image from reg, tagged with
// the run's sequence number), environment e2e and its infrastructure on the node.
func buildFiles(n *nodetest.Node, release string) []string {
	return []string{
		"reg.yaml", "connector:\n  name: reg\n  identifier: reg\n  type: DockerRegistry\n  spec: {dockerRegistryUrl: http://" + n.Registry + ", providerType: Other, auth: {type: Anonymous}}\n",
		"service.yaml", `service:
  name: app
  identifier: app
  serviceDefinition:
    type: Kubernetes
    spec:
      manifests:
        - manifest:
            identifier: m
            type: K8sManifest
            spec:
              store: {type: Local, spec: {paths: [deployment.yaml]}}
              valuesPaths: [values.yaml]
      artifacts:
        primary:
          primaryArtifactRef: img
          sources:
            - identifier: img
              type: DockerRegistry
              spec: {connectorRef: reg, imagePath: app, tag: <+pipeline.sequenceId>}
`,
		"values.yaml", "image: <+artifact.image>\n",
		"deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + release + `
spec:
  replicas: 1
  selector: {matchLabels: {app: ` + release + `}}
  template:
    metadata: {labels: {app: ` + release + `}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: {{ .Values.image }}
`,
		"env.yaml", "environment:\n  name: e2e\n  identifier: e2e\n  type: PreProduction\n",
		"infra.yaml", "infrastructureDefinition:\n  name: node\n  identifier: node_infra\n  environmentRef: e2e\n  deploymentType: Kubernetes\n  type: KubernetesDirect\n  spec: {connectorRef: node, namespace: default, releaseName: " + release + "}\n",
	}
}

// C132: a CI stage builds the codebase's Dockerfile (FROM the registry's busybox, a RUN line
// writing a file) with BuildKit in its pod on the node and pushes it with two tags; the
// Deployment stage rolls the tag out on the same node, and the running container prints what
// the RUN line wrote. The pushed digest is the registry's, published as the reference does.
func TestC132BuildPushDeploy(t *testing.T) {
	n, cs := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{
		"Dockerfile": "FROM " + n.Image(nodetest.Busybox) + "\nARG GREETING=unset\nRUN echo \"$GREETING from RUN at $(date +%s)\" > /built.txt\n" +
			"LABEL stage=c132\nCMD [\"sh\", \"-c\", \"cat /built.txt; sleep 3600\"]\n",
	})
	p := ciPipeline(t, srv, "c132", ciStage("build", ciStageOpts{Clone: true, HostNetwork: true})+`              - step:
                  type: BuildAndPushDockerRegistry
                  name: image
                  identifier: image
                  timeout: 5m
                  spec:
                    connectorRef: reg
                    repo: app
                    tags: [<+pipeline.sequenceId>, latest]
                    buildArgs: {GREETING: hello}
                    labels: {commit: <+codebase.shortCommitSha>}
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: app}
          environment:
            environmentRef: e2e
            infrastructureDefinitions: [{identifier: node_infra}]
          execution:
            steps:
              - step: {type: K8sRollingDeploy, name: roll, identifier: roll, timeout: 3m, spec: {skipDryRun: true}}
              - step:
                  type: ShellScript
                  name: digest
                  identifier: digest
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "D=<+pipeline.stages.build.spec.execution.steps.image.artifact_image.stepArtifacts.publishedImageArtifacts[0].digest>"}}
                    outputVariables: [{name: D, type: String, value: D}]
`, buildFiles(n, "c132-app")...)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.image": status.Succeeded,
		"deploy.roll": status.Succeeded, "deploy.digest": status.Succeeded})
	if t.Failed() {
		b, _ := json.MarshalIndent(res.Tree, "", " ")
		t.Fatalf("tree:\n%s", b)
	}
	seq := fmt.Sprint(res.Tree.Find("build.image").Outputs["stepArtifacts"].(map[string]any)["publishedImageArtifacts"].([]any)[0].(map[string]any)["tag"])
	var digests []string
	for _, tag := range []string{seq, "latest"} {
		ref, err := name.ParseReference(n.Registry+"/app:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(ref)
		if err != nil {
			t.Fatalf("app:%s was not pushed: %v", tag, err)
		}
		digests = append(digests, d.Digest.String())
	}
	published := res.Tree.Find("deploy.digest").Outputs["outputVariables"].(map[string]any)["D"]
	if digests[0] != digests[1] || published != digests[0] {
		t.Errorf("pushed %v, published digest %v", digests, published)
	}
	// The rolled-out container prints the file the RUN line wrote.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logs string
	for ctx.Err() == nil && !strings.Contains(logs, "hello from RUN") {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=c132-app"})
		if err == nil && len(pods.Items) > 0 {
			b, _ := cs.CoreV1().Pods("default").GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			logs = string(b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(logs, "hello from RUN") {
		t.Errorf("the deployed container printed %q", logs)
	}
	_ = cs.AppsV1().Deployments("default").Delete(context.Background(), "c132-app", metav1.DeleteOptions{})
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the stage: %v", left)
	}
}

// A CI stage aborted while a step runs ends ABORTED with its pod deleted; a worker killed with
// SIGKILL mid-stage loses nothing: a new worker runs the step again in the same pod, the clone
// and the step's outputs are there, and no pod is left.
func TestCIStageAbortAndWorkerSIGKILL(t *testing.T) {
	n, cs := realNode(t)
	srv := gittest.Start(t)
	commit := srv.NewRepo("app", map[string]string{"hello.txt": "hi\n"})
	stage := func(command string) string {
		return ciStage("build", ciStageOpts{Clone: true}) + `              - step: {type: Run, name: long, identifier: long, spec: {image: IMAGE, shell: Sh, command: "` + command + `", outputVariables: [{name: R}]}}
`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	p := ciPipeline(t, srv, "ci_abort", stage("echo started; sleep 120"))
	execution, err := node.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, ctx, execution.ID, "build.long", "started")
	if err := node.starter.Abort(ctx, execution.ID, "tester", "enough"); err != nil {
		t.Fatal(err)
	}
	res, err := node.starter.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "build.cloneCodebase": status.Succeeded, "build.long": status.Aborted})
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the abort: %v", left)
	}

	bin := env.gantry
	queue := "ci-kill"
	startWorker := workerProcess(t, n, bin, queue, t.TempDir())
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	p = ciPipeline(t, srv, "ci_kill", stage("echo run >> /harness/runs; sleep 3; R=$(cat hello.txt)-$(wc -l < /harness/runs)"))
	w := startWorker()
	execution, err = s.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{HeartbeatTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, execution.ID, "build.long", status.Running)
	time.Sleep(time.Second) // the step's command runs
	_ = w.Process.Signal(syscall.SIGKILL)
	_, _ = w.Process.Wait()
	w = startWorker()
	defer func() { _ = w.Process.Signal(syscall.SIGTERM); _, _ = w.Process.Wait() }()
	res, err = s.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.cloneCodebase": status.Succeeded, "build.long": status.Succeeded})
	if got := res.Tree.Find("build.cloneCodebase").Outputs["commitSha"]; got != commit {
		t.Errorf("clone at %v, want %s", got, commit)
	}
	// The retried command ran in the same pod: the workspace still holds the first run's line.
	if got := fmt.Sprint(res.Tree.Find("build.long").Outputs["outputVariables"]); got != "map[R:hi-2]" {
		t.Errorf("outputs %s, want the second run in the same workspace", got)
	}
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the stage: %v", left)
	}
}

// BuildAndPushECR logs in to the account's registry with an ECR authorization token of the Aws
// connector (the protocol fake hands out the node's registry as the account's) and pushes the
// image built in the stage's pod there; the token's password never reaches the step's log.
func TestCIBuildAndPushECR(t *testing.T) {
	n, _ := realNode(t)
	srv := gittest.Start(t)
	srv.NewRepo("app", map[string]string{"Dockerfile": "FROM " + n.Image(nodetest.Busybox) + "\nRUN echo ecr > /built.txt\n"})
	fake := awsfake.Start()
	defer fake.Close()
	fake.SetRegistry("http://" + n.Registry)
	t.Setenv("AWS_ENDPOINT_URL_ECR", fake.URL)
	t.Setenv(secrets.EnvName("ecr_key"), "ecr-secret")
	p := ciPipeline(t, srv, "ecr", ciStage("build", ciStageOpts{Clone: true, HostNetwork: true})+`              - step: {type: BuildAndPushECR, name: image, identifier: image, timeout: 5m, spec: {connectorRef: aws, account: "123456789012", region: eu-west-1, imageName: team/app, tags: [v1]}}
`, "aws.yaml", "connector:\n  name: AWS\n  identifier: aws\n  type: Aws\n  spec:\n    credential:\n      type: ManualConfig\n      spec: {accessKey: AKIDECR, secretKeyRef: ecr_key}\n")
	exec, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "build.image": status.Succeeded})
	ref, _ := name.ParseReference(n.Registry+"/team/app:v1", name.Insecure)
	d, err := remote.Head(ref)
	if err != nil {
		t.Fatalf("team/app:v1 was not pushed: %v", err)
	}
	art := res.Tree.Find("build.image").Outputs["stepArtifacts"].(map[string]any)["publishedImageArtifacts"].([]any)[0].(map[string]any)
	if art["digest"] != d.Digest.String() || art["imageName"] != n.Registry+"/team/app" {
		t.Errorf("published %v, pushed %s", art, d.Digest)
	}
	login := false
	for _, c := range fake.Calls() {
		login = login || (c.Action == "GetAuthorizationToken" && c.AccessKeyID == "AKIDECR" && strings.Contains(c.Params["registryIds"], "123456789012"))
	}
	if !login {
		t.Errorf("no ECR login with the connector's key for the account: %+v", fake.Calls())
	}
	var log strings.Builder
	_ = env.logs.Copy(context.Background(), &log, exec.ID, "build.image")
	if strings.Contains(log.String(), "ecr-token-for-") || !strings.Contains(log.String(), "pushed") {
		t.Errorf("step log:\n%s", log.String())
	}
}

// From a push to a running deployment: a signed GitHub push webhook for main reaches Gantry's
// API; the CI stage clones that commit on the real node, restores its S3 cache (versitygw),
// runs its unit tests (a JUnit report with a failing test, allowed by a failure strategy),
// reaches a Background service, saves the cache, builds the Dockerfile (a RUN line writes the
// commit) and pushes it to the loopback registry; the Deployment stage rolls the image out
// with K8sRollingDeploy on the same node, and the running container prints what RUN wrote.
func TestCIToCDFromAPush(t *testing.T) {
	n, cs := realNode(t)
	srv := gittest.Start(t)
	dockerfile := "FROM " + n.Image(nodetest.Busybox) + "\nARG COMMIT=unknown\nRUN echo \"built from $COMMIT\" > /built.txt\nCMD [\"sh\", \"-c\", \"cat /built.txt; sleep 3600\"]\n"
	srv.NewRepo("app", map[string]string{"Dockerfile": dockerfile, "index.html": "v1\n"})
	pushed := srv.Commit("app", "main", map[string]string{"index.html": "v2\n"})
	s3, aws := ciS3(t)
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ports[0])
	cache := "{connectorRef: aws, region: " + s3test.Region + ", bucket: cache, key: deps-<+codebase.branch>, endpoint: " + s3.Endpoint + ", archiveFormat: Gzip"
	files := ciConnectors(t, srv)
	extra := buildFiles(n, "push-app")
	for i := 0; i+1 < len(extra); i += 2 {
		files[extra[i]] = extra[i+1]
	}
	files["aws.yaml"] = aws
	files["push.yaml"] = strings.ReplaceAll(`pipeline:
  name: push
  identifier: push
  properties:
    ci:
      codebase: {connectorRef: app_git, build: <+input>}
  stages:
`+ciStage("build", ciStageOpts{Clone: true, HostNetwork: true, Spec: `          serviceDependencies:
            - {identifier: web, name: web, type: Service, spec: {image: IMAGE, entrypoint: [httpd], args: ["-f", "-p", "PORT", "-h", "/harness"]}}
`})+`              - step: {type: RestoreCacheS3, name: restore, identifier: restore, spec: `+cache+`}}
              - step:
                  type: Run
                  name: unit
                  identifier: unit
                  failureStrategies:
                    - onFailure: {errors: [AllErrors], action: {type: Ignore}}
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: |
                      mkdir -p reports deps
                      echo cached > deps/lib.txt
                      printf '<testsuite name="app"><testcase classname="app" name="ok"/><testcase classname="app" name="flaky"><failure/></testcase></testsuite>' > reports/unit.xml
                      exit 1
                    reports: {type: JUnit, spec: {paths: [reports/unit.xml]}}
              - step:
                  type: Run
                  name: smoke
                  identifier: smoke
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: for i in 1 2 3 4 5 6 7 8 9 10; do PAGE=$(wget -qO- http://127.0.0.1:PORT/index.html) && break; sleep 0.5; done
                    outputVariables: [{name: PAGE}]
              - step: {type: SaveCacheS3, name: save, identifier: save, spec: `+cache+`, sourcePaths: [deps]}}
              - step:
                  type: BuildAndPushDockerRegistry
                  name: image
                  identifier: image
                  timeout: 5m
                  spec: {connectorRef: reg, repo: app, tags: [<+pipeline.sequenceId>], buildArgs: {COMMIT: <+codebase.shortCommitSha>}}
    - stage:
        name: deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: Kubernetes
          service: {serviceRef: app}
          environment: {environmentRef: e2e, infrastructureDefinitions: [{identifier: node_infra}]}
          execution:
            steps:
              - step: {type: K8sRollingDeploy, name: roll, identifier: roll, timeout: 3m, spec: {skipDryRun: true}}
`, "PORT", port)
	files["push.yaml"] = strings.ReplaceAll(files["push.yaml"], "IMAGE", n.Image(nodetest.Busybox))
	files["push.trigger.yaml"] = githubTrigger("main_push", "push", "Push", "          payloadConditions:\n            - {key: targetBranch, operator: Equals, value: main}\n")
	api := webhookAPI(t, files)
	payload := []byte(fmt.Sprintf(`{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000", "after": %q,
  "repository": {"name": "app", "full_name": "acme/app", "html_url": %q, "default_branch": "main"},
  "pusher": {"name": "dev"}, "sender": {"login": "dev"}, "head_commit": {"id": %q, "message": "v2"}}`, pushed, srv.HTTPURL+"/app", pushed))
	started := deliverGithub(t, api, "push", "push-1", payload, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := node.starter.Result(ctx, started[0])
	if err != nil {
		t.Fatal(err)
	}
	// The ignored test failure shows on the run, as in the reference: IGNORE_FAILED.
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.IgnoreFailed, "deploy": status.Succeeded, "build.cloneCodebase": status.Succeeded, "build.web": status.Succeeded,
		"build.restore": status.Succeeded, "build.unit": status.IgnoreFailed, "build.smoke": status.Succeeded, "build.save": status.Succeeded,
		"build.image": status.Succeeded, "deploy.roll": status.Succeeded})
	if got := res.Tree.Find("build.cloneCodebase").Outputs["commitSha"]; got != pushed {
		t.Errorf("cloned %v, want the pushed %s", got, pushed)
	}
	if tests := res.Tree.Find("build.unit").Tests; tests == nil || tests.Total != 2 || tests.Failed != 1 {
		t.Errorf("unit tests %+v", tests)
	}
	if got := fmt.Sprint(res.Tree.Find("build.smoke").Outputs["outputVariables"]); got != "map[PAGE:v2]" {
		t.Errorf("the Background service served %s", got)
	}
	if _, err := s3.Client().HeadObject(ctx, &awss3.HeadObjectInput{Bucket: awssdk.String("cache"), Key: awssdk.String("deps-main")}); err != nil {
		t.Errorf("the cache was not saved: %v", err)
	}
	want := "built from " + pushed[:7]
	var logs string
	for ctx.Err() == nil && !strings.Contains(logs, want) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=push-app"})
		if err == nil && len(pods.Items) > 0 {
			b, _ := cs.CoreV1().Pods("default").GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			logs = string(b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(logs, want) {
		t.Errorf("the deployed container printed %q, want %q", logs, want)
	}
	_ = cs.AppsV1().Deployments("default").Delete(context.Background(), "push-app", metav1.DeleteOptions{})
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("CI pods left: %v", left)
	}
}
