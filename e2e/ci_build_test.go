package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/awsfake"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/internal/topotest"
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
	p := ciPipeline(t, srv, "c132", `    - stage:
        name: build
        identifier: build
        type: CI
        spec:
          cloneCodebase: true
          infrastructure:
            type: KubernetesDirect
            spec:
              connectorRef: node
              namespace: default
              initTimeout: 2m
              # BuildKit reaches the loopback registry on the node's own network.
              podSpecOverlay: |
                spec:
                  hostNetwork: true
          execution:
            steps:
              - step:
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
		return `    - stage:
        name: build
        identifier: build
        type: CI
        spec:
          cloneCodebase: true
          infrastructure:
            type: KubernetesDirect
            spec: {connectorRef: node, namespace: default, initTimeout: 2m}
          execution:
            steps:
              - step: {type: Run, name: long, identifier: long, spec: {image: IMAGE, shell: Sh, command: "` + command + `", outputVariables: [{name: R}]}}
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

	bin, err := topotest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, queue := t.TempDir(), "ci-kill"
	startWorker := func() *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--address", env.srv.Address, "--task-queue", queue, "--data-dir", filepath.Join(dir, "data"),
			"--helper-image", n.Image(nodetest.Helper))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
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
	p := ciPipeline(t, srv, "ecr", `    - stage:
        name: build
        identifier: build
        type: CI
        spec:
          cloneCodebase: true
          infrastructure:
            type: KubernetesDirect
            spec:
              connectorRef: node
              namespace: default
              initTimeout: 2m
              podSpecOverlay: "spec: {hostNetwork: true}"
          execution:
            steps:
              - step: {type: BuildAndPushECR, name: image, identifier: image, timeout: 5m, spec: {connectorRef: aws, account: "123456789012", region: eu-west-1, imageName: team/app, tags: [v1]}}
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
