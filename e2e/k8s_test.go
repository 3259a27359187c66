package e2e

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/cli"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/kubetest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// A real Kubernetes control plane (kube-apiserver, controllers, kwok nodes), started on first
// use and stopped by TestMain.
var kube struct {
	once    sync.Once
	cluster *kubetest.Cluster
	cs      kubernetes.Interface
	err     error
	dir     string
}

const kubeTokenSecret = "k8s_e2e_token"

func cluster(t testing.TB) (*kubetest.Cluster, kubernetes.Interface) {
	t.Helper()
	kube.once.Do(func() {
		kube.dir, kube.err = os.MkdirTemp("", "gantry-e2e-k8s-")
		if kube.err != nil {
			return
		}
		if kube.cluster, kube.err = kubetest.Start(kube.dir); kube.err != nil {
			return
		}
		// The connector's token comes from the secret resolver, as in production.
		os.Setenv(secrets.EnvName(kubeTokenSecret), kube.cluster.Token)
		cfg, err := clientcmd.BuildConfigFromFlags("", kube.cluster.Kubeconfig)
		if err == nil {
			kube.cs, err = kubernetes.NewForConfig(cfg)
		}
		kube.err = err
	})
	if kube.err != nil {
		t.Fatalf("Kubernetes control plane: %v", kube.err)
	}
	return kube.cluster, kube.cs
}

func stopCluster() {
	if kube.cluster != nil {
		kube.cluster.Stop()
	}
	if kube.dir != "" {
		os.RemoveAll(kube.dir)
	}
}

// allowSimultaneous lets deployments to a k8sExample folder's dev infrastructure overlap: no
// resource constraint.
func allowSimultaneous(t testing.TB, dir string) {
	t.Helper()
	infra := filepath.Join(dir, "infra-dev.yaml")
	writeFile(t, infra, strings.Replace(readFile(infra), "  deploymentType: Kubernetes\n", "  deploymentType: Kubernetes\n  allowSimultaneousDeployments: true\n", 1))
}

// k8sExample copies examples/k8s into a folder with the connector pointed at the test cluster
// (ManualConfig with a token secret) and namespaces made unique, and returns the folder.
func k8sExample(t testing.TB, suffix string) string {
	t.Helper()
	c, _ := cluster(t)
	dir := t.TempDir()
	src := filepath.Join("..", "examples", "k8s")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(b), "namespace: gantry-", "namespace: "+suffix+"-")
		text = strings.ReplaceAll(text, "progressDeadlineSeconds: 20", "progressDeadlineSeconds: 2")
		if rel == "connector.yaml" {
			text = fmt.Sprintf(`connector:
  name: Test cluster
  identifier: local_cluster
  type: K8sCluster
  spec:
    credential:
      type: ManualConfig
      spec:
        masterUrl: %s
        insecureSkipTlsVerify: true
        auth:
          type: ServiceAccount
          spec:
            serviceAccountTokenRef: %s
`, c.Server, kubeTokenSecret)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

//go:embed testdata/pipelines/web_dev.yaml
var devPipeline string

func deploymentOf(t *testing.T, cs kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deployment %s/%s: %v", ns, name, err)
	}
	return d
}

// A Deployment stage through the engine: deploy, update, then a release that cannot become
// ready, rolled back by the stage's StageRollback to the previous revision. The cluster is read
// after each run.
func TestK8sRollingUpdateFailureRollback(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-rolling")
	file := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(file, []byte(devPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(sets ...string) *workflows.PipelineResult {
		t.Helper()
		r, err := load.File(file, load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
		}
		_, res := runPlan(t, env.starter, r.Plan)
		return res
	}
	const ns = "e2e-rolling-dev"
	res := run("pipeline.variables.tag=1.27")
	conformance.Check(t, res.Tree, map[string]status.Status{"deploy_dev": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	got := res.Tree.Find("deploy_dev.report").Outputs["outputVariables"].(map[string]any)["context"]
	if got != "Web|PreProduction|"+ns+"|library/nginx:1.27|hello from dev|1" {
		t.Errorf("CD expressions rendered %q", got)
	}
	d := deploymentOf(t, cs, ns, "web")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "library/nginx:1.27" || *d.Spec.Replicas != 2 {
		t.Fatalf("release 1: %s x%d", img, *d.Spec.Replicas)
	}

	res = run("pipeline.variables.tag=1.28")
	conformance.Check(t, res.Tree, map[string]status.Status{"deploy_dev": status.Succeeded})
	if n := res.Tree.Find("deploy_dev.rolling").Outputs["releaseNumber"]; fmt.Sprint(n) != "2" {
		t.Errorf("release number %v", n)
	}

	res = run("pipeline.variables.tag=1.29", "pipeline.variables.zone=nowhere")
	conformance.Check(t, res.Tree, map[string]status.Status{
		"": status.Failed, "deploy_dev": status.Failed, "deploy_dev.rolling": status.Failed,
		"deploy_dev.report": status.NotStarted, "deploy_dev.rollbackSteps.rollback": status.Succeeded})
	if f := res.Tree.Find("deploy_dev.rolling").Failure; f == nil || !strings.Contains(f.Message, "progress deadline exceeded") {
		t.Errorf("rolling failure %+v", f)
	}
	if to := res.Tree.Find("deploy_dev.rollbackSteps.rollback").Outputs["rolledBackTo"]; fmt.Sprint(to) != "2" {
		t.Errorf("rolled back to %v", to)
	}
	d = deploymentOf(t, cs, ns, "web")
	spec := d.Spec.Template.Spec
	if spec.Containers[0].Image != "library/nginx:1.28" || spec.NodeSelector != nil || spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != "web-config-2" {
		t.Fatalf("after rollback: image %s, nodeSelector %v, config %s", spec.Containers[0].Image, spec.NodeSelector, spec.Containers[0].EnvFrom[0].ConfigMapRef.Name)
	}
}

// examples/k8s as `make run-k8s` runs it: dev rolling deploy, a sign-off, then a canary and a
// rolling deploy to production with the production service overrides.
func TestK8sExamplePipeline(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-example")
	r, err := load.File(filepath.Join(dir, "pipeline.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL", User: "executor"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "sign_off.prod_signoff", status.ApprovalWaiting)
	if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "sign_off.prod_signoff", Action: "APPROVE",
		User: "alice", Email: "alice@example.com", Groups: []string{"release_managers"}}); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_prod.canary.canary_deploy": status.Succeeded,
		"deploy_prod.canary.canary_delete": status.Succeeded, "deploy_prod.primary.rolling": status.Succeeded})
	if out := res.Tree.Find("deploy_prod.canary.canary_deploy").Outputs; fmt.Sprint(out["targetInstances"]) != "1" {
		t.Errorf("canary outputs %v (25%% of the 4 production replicas)", out)
	}
	d := deploymentOf(t, cs, "e2e-example-prod", "web")
	if *d.Spec.Replicas != 4 {
		t.Errorf("production replicas %d, want the override 4", *d.Spec.Replicas)
	}
	cm, err := cs.CoreV1().ConfigMaps("e2e-example-prod").Get(ctx, "web-config-1", metav1.GetOptions{})
	if err != nil || cm.Data["GREETING"] != "hello from production" || cm.Data["ENVIRONMENT"] != "prod" {
		t.Errorf("production config %v %v", cm.Data, err)
	}
	if _, err := cs.AppsV1().Deployments("e2e-example-prod").Get(ctx, "web-canary", metav1.GetOptions{}); err == nil {
		t.Error("the canary was not deleted")
	}
	if d := deploymentOf(t, cs, "e2e-example-dev", "web"); *d.Spec.Replicas != 2 {
		t.Errorf("dev replicas %d", *d.Spec.Replicas)
	}
}

// Each `gantry init` strategy deploys twice (a first release and an update) through the engine.
func TestK8sInitStrategies(t *testing.T) {
	_, cs := cluster(t)
	for _, strategy := range cli.Strategies {
		t.Run(strategy, func(t *testing.T) {
			dir := k8sExample(t, "e2e-"+strategy)
			service, infra, ns := "web", "dev_cluster", "e2e-"+strategy+"-dev"
			switch strategy { // NativeHelm stages: the example's Helm service and infrastructures
			case "helm", "helm-canary":
				service, infra, ns = "web_helm", "dev_helm", "e2e-"+strategy+"-helm-dev"
			case "helm-bluegreen":
				service, infra, ns = "web_helm", "dev_helm_bluegreen", "e2e-helm-bluegreen-helm-bluegreen"
			}
			src, err := cli.Scaffold{Strategy: strategy, Name: "web " + strategy, ID: "web_" + strings.ReplaceAll(strategy, "-", "_"), Service: service,
				Environment: "dev", Infrastructure: infra}.Render()
			if err != nil {
				t.Fatal(err)
			}
			// The example's tag comes from a pipeline variable.
			src = []byte(strings.Replace(string(src), "  stages:", "  variables:\n    - {name: tag, type: String, value: <+input>}\n    - {name: zone, type: String, value: \"\"}\n  stages:", 1))
			file := filepath.Join(dir, "init.yaml")
			if err := os.WriteFile(file, src, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, tag := range []string{"1.27", "1.28"} {
				r, err := load.File(file, load.Options{ForRun: true, Sets: []string{"pipeline.variables.tag=" + tag}})
				if err != nil || !r.OK() {
					t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
				}
				_, res := runPlan(t, env.starter, r.Plan)
				conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded})
			}
			name := "web" // the Helm chart names its Deployment after the release, web
			if strategy == "bluegreen" || strategy == "helm-bluegreen" {
				name = "web-green"
			}
			if img := deploymentOf(t, cs, ns, name).Spec.Template.Spec.Containers[0].Image; img != "library/nginx:1.28" {
				t.Errorf("%s runs %s after the update", name, img)
			}
			if strategy == "bluegreen" || strategy == "helm-bluegreen" {
				svc, err := cs.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
				if err != nil || svc.Spec.Selector["harness.io/color"] != "green" {
					t.Errorf("primary service after swap: %v %v", svc.Spec.Selector, err)
				}
			}
		})
	}
}

// Abort reaches a K8s step while it waits for steady state: the watch stops at once, the
// execution ends ABORTED and no rollback runs.
func TestK8sAbortDuringSteadyState(t *testing.T) {
	cluster(t)
	dir := k8sExample(t, "e2e-abort")
	values := filepath.Join(dir, "web", "values.yaml")
	b, _ := os.ReadFile(values)
	os.WriteFile(values, []byte(strings.Replace(string(b), "progressDeadlineSeconds: 2", "progressDeadlineSeconds: 600", 1)), 0o644)
	file := filepath.Join(dir, "dev.yaml")
	os.WriteFile(file, []byte(devPipeline), 0o644)
	r, err := load.File(file, load.Options{ForRun: true, Sets: []string{"pipeline.variables.tag=1.27", "pipeline.variables.zone=nowhere"}})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, r.Plan, workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "deploy_dev.rolling", status.Running)
	if err := env.starter.Abort(ctx, exec.ID, "tester", "stop the rollout"); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The step's timeout is 2 minutes and the context's 1: a result here means the watch stopped.
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Aborted, "deploy_dev.rolling": status.Aborted,
		"deploy_dev.rollbackSteps.rollback": status.NotStarted})
}

// examples/k8s/multi.yaml on the control plane: web and api to dev and prod from one stage.
// The api's production override sends its pods to a zone no node has, so that iteration's
// rollout fails and rolls back on its own while the other three deploy.
func TestK8sMultiServiceMultiEnvironment(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-multi")
	prod := filepath.Join(dir, "env-prod.yaml")
	b, err := os.ReadFile(prod)
	if err != nil {
		t.Fatal(err)
	}
	// A zone only for the api in production: values.yaml reads the pipeline's zone, so the api
	// service gets a values file of its own that reads a service variable instead.
	os.WriteFile(prod, append(b, []byte(`    - serviceRef: api
      variables:
        - {name: zone, type: String, value: nowhere}
`)...), 0o644)
	values, _ := os.ReadFile(filepath.Join(dir, "web", "values.yaml"))
	os.WriteFile(filepath.Join(dir, "web", "api-values.yaml"),
		[]byte(strings.Replace(string(values), "zone: <+pipeline.variables.zone>", "zone: <+serviceVariables.zone>", 1)), 0o644)
	api, _ := os.ReadFile(filepath.Join(dir, "service-api.yaml"))
	api = []byte(strings.Replace(string(api), "valuesPaths: [web/values.yaml]", "valuesPaths: [web/api-values.yaml]", 1))
	api = []byte(strings.Replace(string(api), "      variables:\n", "      variables:\n        - {name: zone, type: String, value: \"\"}\n", 1))
	os.WriteFile(filepath.Join(dir, "service-api.yaml"), api, 0o644)

	r, err := load.File(filepath.Join(dir, "multi.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	_, res := runPlan(t, env.starter, r.Plan)
	// Target-major: deploy_0 web/dev, deploy_1 api/dev, deploy_2 web/prod, deploy_3 api/prod.
	conformance.Check(t, res.Tree, map[string]status.Status{
		"": status.Failed, "deploy": status.Failed,
		"deploy_0": status.Succeeded, "deploy_1": status.Succeeded, "deploy_2": status.Succeeded, "deploy_3": status.Failed,
		"deploy_3.rolling": status.Failed, "deploy_3.rollbackSteps.rollback": status.Succeeded})
	for _, n := range []string{"deploy_0", "deploy_1", "deploy_2"} {
		if rb := res.Tree.Find(n + ".rollbackSteps.rollback"); rb != nil && rb.Status != status.NotStarted {
			t.Errorf("%s rolled back: %s", n, rb.Status)
		}
	}
	for ns, name := range map[string]string{"e2e-multi-dev": "web", "e2e-multi-prod": "web"} {
		if d := deploymentOf(t, cs, ns, name); d.Status.ReadyReplicas == 0 && d.Status.Replicas == 0 {
			t.Errorf("%s/%s has no replicas", ns, name)
		}
	}
	deploymentOf(t, cs, "e2e-multi-dev", "api")
}

// Two executions deploying the same service to the same infrastructure, started together, take
// turns: both succeed, their rollouts do not overlap, and the cluster's revisions follow the
// order in which they held the infrastructure (the first rollout is revision 1, the second's
// image is the one left running).
func TestK8sDeploymentsTakeTurns(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-turns")
	file := filepath.Join(dir, "dev.yaml")
	writeFile(t, file, devPipeline)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ids []string
	for _, tag := range []string{"1.27", "1.28"} {
		exec, err := env.starter.Start(ctx, loadRun(t, file, "pipeline.variables.tag="+tag), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, exec.ID)
	}
	type rollout struct {
		tag        string
		start, end time.Time
	}
	var rolls []rollout
	for i, id := range ids {
		res, err := env.starter.Result(ctx, id)
		if err != nil || res.Status != status.Succeeded {
			t.Fatalf("%s: %v %v", id, res, err)
		}
		n := res.Tree.Find("deploy_dev.rolling")
		rolls = append(rolls, rollout{[]string{"1.27", "1.28"}[i], *n.StartedAt, *n.EndedAt})
	}
	if rolls[1].start.Before(rolls[0].start) {
		rolls[0], rolls[1] = rolls[1], rolls[0]
	}
	if !rolls[1].start.After(rolls[0].end) {
		t.Fatalf("rollouts overlap: %s ran %s-%s, %s ran %s-%s", rolls[0].tag, rolls[0].start, rolls[0].end, rolls[1].tag, rolls[1].start, rolls[1].end)
	}
	const ns = "e2e-turns-dev"
	if img := deploymentOf(t, cs, ns, "web").Spec.Template.Spec.Containers[0].Image; img != "library/nginx:"+rolls[1].tag {
		t.Errorf("running %s, want the second rollout's %s", img, rolls[1].tag)
	}
	sets, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revisions := map[string]string{}
	for _, rs := range sets.Items {
		revisions[rs.Annotations["deployment.kubernetes.io/revision"]] = rs.Spec.Template.Spec.Containers[0].Image
	}
	if revisions["1"] != "library/nginx:"+rolls[0].tag || revisions["2"] != "library/nginx:"+rolls[1].tag {
		t.Errorf("revisions %v, want 1: %s then 2: %s", revisions, rolls[0].tag, rolls[1].tag)
	}
}
