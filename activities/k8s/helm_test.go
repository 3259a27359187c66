package k8s_test

import (
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gantry-cd/gantry/activities"
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
	if f == nil || f.Category != activities.Verification || !strings.Contains(f.Message, "templates/bad.yaml:4") {
		t.Fatalf("template error: %+v", f)
	}
	unready := plan.File{Path: "charts/app/templates/stuck.yaml", Text: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: stuck}\nspec:\n  selector: {matchLabels: {app: stuck}}\n  template:\n    metadata: {labels: {app: stuck}}\n    spec:\n      nodeSelector: {topology.kubernetes.io/zone: nowhere}\n      containers: [{name: app, image: nginx}]\n"}
	_, f = h.run("HelmDeploy", `{}`, chart("1", unready), false, 5*time.Second)
	if f == nil || f.Category != activities.Timeout {
		t.Fatalf("a release that never becomes ready: %+v", f)
	}
	if revs, err := action.NewHistory(h.helmStorage()).Run(h.release); err == nil {
		t.Errorf("the failed first install left %d revisions", len(revs))
	}
	if out := h.ok("HelmDeploy", `{}`, chart("1")); out["newReleaseVersion"] != float64(1) {
		t.Errorf("install after a failed one: %v", out)
	}
}
