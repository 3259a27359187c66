package k8s_test

import (
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// chart is a HelmChart manifest of one Deployment, with a values override.
func chart(replicas string, extra ...plan.File) []plan.Manifest {
	files := []plan.File{
		{Path: "charts/app/Chart.yaml", Text: "apiVersion: v2\nname: app\nversion: 0.1.0\n"},
		{Path: "charts/app/values.yaml", Text: "replicas: 1\n"},
		{Path: "charts/app/templates/deployment.yaml", Text: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: app}}\n  template:\n    metadata: {labels: {app: app}}\n    spec: {containers: [{name: app, image: nginx}]}\n"},
	}
	return []plan.Manifest{{ID: "chart", Type: "HelmChart", Folder: "charts/app", Files: append(files, extra...)},
		{ID: "overrides", Type: "Values", Files: []plan.File{{Path: "overrides.yaml", Text: "replicas: " + replicas + "\n"}}}}
}

// helmStorage is the Helm SDK's view of the harness's namespace, as the helm CLI has it.
func (h *harness) helmStorage() *action.Configuration {
	h.t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &cluster.Kubeconfig, &h.ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, h.ns, "secret", func(string, ...any) {}); err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

// leavePending marks the release's last revision pending, as a worker that died mid-upgrade
// leaves it.
func (h *harness) leavePending() *release.Release {
	h.t.Helper()
	cfg := h.helmStorage()
	last, err := cfg.Releases.Last(h.release)
	if err != nil {
		h.t.Fatal(err)
	}
	last.SetStatus(release.StatusPendingUpgrade, "upgrading")
	if err := cfg.Releases.Update(last); err != nil {
		h.t.Fatal(err)
	}
	return last
}

// A HelmDeploy retried after its worker died mid-upgrade finds the revision it left pending,
// marks it failed and deploys; a revision left pending by another execution is not touched.
func TestHelmDeployAfterAPendingRevision(t *testing.T) {
	h := newHarness(t, "helm-pending")
	if out := h.ok("HelmDeploy", `{}`, chart("2")); out["newReleaseVersion"] != float64(1) {
		t.Fatalf("install: %v", out)
	}
	h.leavePending()
	if out := h.ok("HelmDeploy", `{}`, chart("3")); out["newReleaseVersion"] != float64(2) || out["prevReleaseVersion"] != float64(0) {
		t.Fatalf("retried deploy: %v", out)
	}
	if _, _, n := h.deployment("app"); n != 3 {
		t.Errorf("replicas %d, want 3", n)
	}
	// Marked failed, then superseded by the upgrade, as Helm does with the revision it replaces.
	first, err := h.helmStorage().Releases.Get(h.release, 1)
	if err != nil || first.Info.Status.IsPending() {
		t.Errorf("revision 1: %v %v, want no longer pending", first.Info.Status, err)
	}

	h.leavePending()
	h.exec = "another-execution"
	_, f := h.run("HelmDeploy", `{}`, chart("4"), false, time.Minute)
	if f == nil || !strings.Contains(f.Message, "revision 2 is pending-upgrade, another operation is in progress") {
		t.Fatalf("deploy over another execution's pending revision: %+v", f)
	}
}

// A chart that does not render fails the step as Verification, naming the template's file and
// line; a first install that fails leaves no release behind, so the next attempt can install.
func TestHelmDeployFailures(t *testing.T) {
	h := newHarness(t, "helm-fail")
	bad := plan.File{Path: "charts/app/templates/bad.yaml", Text: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }\n"}
	_, f := h.run("HelmDeploy", `{}`, chart("1", bad), false, time.Minute)
	if f == nil || f.Category != contract.Verification || !strings.Contains(f.Message, "templates/bad.yaml:4") {
		t.Fatalf("template error: %+v", f)
	}
	unready := plan.File{Path: "charts/app/templates/stuck.yaml", Text: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: stuck}\nspec:\n  selector: {matchLabels: {app: stuck}}\n  template:\n    metadata: {labels: {app: stuck}}\n    spec:\n      nodeSelector: {topology.kubernetes.io/zone: nowhere}\n      containers: [{name: app, image: nginx}]\n"}
	_, f = h.run("HelmDeploy", `{}`, chart("1", unready), false, 5*time.Second)
	if f == nil || f.Category != contract.Timeout {
		t.Fatalf("a release that never becomes ready: %+v", f)
	}
	if revs, err := action.NewHistory(h.helmStorage()).Run(h.release); err == nil {
		t.Errorf("the failed first install left %d revisions", len(revs))
	}
	if out := h.ok("HelmDeploy", `{}`, chart("1")); out["newReleaseVersion"] != float64(1) {
		t.Errorf("install after a failed one: %v", out)
	}
}

// bgChart is a chart of a Deployment (named from the release, using a ConfigMap) and a Service
// selecting it, as a blue-green or canary chart is written: nothing in it knows about colours.
func bgChart(tag string) []plan.Manifest {
	return []plan.Manifest{{ID: "chart", Type: "HelmChart", Folder: "charts/web", Files: []plan.File{
		{Path: "charts/web/Chart.yaml", Text: "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
		{Path: "charts/web/values.yaml", Text: "tag: \"" + tag + "\"\nreplicas: 4\n"},
		{Path: "charts/web/templates/config.yaml", Text: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-config}\ndata: {TAG: {{ .Values.tag | quote }}}\n"},
		{Path: "charts/web/templates/service.yaml", Text: "apiVersion: v1\nkind: Service\nmetadata: {name: {{ .Release.Name }}}\nspec: {selector: {app: {{ .Release.Name }}}, ports: [{port: 80}]}\n"},
		{Path: "charts/web/templates/deployment.yaml", Text: `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - {name: web, image: "nginx:{{ .Values.tag }}", envFrom: [{configMapRef: {name: {{ .Release.Name }}-config}}]}
`},
	}}}
}

func (h *harness) helmRevisions(name string) int {
	h.t.Helper()
	revs, err := action.NewHistory(h.helmStorage()).Run(name)
	if err != nil {
		return 0
	}
	return len(revs)
}

// HelmBGDeploy keeps each colour in a Helm release of its own beside shared Services;
// HelmBlueGreenSwapStep moves traffic; HelmRollback swaps back and rolls the colour's release
// back, leaving the other colour as it was.
func TestHelmBlueGreenSwapAndRollback(t *testing.T) {
	h := newHarness(t, "helm-bg")
	svc, stageSvc := h.release, h.release+"-stage"
	out := h.ok("HelmBGDeploy", `{}`, bgChart("1.27"))
	if out["stageColor"] != "blue" || out["primaryColor"] != "blue" || out["releaseName"] != h.release+"-blue" || out["stageServiceName"] != stageSvc {
		t.Fatalf("first deploy: %v", out)
	}
	if img, cfg, n := h.deployment(h.release + "-blue"); img != "nginx:1.27" || cfg != h.release+"-config-blue" || n != 4 {
		t.Fatalf("blue: image %s config %s replicas %d", img, cfg, n)
	}
	if h.selector(svc) != "blue" || h.selector(stageSvc) != "blue" {
		t.Fatal("first deployment: both services should route to blue")
	}

	h.exec = "second"
	out = h.ok("HelmBGDeploy", `{}`, bgChart("1.28"))
	if out["stageColor"] != "green" || out["primaryColor"] != "blue" || out["releaseName"] != h.release+"-green" {
		t.Fatalf("second deploy: %v", out)
	}
	if img, _, _ := h.deployment(h.release + "-green"); img != "nginx:1.28" {
		t.Fatalf("green runs %s", img)
	}
	if h.selector(svc) != "blue" || h.selector(stageSvc) != "green" {
		t.Fatalf("before swap: primary %s stage %s", h.selector(svc), h.selector(stageSvc))
	}
	if out := h.ok("HelmBlueGreenSwapStep", `{}`, bgChart("1.28")); out["swapped"] != true || h.selector(svc) != "green" {
		t.Fatalf("swap: %v, primary %s", out, h.selector(svc))
	}

	out, f := h.run("HelmRollback", `{}`, bgChart("1.28"), true, time.Minute)
	if f != nil || out["rolledBack"] != true {
		t.Fatalf("rollback: %v %v", out, f)
	}
	if h.selector(svc) != "blue" || h.selector(stageSvc) != "green" {
		t.Fatalf("after rollback: primary %s stage %s, want blue and green", h.selector(svc), h.selector(stageSvc))
	}
	if h.helmRevisions(h.release+"-green") != 0 {
		t.Error("the green release this execution installed is still there")
	}
	if img, _, _ := h.deployment(h.release + "-blue"); img != "nginx:1.27" || h.helmRevisions(h.release+"-blue") != 1 {
		t.Error("the blue release another execution made was changed")
	}
	// Another rollback finds nothing of this execution's left.
	if out, f := h.run("HelmRollback", `{}`, bgChart("1.28"), true, time.Minute); f != nil || out["rolledBack"] != false {
		t.Fatalf("second rollback: %v %v", out, f)
	}
}

// HelmCanaryDeploy runs the selected share of the chart's pods as `<release>-canary`, whose
// pods the chart's Service also selects; HelmCanaryDelete uninstalls it, and HelmRollback
// uninstalls one a failed stage left.
func TestHelmCanaryThenDelete(t *testing.T) {
	h := newHarness(t, "helm-canary")
	h.exec = "earlier"
	h.ok("HelmDeploy", `{}`, bgChart("1.27"))
	h.exec = "canary"
	out := h.ok("HelmCanaryDeploy", `{"instanceSelection": {"type": "Percentage", "spec": {"percentage": 25}}}`, bgChart("1.28"))
	if out["canaryWorkload"] != "Deployment/"+h.release+"-canary" || out["targetInstances"] != float64(1) || out["releaseName"] != h.release+"-canary" {
		t.Fatalf("canary outputs: %v", out)
	}
	if img, cfg, n := h.deployment(h.release + "-canary"); img != "nginx:1.28" || cfg != h.release+"-config-canary" || n != 1 {
		t.Fatalf("canary: image %s config %s replicas %d", img, cfg, n)
	}
	if img, _, n := h.deployment(h.release); img != "nginx:1.27" || n != 4 {
		t.Fatalf("the stage's release changed by the canary: %s x%d", img, n)
	}
	if out := h.ok("HelmCanaryDelete", `{}`, nil); out["deleted"] != true || h.helmRevisions(h.release+"-canary") != 0 {
		t.Fatalf("canary delete: %v", out)
	}
	if out := h.ok("HelmCanaryDelete", `{}`, nil); out["deleted"] != false {
		t.Fatalf("second canary delete: %v", out)
	}

	h.ok("HelmCanaryDeploy", `{"instanceSelection": {"type": "Count", "spec": {"count": 2}}}`, bgChart("1.29"))
	out, f := h.run("HelmRollback", `{}`, bgChart("1.29"), true, time.Minute)
	if f != nil || h.helmRevisions(h.release+"-canary") != 0 {
		t.Fatalf("rollback left the canary: %v %v", out, f)
	}
	if img, _, _ := h.deployment(h.release); img != "nginx:1.27" {
		t.Errorf("rollback changed the stage's release: %s", img)
	}
}
