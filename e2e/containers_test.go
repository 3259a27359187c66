package e2e

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/nodetest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

// A real single-node Kubernetes whose node runs containers, started on first use and stopped by
// TestMain, with a worker of its own whose helper image comes from the node's registry.
var node struct {
	once    sync.Once
	n       *nodetest.Node
	cs      kubernetes.Interface
	starter *starter.Starter
	dir     string
	err     error
}

const (
	nodeQueue       = "containers"
	nodeTokenSecret = "node_e2e_token"
)

func realNode(t testing.TB) (*nodetest.Node, kubernetes.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Kubernetes node")
	}
	if shard := os.Getenv("GANTRY_E2E_SHARD"); shard != "" && shard != "node" {
		// The node is one per machine, held by the shard that started it until it ends: a test
		// of another shard would wait for it all that time.
		t.Fatalf("%s uses the real node, and this is e2e shard %s: list its file in hack/go-test.sh's node shard", t.Name(), shard)
	}
	node.once.Do(func() {
		if node.dir, node.err = os.MkdirTemp("", "gantry-e2e-node-"); node.err != nil {
			return
		}
		if node.n, node.err = nodetest.Start(node.dir); node.err != nil {
			return
		}
		os.Setenv(secrets.EnvName(nodeTokenSecret), node.n.Token)
		cfg, err := clientcmd.BuildConfigFromFlags("", node.n.Kubeconfig)
		if err == nil {
			node.cs, err = kubernetes.NewForConfig(cfg)
		}
		if node.err = err; err != nil {
			return
		}
		w := worker.New(env.client, worker.Options{TaskQueue: nodeQueue, Logs: env.logs, Secrets: &secrets.Store{}, Internal: env.internal,
			HelperImage: node.n.Image(nodetest.Helper), BuildKitImage: node.n.Image(nodetest.BuildKit)})
		if node.err = w.Start(); node.err != nil {
			return
		}
		node.starter = &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: nodeQueue}
	})
	if node.err != nil {
		t.Fatalf("Kubernetes node: %v", node.err)
	}
	return node.n, node.cs
}

func stopNode() {
	if node.n != nil {
		node.n.Stop()
	}
	if node.dir != "" {
		os.RemoveAll(node.dir)
	}
}

// containerPipeline loads a pipeline of one Custom stage whose steps are a containerized step
// group on the node; IMAGE in the steps is the node's busybox image.
func containerPipeline(t testing.TB, id, groupSteps string) *plan.Plan {
	return nodePipeline(t, id, `              - stepGroup:
                  name: tools
                  identifier: tools
                  stepGroupInfra:
                    type: KubernetesDirect
                    spec: {connectorRef: node, namespace: default, initTimeout: 2m}
                  sharedPaths: [/cache]
                  steps:
`+groupSteps)
}

// nodePipeline loads a pipeline of one Custom stage with steps, the connector "node" beside it
// and the extra files (name, text pairs).
func nodePipeline(t testing.TB, id, steps string, extra ...string) *plan.Plan {
	t.Helper()
	n, _ := realNode(t)
	dir := t.TempDir()
	for i := 0; i+1 < len(extra); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, extra[i]), []byte(extra[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	connector := fmt.Sprintf(`connector:
  name: Node
  identifier: node
  type: K8sCluster
  spec:
    credential:
      type: ManualConfig
      spec:
        masterUrl: %s
        insecureSkipTlsVerify: true
        auth: {type: ServiceAccount, spec: {serviceAccountTokenRef: %s}}
`, n.Server, nodeTokenSecret)
	if err := os.WriteFile(filepath.Join(dir, "connector.yaml"), []byte(connector), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
` + strings.ReplaceAll(steps, "IMAGE", n.Image(nodetest.Busybox))
	file := filepath.Join(dir, id+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := load.File(file, load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	return r.Plan
}

// podsLeft lists the step group pods still in the namespace (not being deleted).
func podsLeft(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=gantry"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// A group of container steps in one pod: a Background service reached by a later step, the
// workspace and a shared path carrying files between steps, a Run step without a command running its image's
// entrypoint, a Plugin's settings as PLUGIN_*, an output variable passed on, a
// secret masked in the log; the pod is deleted when the group ends.
func TestContainerizedStepGroup(t *testing.T) {
	_, cs := realNode(t)
	os.Setenv(secrets.EnvName("e2e_container_token"), "s3cr3t-container-value")
	p := containerPipeline(t, "containers_ok", `                    - step:
                        type: Background
                        name: web
                        identifier: web
                        spec:
                          image: IMAGE
                          shell: Sh
                          command: mkdir -p /tmp/www && echo pong > /tmp/www/ping && exec httpd -f -v -p 8080 -h /tmp/www
                    - step:
                        type: Run
                        name: write
                        identifier: write
                        spec:
                          image: IMAGE
                          shell: Bash
                          command: |
                            echo "token is <+secrets.getValue("e2e_container_token")> in $BASH_VERSION"
                            echo built > /harness/artifact
                            echo cached > /cache/c
                            VERSION=1.2.$GREETING_LEN
                          envVariables: {GREETING_LEN: "3"}
                          outputVariables: [{name: VERSION}]
                    - step:
                        type: Run
                        name: entry
                        identifier: entry
                        spec:
                          image: IMAGE
                    - step:
                        type: Plugin
                        name: notify
                        identifier: notify
                        spec:
                          image: IMAGE
                          entrypoint: [sh, -c, 'echo "$PLUGIN_CHANNEL $PLUGIN_TAGS" > /harness/plugin']
                          settings: {channel: deploys, tags: [a, b]}
                    - step:
                        type: Run
                        name: read
                        identifier: read
                        spec:
                          image: IMAGE
                          shell: Sh
                          command: |
                            test "$(cat /harness/plugin)" = "deploys a,b"
                            test "$(cat /harness/artifact)" = built
                            test "$(cat /cache/c)" = cached
                            test "$V" = 1.2.3
                            for i in 1 2 3 4 5 6 7 8 9 10; do OUT=$(wget -q -O - http://127.0.0.1:8080/ping) && break; sleep 0.2; done
                            echo "service said $OUT"
                          envVariables:
                            V: <+execution.steps.tools.steps.write.output.outputVariables.VERSION>
                          outputVariables: [{name: OUT}]
`)
	exec, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.tools": status.Succeeded,
		"s.tools.web": status.Succeeded, "s.tools.write": status.Succeeded, "s.tools.entry": status.Succeeded, "s.tools.notify": status.Succeeded, "s.tools.read": status.Succeeded})
	if out := res.Tree.Find("s.tools.read").Outputs["outputVariables"]; fmt.Sprint(out) != "map[OUT:pong]" {
		t.Errorf("read outputs %v", out)
		dumpLogs(t, exec.ID, "s.tools.web", "s.tools.read")
	}
	var log strings.Builder
	if err := env.logs.Copy(context.Background(), &log, exec.ID, "s.tools.write"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "token is "+secrets.Mask+" in 5.") || strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("write's log does not mask the secret:\n%s", log.String())
	}
	// The Background service's own output (httpd -v logs each request) joins its step's log.
	var web strings.Builder
	if err := env.logs.Copy(context.Background(), &web, exec.ID, "s.tools.web"); err != nil || !strings.Contains(web.String(), "output of the Background step's container step-web") ||
		!strings.Contains(web.String(), "response:200") {
		t.Errorf("web's log:\n%s", web.String())
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the group: %v", left)
	}
}

// A Container step runs in a pod of its own (spec 15.4), deleted after the step.
func TestContainerStep(t *testing.T) {
	_, cs := realNode(t)
	p := nodePipeline(t, "container_step", `              - step:
                  type: Container
                  name: migrate
                  identifier: migrate
                  timeout: 2m
                  spec:
                    image: IMAGE
                    shell: Sh
                    command: SCHEMA_VERSION=$((40 + 2))
                    infrastructure:
                      type: KubernetesDirect
                      spec: {connectorRef: node, namespace: default, resources: {limits: {cpu: 500m, memory: 64Mi}}}
                    outputVariables: [{name: SCHEMA_VERSION}]
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.migrate": status.Succeeded})
	if out := res.Tree.Find("s.migrate").Outputs["outputVariables"]; fmt.Sprint(out) != "map[SCHEMA_VERSION:42]" {
		t.Errorf("outputs %v", out)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the step: %v", left)
	}
}

// A GitClone step clones a repository from a real Git server (HTTP, basic auth) into the
// workspace, .git included, for the group's later steps.
func TestGitCloneStep(t *testing.T) {
	realNode(t)
	srv := gittest.Start(t)
	commit := srv.NewRepo("app", map[string]string{"README.md": "hello from git\n"})
	os.Setenv(secrets.EnvName("clone_token"), srv.Password)
	conn := fmt.Sprintf("connector:\n  name: Repo\n  identifier: app_repo\n  type: Git\n  spec:\n    url: %s/app.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: clone_token}\n", srv.HTTPURL, srv.Username)
	p := nodePipeline(t, "git_clone", `              - stepGroup:
                  name: tools
                  identifier: tools
                  stepGroupInfra:
                    type: KubernetesDirect
                    spec: {connectorRef: node, namespace: default}
                  steps:
                    - step:
                        type: GitClone
                        name: clone
                        identifier: clone
                        spec: {connectorRef: app_repo, build: {type: branch, spec: {branch: main}}}
                    - step:
                        type: Run
                        name: use
                        identifier: use
                        spec:
                          image: IMAGE
                          shell: Sh
                          command: |
                            README=$(cat /harness/app/README.md)
                            HEAD=$(cat /harness/app/.git/HEAD)
                          outputVariables: [{name: README}, {name: HEAD}]
`, "git-connector.yaml", conn)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.tools.clone": status.Succeeded, "s.tools.use": status.Succeeded})
	if got := res.Tree.Find("s.tools.clone").Outputs["commitSha"]; got != commit {
		t.Errorf("cloned %v, want %s", got, commit)
	}
	if out := res.Tree.Find("s.tools.use").Outputs["outputVariables"]; fmt.Sprint(out) != "map[HEAD:ref: refs/heads/main README:hello from git]" {
		t.Errorf("outputs %v", out)
	}
}

// DownloadManifests writes a Deployment stage's service manifests (as the service phase
// resolved them) into the group's workspace for its container steps.
func TestDownloadManifestsStep(t *testing.T) {
	realNode(t)
	entities := []string{
		"service.yaml", `service:
  name: web
  identifier: web
  serviceDefinition:
    type: Kubernetes
    spec:
      manifests:
        - manifest:
            identifier: web_manifests
            type: K8sManifest
            spec:
              store: {type: Local, spec: {paths: [manifests]}}
              valuesPaths: [values.yaml]
`,
		"manifests/deploy.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {greeting: '{{ .Values.greeting }}'}\n",
		"values.yaml", "greeting: hello\n",
		"env.yaml", "environment:\n  name: dev\n  identifier: dev\n  type: PreProduction\n",
		"infra.yaml", "infrastructureDefinition:\n  name: node\n  identifier: node_infra\n  environmentRef: dev\n  deploymentType: Kubernetes\n  type: KubernetesDirect\n  spec: {connectorRef: node, namespace: default, releaseName: web}\n",
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(entities); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, entities[i]), []byte(entities[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := realNode(t)
	connector := fmt.Sprintf("connector:\n  name: Node\n  identifier: node\n  type: K8sCluster\n  spec:\n    credential:\n      type: ManualConfig\n      spec:\n        masterUrl: %s\n        insecureSkipTlsVerify: true\n        auth: {type: ServiceAccount, spec: {serviceAccountTokenRef: %s}}\n", n.Server, nodeTokenSecret)
	src := downloadPipeline + n.Image(nodetest.Busybox) + `
                          shell: Sh
                          command: |
                            VALUES=$(cat /harness/web_manifests/values.yaml)
                            grep -q 'kind: ConfigMap' /harness/web_manifests/manifests/deploy.yaml
                          outputVariables: [{name: VALUES}]
`
	for name, text := range map[string]string{"connector.yaml": connector, "download.yaml": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := load.File(filepath.Join(dir, "download.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	_, res := runPlan(t, node.starter, r.Plan)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.tools.download": status.Succeeded, "s.tools.check": status.Succeeded})
	if out := res.Tree.Find("s.tools.check").Outputs["outputVariables"]; fmt.Sprint(out) != "map[VALUES:greeting: hello]" {
		t.Errorf("outputs %v", out)
	}
}

// A container's non-zero exit fails its step (the rest of the group is skipped); an image
// that cannot be pulled fails its step naming the image; a step past its timeout is stopped
// (Timeout); a process over the memory limit is killed; a pod that cannot be scheduled fails
// at the init timeout (Timeout); each deletes its pod.
func TestContainerizedStepFailures(t *testing.T) {
	_, cs := realNode(t)
	p := containerPipeline(t, "containers_exit", `                    - step:
                        type: Run
                        name: fail
                        identifier: fail
                        spec: {image: IMAGE, shell: Sh, command: "echo about to fail; exit 3"}
                    - step:
                        type: Run
                        name: after
                        identifier: after
                        spec: {image: IMAGE, shell: Sh, command: "true"}
`)
	_, res := runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.tools.fail": status.Failed, "s.tools.after": status.Skipped})
	if f := res.Tree.Find("s.tools.fail").Failure; f == nil || !strings.Contains(f.Message, "container step-fail: the command exited with code 3; last output: about to fail") {
		t.Errorf("failure %+v", f)
	}

	p = containerPipeline(t, "containers_pull", `                    - step:
                        type: Run
                        name: missing
                        identifier: missing
                        spec: {image: "`+node.n.Image("no-such-image:1")+`", shell: Sh, command: "true"}
`)
	_, res = runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.tools.missing": status.Failed})
	if f := res.Tree.Find("s.tools.missing").Failure; f == nil || !strings.Contains(f.Message, "no-such-image:1 cannot be pulled") {
		t.Errorf("failure %+v", f)
	}

	p = containerPipeline(t, "containers_timeout", `                    - step:
                        type: Run
                        name: slow
                        identifier: slow
                        timeout: 10s
                        spec: {image: IMAGE, shell: Sh, command: "sleep 60"}
`)
	_, res = runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Expired, "s.tools.slow": status.Expired})
	if f := res.Tree.Find("s.tools.slow").Failure; f == nil || f.Category != "Timeout" || !strings.Contains(f.Message, "longer than its timeout 10s") {
		t.Errorf("failure %+v", f)
	}
	// A process over the container's memory limit is killed by the kernel.
	p = containerPipeline(t, "containers_oom", `                    - step:
                        type: Run
                        name: hungry
                        identifier: hungry
                        spec: {image: IMAGE, shell: Sh, command: "dd if=/dev/zero of=/dev/null bs=64M count=1", resources: {limits: {memory: 24Mi}}}
`)
	_, res = runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "s.tools.hungry": status.Failed})
	if f := res.Tree.Find("s.tools.hungry").Failure; f == nil || !strings.Contains(f.Message, "exited with code 137 (a process was killed: out of memory") {
		t.Errorf("failure %+v", f)
	}

	// A pod that cannot be scheduled fails its first step at the group's init timeout.
	p = nodePipeline(t, "containers_unschedulable", `              - stepGroup:
                  name: tools
                  identifier: tools
                  stepGroupInfra:
                    type: KubernetesDirect
                    spec: {connectorRef: node, namespace: default, initTimeout: 10s, nodeSelector: {pool: nowhere}}
                  steps:
                    - step: {type: Run, name: first, identifier: first, spec: {image: IMAGE, shell: Sh, command: "true"}}
`)
	_, res = runPlan(t, node.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Expired, "s.tools.first": status.Expired})
	if f := res.Tree.Find("s.tools.first").Failure; f == nil || f.Category != "Timeout" || !strings.Contains(f.Message, "did not start within the init timeout 10s: the pod is not scheduled") {
		t.Errorf("failure %+v", f)
	}
	for deadline := time.Now().Add(time.Minute); len(podsLeft(t, cs)) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the groups: %v", left)
	}
}

// Aborting a pipeline while a container step runs stops the command and deletes the pod.
func TestContainerizedStepAbort(t *testing.T) {
	_, cs := realNode(t)
	p := containerPipeline(t, "containers_abort", `                    - step:
                        type: Run
                        name: long
                        identifier: long
                        spec: {image: IMAGE, shell: Sh, command: "echo started; sleep 120"}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec, err := node.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, ctx, exec.ID, "s.tools.long", "started")
	if err := node.starter.Abort(ctx, exec.ID, "tester", "enough"); err != nil {
		t.Fatal(err)
	}
	res, err := node.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "s.tools.long": status.Aborted})
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("pods left after the abort: %v", left)
	}
}

// A worker killed with SIGKILL while a container step runs: a new worker runs the step again
// in the same pod and the group ends with its pod deleted. A run terminated outright leaves
// its pod to the next group that starts in the namespace, which deletes it.
func TestContainerizedWorkerSIGKILL(t *testing.T) {
	n, cs := realNode(t)
	bin := env.gantry
	queue := "containers-kill"
	startWorker := workerProcess(t, n, bin, queue, t.TempDir())
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	p := containerPipeline(t, "containers_kill", `                    - step:
                        type: Run
                        name: slow
                        identifier: slow
                        spec: {image: IMAGE, shell: Sh, command: "echo run >> /harness/runs; sleep 3; cat /harness/runs"}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startWorker()
	execution, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{HeartbeatTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, execution.ID, "s.tools.slow", status.Running)
	for len(podsLeft(t, cs)) == 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the step's command runs
	_ = w.Process.Signal(syscall.SIGKILL)
	_, _ = w.Process.Wait()
	w = startWorker()
	defer func() { _ = w.Process.Signal(syscall.SIGTERM); _, _ = w.Process.Wait() }()
	res, err := s.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "s.tools.slow": status.Succeeded})
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Fatalf("pods left after the group: %v", left)
	}

	// Terminated: nothing of the run deletes its pod; the next group in the namespace does.
	execution, err = s.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, execution.ID, "s.tools.slow", status.Running)
	for len(podsLeft(t, cs)) == 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	orphan := podsLeft(t, cs)
	if err := env.client.TerminateWorkflow(ctx, execution.ID, "", "test"); err != nil {
		t.Fatal(err)
	}
	// The stage's workflow closes with its parent (terminated in turn, by the server).
	pod, err := cs.CoreV1().Pods("default").Get(ctx, orphan[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := env.client.DescribeWorkflowExecution(ctx, pod.Annotations["gantry.io/workflow-id"], "")
		if err != nil {
			t.Fatal(err)
		}
		if d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) != 1 {
		t.Fatalf("after the terminate: pods %v, want the orphan %v", left, orphan)
	}
	_, res = runPlan(t, s, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded})
	for len(podsLeft(t, cs)) > 0 && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if left := podsLeft(t, cs); len(left) > 0 {
		t.Errorf("the terminated run's pod %v is left after the next group", left)
	}
}

// waitForLog waits until a step's log holds a text.
func waitForLog(t *testing.T, ctx context.Context, execution, step, text string) {
	t.Helper()
	for {
		var b strings.Builder
		if env.logs.Copy(context.Background(), &b, execution, step) == nil && strings.Contains(b.String(), text) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s's log never showed %q", step, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dumpLogs(t *testing.T, execution string, steps ...string) {
	for _, s := range steps {
		var b strings.Builder
		_ = env.logs.Copy(context.Background(), &b, execution, s)
		t.Logf("log of %s:\n%s", s, b.String())
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/download.yaml
var downloadPipeline string
