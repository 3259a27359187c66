package k8s_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	k8s "github.com/gantry-cd/gantry/activities/k8s"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/kubetest"
	"github.com/gantry-cd/gantry/plan"
)

// These tests run the Kubernetes steps against a real control plane (kube-apiserver, controllers,
// scheduler and kwok's simulated nodes) and read the results back from the cluster.

var cluster *kubetest.Cluster
var cs kubernetes.Interface

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gantry-k8s-")
	if err != nil {
		panic(err)
	}
	cluster, err = kubetest.Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err == nil {
		cs, err = kubernetes.NewForConfig(cfg)
	}
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	cluster.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// secretMap resolves the connector's token secret.
type secretMap map[string]string

func (m secretMap) Resolve(_ context.Context, id string) (string, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	return "", fmt.Errorf("secret %q is not defined", id)
}

type harness struct {
	t       testing.TB
	ns      string
	release string
	token   string
	url     string
	exec    string
	logs    logs.Store
}

func newHarness(t testing.TB, ns string) *harness {
	return &harness{t: t, ns: ns, release: "rel-" + ns, token: cluster.Token, url: cluster.Server, exec: "exec-" + ns,
		logs: logs.Store{Dir: t.TempDir()}}
}

// run runs one step through Temporal's activity test environment.
func (h *harness) run(stepType, spec string, ms []plan.Manifest, rollback bool, timeout time.Duration) (map[string]any, *contract.Failure) {
	h.t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestActivityEnvironment()
	a := &k8s.Activity{Secrets: secretMap{"k8s_token": h.token}, Logs: h.logs}
	env.RegisterActivity(a.Run)
	in := contract.StepInput{ExecutionID: h.exec, StepPath: "stage." + strings.ToLower(stepType), Type: stepType,
		Spec: []byte(spec), Timeout: timeout,
		Deploy: &contract.DeployInput{Namespace: h.ns, ReleaseName: h.release, Rollback: rollback, Manifests: ms,
			Connector: plan.Connector{ID: "test", Type: "ManualConfig", MasterURL: h.url, TokenRef: "k8s_token", InsecureSkipTLSVerify: true}}}
	v, err := env.ExecuteActivity(a.Run, in)
	if err != nil {
		return nil, contract.Classify(err)
	}
	var res contract.StepResult
	if err := v.Get(&res); err != nil {
		h.t.Fatal(err)
	}
	return res.Outputs, nil
}

func (h *harness) ok(stepType, spec string, ms []plan.Manifest) map[string]any {
	h.t.Helper()
	out, f := h.run(stepType, spec, ms, false, time.Minute)
	if f != nil {
		h.t.Fatalf("%s failed: %s: %s", stepType, f.Category, f.Message)
	}
	return out
}

// app renders a service's manifests: a ConfigMap, a Deployment using it and a Service.
func app(tag string, replicas int, extra ...plan.File) []plan.Manifest {
	files := []plan.File{
		{Path: "manifests/config.yaml", Text: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\ndata: {TAG: {{ .Values.tag | quote }}, RELEASE: \"" + contract.ReleaseRevisionMarker + "\"}\n"},
		{Path: "manifests/deployment.yaml", Text: `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: {{ .Values.replicas }}
  progressDeadlineSeconds: {{ .Values.deadline }}
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      {{- with .Values.zone }}
      nodeSelector: {topology.kubernetes.io/zone: {{ . }}}
      {{- end }}
      containers:
        - name: app
          image: nginx:{{ .Values.tag }}
          envFrom: [{configMapRef: {name: app-config}}]
`},
		{Path: "manifests/service.yaml", Text: "apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: {selector: {app: app}, ports: [{port: 80}]}\n"},
	}
	values := fmt.Sprintf("tag: %q\nreplicas: %d\ndeadline: 600\n", tag, replicas)
	return []plan.Manifest{{ID: "app", Type: "K8sManifest", Files: append(files, extra...), Values: []plan.File{{Path: "values.yaml", Text: values}}}}
}

// withValues appends a values file overriding the first.
func withValues(ms []plan.Manifest, text string) []plan.Manifest {
	ms[0].Values = append(ms[0].Values, plan.File{Path: "override.yaml", Text: text})
	return ms
}

func (h *harness) deployment(name string) (image, config string, replicas int32) {
	h.t.Helper()
	d, err := cs.AppsV1().Deployments(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get deployment %s: %v", name, err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.EnvFrom) > 0 && c.EnvFrom[0].ConfigMapRef != nil {
		config = c.EnvFrom[0].ConfigMapRef.Name
	}
	return c.Image, config, *d.Spec.Replicas
}

func (h *harness) exists(get func() error) bool {
	h.t.Helper()
	err := get()
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

func (h *harness) configMap(name string) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get ConfigMap %s: %v", name, err)
	}
	return cm
}

func TestRollingDeployUpdateFailureAndRollback(t *testing.T) {
	h := newHarness(t, "rolling")
	out := h.ok("K8sRollingDeploy", `{}`, app("1.27", 3))
	if out["releaseNumber"] != float64(1) || out["releaseName"] != h.release {
		t.Fatalf("first release outputs: %v", out)
	}
	if ips, _ := out["podIps"].([]any); len(ips) != 3 {
		t.Errorf("podIps = %v, want 3 running pods", out["podIps"])
	}
	img, cfg, _ := h.deployment("app")
	if img != "nginx:1.27" || cfg != "app-config-1" {
		t.Fatalf("after release 1: image %s config %s", img, cfg)
	}
	if got := h.configMap("app-config-1").Data["RELEASE"]; got != "1" {
		t.Errorf("release revision in the manifest = %q, want 1", got)
	}

	out = h.ok("K8sRollingDeploy", `{"skipDryRun": true}`, app("1.28", 3))
	if out["releaseNumber"] != float64(2) {
		t.Fatalf("second release outputs: %v", out)
	}
	img, cfg, _ = h.deployment("app")
	if img != "nginx:1.28" || cfg != "app-config-2" || h.configMap("app-config-1").Data["TAG"] != "1.27" {
		t.Fatalf("after release 2: image %s config %s", img, cfg)
	}

	// Release 3 cannot schedule (no node has the zone) and its progress deadline passes.
	_, f := h.run("K8sRollingDeploy", `{}`, withValues(app("1.29", 3), "zone: nowhere\ndeadline: 2\n"), false, time.Minute)
	if f == nil || f.Category != contract.Unknown || !strings.Contains(f.Message, "Deployment/app") || !strings.Contains(f.Message, "progress deadline exceeded") {
		t.Fatalf("release 3 failure = %+v, want the failing Deployment and its reason", f)
	}
	out = h.ok("K8sRollingRollback", `{}`, nil)
	if out["rolledBackTo"] != float64(2) {
		t.Fatalf("rollback outputs: %v", out)
	}
	img, cfg, _ = h.deployment("app")
	if img != "nginx:1.28" || cfg != "app-config-2" {
		t.Fatalf("after rollback: image %s config %s, want release 2's", img, cfg)
	}
	d, _ := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if d.Spec.Template.Spec.NodeSelector != nil || d.Status.AvailableReplicas != 3 {
		t.Errorf("after rollback: nodeSelector %v, %d available", d.Spec.Template.Spec.NodeSelector, d.Status.AvailableReplicas)
	}
	// A rollback by an execution that deployed nothing does nothing.
	h.exec = "another-execution"
	if out := h.ok("K8sRollingRollback", `{}`, nil); out["rolledBack"] != false {
		t.Errorf("rollback from another execution: %v", out)
	}
	logText, _ := os.ReadFile(h.logs.Path("exec-rolling", "stage.k8srollingdeploy"))
	if !strings.Contains(string(logText), "steady state") {
		t.Errorf("step log lacks progress:\n%s", logText)
	}
}

func TestCanaryThenDelete(t *testing.T) {
	h := newHarness(t, "canary")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 4))
	out := h.ok("K8sCanaryDeploy", `{"instanceSelection": {"type": "Percentage", "spec": {"percentage": "30"}}}`, app("1.28", 4))
	if out["canaryWorkload"] != "Deployment/app-canary" || out["targetInstances"] != float64(2) {
		t.Fatalf("canary outputs: %v (30%% of 4 rounds up to 2)", out)
	}
	img, cfg, n := h.deployment("app-canary")
	if img != "nginx:1.28" || cfg != "app-config-canary" || n != 2 {
		t.Fatalf("canary: image %s config %s replicas %d", img, cfg, n)
	}
	if img, _, n := h.deployment("app"); img != "nginx:1.27" || n != 4 {
		t.Fatalf("primary changed by the canary: %s x%d", img, n)
	}
	out = h.ok("K8sCanaryDelete", `{}`, app("1.28", 4))
	if ids, _ := out["deletedResourceIds"].([]any); len(ids) != 2 {
		t.Errorf("deleted = %v, want the canary Deployment and ConfigMap", out["deletedResourceIds"])
	}
	if h.exists(func() error {
		_, err := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app-canary", metav1.GetOptions{})
		return err
	}) {
		t.Error("canary Deployment still exists")
	}
	if out := h.ok("K8sCanaryDelete", `{}`, nil); len(out["deletedResourceIds"].([]any)) != 0 {
		t.Errorf("second delete: %v", out)
	}
}

func (h *harness) selector(svc string) string {
	h.t.Helper()
	s, err := cs.CoreV1().Services(h.ns).Get(context.Background(), svc, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return s.Spec.Selector[k8s.LabelColor]
}

func TestBlueGreenThenSwap(t *testing.T) {
	h := newHarness(t, "bluegreen")
	out := h.ok("K8sBlueGreenDeploy", `{}`, app("1.27", 2))
	if out["stageColor"] != "blue" || out["primaryColor"] != "blue" || out["stageServiceName"] != "app-stage" {
		t.Fatalf("first blue-green outputs: %v", out)
	}
	if h.selector("app") != "blue" || h.selector("app-stage") != "blue" {
		t.Fatalf("first deployment: both services should route to blue")
	}
	if out := h.ok("K8sBGSwapServices", `{}`, app("1.27", 2)); out["swapped"] != false {
		t.Errorf("swap after the first deployment: %v", out)
	}
	out = h.ok("K8sBlueGreenDeploy", `{}`, app("1.28", 2))
	if out["stageColor"] != "green" || out["primaryColor"] != "blue" {
		t.Fatalf("second blue-green outputs: %v", out)
	}
	if img, _, _ := h.deployment("app-green"); img != "nginx:1.28" {
		t.Fatalf("green runs %s", img)
	}
	if h.selector("app") != "blue" || h.selector("app-stage") != "green" {
		t.Fatalf("before swap: primary %s stage %s", h.selector("app"), h.selector("app-stage"))
	}
	// A rollback swap before this execution swapped anything leaves traffic alone.
	if out, f := h.run("K8sBGSwapServices", `{}`, app("1.28", 2), true, time.Minute); f != nil || out["swapped"] != false {
		t.Fatalf("rollback swap without a forward swap: %v %v", out, f)
	}
	h.ok("K8sBGSwapServices", `{}`, app("1.28", 2))
	if h.selector("app") != "green" || h.selector("app-stage") != "blue" {
		t.Fatalf("after swap: primary %s stage %s", h.selector("app"), h.selector("app-stage"))
	}
	// Rapid rollback: the rollback section swaps back.
	if out, f := h.run("K8sBGSwapServices", `{}`, app("1.28", 2), true, time.Minute); f != nil || out["swapped"] != true {
		t.Fatalf("rollback swap: %v %v", out, f)
	}
	if h.selector("app") != "blue" || h.selector("app-stage") != "green" {
		t.Fatalf("after rollback swap: primary %s stage %s", h.selector("app"), h.selector("app-stage"))
	}
	out = h.ok("K8sBlueGreenDeploy", `{"skipUnchangedManifest": true}`, app("1.27", 2))
	if out["stageDeploymentSkipped"] != true {
		t.Errorf("unchanged manifest redeployed: %v", out)
	}
}

func TestScale(t *testing.T) {
	h := newHarness(t, "scale")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 4))
	out := h.ok("K8sScale", `{"workload": "Deployment/app", "instanceSelection": {"type": "Count", "spec": {"count": "6"}}}`, app("1.27", 4))
	if _, _, n := h.deployment("app"); n != 6 || out["replicas"] != float64(6) {
		t.Fatalf("scaled to %d, outputs %v", n, out)
	}
	d, _ := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if d.Status.AvailableReplicas != 6 {
		t.Errorf("steady state not awaited: %d available", d.Status.AvailableReplicas)
	}
	h.ok("K8sScale", `{"workload": "app", "instanceSelection": {"type": "Percentage", "spec": {"percentage": "50"}}, "skipSteadyStateCheck": true}`, app("1.27", 4))
	if _, _, n := h.deployment("app"); n != 2 {
		t.Fatalf("50%% of the manifest's 4 replicas: got %d", n)
	}
}

// K8sPatch patches the live workload by each merge strategy, records the change cause when
// asked, and waits for the rollout a template change starts.
func TestPatch(t *testing.T) {
	h := newHarness(t, "patch")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 2))
	h.ok("K8sPatch", `{"workload": "Deployment/app", "mergeStrategyType": "Strategic", "recordChangeCause": "true",
		"source": {"type": "Inline", "spec": {"content": "spec:\n  template:\n    metadata:\n      annotations: {patched: \"yes\"}\n"}}}`, app("1.27", 2))
	d, _ := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if d.Spec.Template.Annotations["patched"] != "yes" || !strings.Contains(d.Annotations["kubernetes.io/change-cause"], "K8sPatch") {
		t.Fatalf("strategic patch: template annotations %v, annotations %v", d.Spec.Template.Annotations, d.Annotations)
	}
	if d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 {
		t.Errorf("the rollout the patch started was not awaited: %+v", d.Status)
	}
	h.ok("K8sPatch", `{"workload": "app", "mergeStrategyType": "Json", "skipSteadyStateCheck": true,
		"source": {"type": "Inline", "spec": {"content": "[{op: replace, path: /spec/replicas, value: 3}]"}}}`, app("1.27", 2))
	if _, _, n := h.deployment("app"); n != 3 {
		t.Errorf("json patch: %d replicas", n)
	}
	h.ok("K8sPatch", `{"workload": "Service/app", "mergeStrategyType": "Merge",
		"source": {"type": "Inline", "spec": {"content": "{\"metadata\": {\"labels\": {\"patched\": \"yes\"}}}"}}}`, app("1.27", 2))
	if svc, _ := cs.CoreV1().Services(h.ns).Get(context.Background(), "app", metav1.GetOptions{}); svc.Labels["patched"] != "yes" {
		t.Errorf("merge patch of a Service: %v", svc.Labels)
	}
	for spec, want := range map[string]string{
		`{"workload": "Deployment/nowhere", "mergeStrategyType": "Merge", "source": {"type": "Inline", "spec": {"content": "{}"}}}`:                         "nowhere",
		`{"workload": "Deployment/app", "mergeStrategyType": "Json", "source": {"type": "Inline", "spec": {"content": "{spec: [}"}}}`:                       "neither YAML nor JSON",
		`{"workload": "Deployment/app", "mergeStrategyType": "Merge", "source": {"type": "Inline", "spec": {"content": "{metadata: {labels: {n: 1.5}}}"}}}`: "the patched object is invalid: json: cannot unmarshal number",
		`{"workload": "Deployment/app", "mergeStrategyType": "Json", "source": {"type": "Inline", "spec": {"content": "[{op: nope}]"}}}`:                    "patch patch/Deployment/app (Json)",
	} {
		if _, f := h.run("K8sPatch", spec, app("1.27", 2), false, time.Minute); f == nil || !strings.Contains(f.Message, want) {
			t.Errorf("%s: failure %v, want %q", spec, f, want)
		}
	}
}

// K8sRollout's commands, as kubectl rollout runs them: history, undo back to the previous
// revision, restart, pause and resume, status.
func TestRollout(t *testing.T) {
	h := newHarness(t, "rollout")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 2))
	h.ok("K8sRollingDeploy", `{}`, app("1.28", 2))
	byName := `"resources": {"type": "ResourceName", "spec": {"resourceNames": ["Deployment/app"]}}`
	out := h.ok("K8sRollout", `{"command": "history", `+byName+`}`, app("1.28", 2))
	hist, _ := out["history"].(map[string]any)
	revs, _ := hist["rollout/Deployment/app"].([]any)
	if len(revs) != 2 || !strings.Contains(fmt.Sprint(revs[0]), "nginx:1.27") || !strings.Contains(fmt.Sprint(revs[1]), "nginx:1.28") {
		t.Fatalf("history: %v", out)
	}
	h.ok("K8sRollout", `{"command": "undo", "resources": {"type": "ReleaseName", "spec": {}}}`, app("1.28", 2))
	if img, _, _ := h.deployment("app"); img != "nginx:1.27" {
		t.Fatalf("after undo the Deployment runs %s", img)
	}
	d, _ := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 {
		t.Errorf("undo's rollout not awaited: %+v", d.Status)
	}
	h.ok("K8sRollout", `{"command": "restart", `+byName+`}`, app("1.28", 2))
	d, _ = cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("restart: template annotations %v", d.Spec.Template.Annotations)
	}
	h.ok("K8sRollout", `{"command": "pause", `+byName+`}`, app("1.28", 2))
	if d, _ = cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{}); !d.Spec.Paused {
		t.Error("not paused")
	}
	h.ok("K8sRollout", `{"command": "resume", "resources": {"type": "ManifestPath", "spec": {"manifestPaths": ["manifests/deployment.yaml"]}}}`, app("1.28", 2))
	if d, _ = cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{}); d.Spec.Paused {
		t.Error("not resumed")
	}
	h.ok("K8sRollout", `{"command": "status", "resources": {"type": "ManifestPath", "spec": {"allManifestPaths": true}}}`, app("1.28", 2))
	for spec, want := range map[string]string{
		`{"command": "undo", "resources": {"type": "ResourceName", "spec": {"resourceNames": ["Service/app"]}}}`: "no Deployment, StatefulSet or DaemonSet",
		`{"command": "shake", ` + byName + `}`: "is not restart, pause, resume, undo, status or history",
	} {
		if _, f := h.run("K8sRollout", spec, app("1.28", 2), false, time.Minute); f == nil || !strings.Contains(f.Message, want) {
			t.Errorf("%s: failure %v, want %q", spec, f, want)
		}
	}
}

// K8sDiff shows what the next deployment would change against the live objects, without
// changing them; unchanged objects are left out.
func TestDiff(t *testing.T) {
	h := newHarness(t, "diff")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 2))
	out := h.ok("K8sDiff", `{}`, app("1.28", 2))
	d, _ := out["diff"].(string)
	if !strings.Contains(d, "-        image: nginx:1.27") || !strings.Contains(d, "+        image: nginx:1.28") {
		t.Errorf("diff:\n%s", d)
	}
	changed := fmt.Sprint(out["changedResources"])
	if !strings.Contains(changed, "diff/Deployment/app") || strings.Contains(changed, "Service/app") {
		t.Errorf("changed resources: %s", changed)
	}
	if img, _, _ := h.deployment("app"); img != "nginx:1.27" {
		t.Errorf("the diff changed the Deployment: %s", img)
	}
}

// K8sBlueGreenStageScaleDown: nothing to do on a first deployment (both Services route to the
// one colour); after a second deployment and the swap, the old colour scales to zero.
func TestBlueGreenStageScaleDown(t *testing.T) {
	h := newHarness(t, "bgdown")
	h.ok("K8sBlueGreenDeploy", `{}`, app("1.27", 2))
	if out := h.ok("K8sBlueGreenStageScaleDown", `{}`, app("1.27", 2)); out["scaledDown"] != false {
		t.Errorf("first deployment: %v", out)
	}
	h.ok("K8sBlueGreenDeploy", `{}`, app("1.28", 2))
	h.ok("K8sBGSwapServices", `{}`, app("1.28", 2))
	out := h.ok("K8sBlueGreenStageScaleDown", `{}`, app("1.28", 2))
	if out["scaledDown"] != true || out["stageColor"] != "blue" {
		t.Fatalf("after the swap: %v", out)
	}
	if _, _, n := h.deployment("app-blue"); n != 0 {
		t.Errorf("app-blue has %d replicas", n)
	}
	if _, _, n := h.deployment("app-green"); n != 2 {
		t.Errorf("the primary app-green has %d replicas", n)
	}
}

var extra = plan.File{Path: "manifests/extra.yaml", Text: "apiVersion: v1\nkind: Service\nmetadata: {name: extra}\nspec: {selector: {app: app}, ports: [{port: 81}]}\n"}

func (h *harness) serviceExists(name string) bool {
	return h.exists(func() error {
		_, err := cs.CoreV1().Services(h.ns).Get(context.Background(), name, metav1.GetOptions{})
		return err
	})
}

func TestPruningAndDelete(t *testing.T) {
	h := newHarness(t, "prune")
	h.ok("K8sRollingDeploy", `{}`, app("1.27", 1, extra))
	if !h.serviceExists("extra") {
		t.Fatal("extra Service not applied")
	}
	out := h.ok("K8sRollingDeploy", `{"pruningEnabled": true}`, app("1.28", 1))
	pruned, _ := out["prunedResourceIds"].([]any)
	if len(pruned) != 1 || pruned[0] != "prune/Service/extra" || h.serviceExists("extra") {
		t.Fatalf("pruned = %v; extra still exists: %v", pruned, h.serviceExists("extra"))
	}
	if !h.exists(func() error {
		_, err := cs.CoreV1().ConfigMaps(h.ns).Get(context.Background(), "app-config-1", metav1.GetOptions{})
		return err
	}) {
		t.Error("release 1's versioned ConfigMap was pruned; rollback needs it")
	}
	out = h.ok("K8sRollingRollback", `{"pruningEnabled": true}`, nil)
	if ids, _ := out["recreatedResourceIds"].([]any); len(ids) != 1 || !h.serviceExists("extra") {
		t.Fatalf("rollback with pruning recreated %v", out["recreatedResourceIds"])
	}

	out = h.ok("K8sDelete", `{"deleteResources": {"type": "ResourceName", "spec": {"resourceNames": ["service/extra", "prune/Deployment/app"]}}}`, nil)
	if ids, _ := out["deletedResourceIds"].([]any); len(ids) != 2 || h.serviceExists("extra") {
		t.Fatalf("delete by name: %v", out)
	}
	h.ok("K8sDelete", `{"deleteResources": {"type": "ManifestPath", "spec": {"manifestPaths": ["service.yaml"]}}}`, app("1.28", 1))
	if h.serviceExists("app") {
		t.Fatal("delete by manifest path left Service/app")
	}
	h.ok("K8sDelete", `{"deleteResources": {"type": "ReleaseName", "spec": {"deleteNamespace": true}}}`, nil)
	ns, err := cs.CoreV1().Namespaces().Get(context.Background(), h.ns, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Fatal("namespace not deleted")
	}
}

func TestApplyJobAndDryRun(t *testing.T) {
	h := newHarness(t, "apply")
	job := plan.File{Path: "jobs/migrate.yaml", Text: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: busybox}]\n"}
	ms := app("1.27", 1, job)
	out := h.ok("K8sDryRun", `{}`, ms)
	if text, _ := out["manifestDryRun"].(string); !strings.Contains(text, "name: app-config-1") || !strings.Contains(text, "kind: Job") {
		t.Fatalf("dry run manifest:\n%s", text)
	}
	if h.exists(func() error {
		_, err := cs.AppsV1().Deployments(h.ns).Get(context.Background(), "app", metav1.GetOptions{})
		return err
	}) {
		t.Fatal("dry run created the Deployment")
	}
	out = h.ok("K8sApply", `{"filePaths": ["jobs/migrate.yaml"]}`, ms)
	if ids, _ := out["appliedResourceIds"].([]any); len(ids) != 1 || ids[0] != "apply/Job/migrate" {
		t.Fatalf("applied %v", out)
	}
	j, err := cs.BatchV1().Jobs(h.ns).Get(context.Background(), "migrate", metav1.GetOptions{})
	if err != nil || j.Status.Succeeded < 1 {
		t.Fatalf("job not complete after K8sApply: %v %+v", err, j.Status)
	}
	if _, f := h.run("K8sApply", `{"filePaths": ["nope.yaml"]}`, ms, false, time.Minute); f == nil || !strings.Contains(f.Message, "nope.yaml") {
		t.Fatalf("unknown file path: %+v", f)
	}
}

func TestErrorCategories(t *testing.T) {
	h := newHarness(t, "errors")
	h.token = "not-a-token"
	if _, f := h.run("K8sRollingDeploy", `{}`, app("1.27", 1), false, time.Minute); f == nil || f.Category != contract.Authentication {
		t.Errorf("bad token: %+v", f)
	}
	h.token = cluster.NoRights
	if _, f := h.run("K8sRollingDeploy", `{}`, app("1.27", 1), false, time.Minute); f == nil || f.Category != contract.Authorization {
		t.Errorf("no permissions: %+v", f)
	}
	h.token, h.url = cluster.Token, "https://127.0.0.1:1"
	if _, f := h.run("K8sRollingDeploy", `{}`, app("1.27", 1), false, time.Minute); f == nil || f.Category != contract.Connectivity {
		t.Errorf("unreachable cluster: %+v", f)
	}
	h.url = cluster.Server
	_, f := h.run("K8sRollingDeploy", `{}`, withValues(app("1.27", 1), "zone: nowhere\n"), false, 3*time.Second)
	if f == nil || f.Category != contract.Timeout || !strings.Contains(f.Message, "errors/Deployment/app") {
		t.Errorf("steady-state timeout: %+v", f)
	}
	bad := app("1.27", 1)
	bad[0].Files[0].Text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {{ .Values.missing.deeper }}\n"
	if _, f := h.run("K8sRollingDeploy", `{}`, bad, false, time.Minute); f == nil || !strings.Contains(f.Message, "config.yaml") {
		t.Errorf("template error: %+v", f)
	}
}
