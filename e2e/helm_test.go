package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// helmHistory reads a release's history as the `helm` CLI does (the same Helm SDK, from the
// release Secrets in the namespace); nil when the release does not exist.
func helmHistory(t *testing.T, ns, name string) []*release.Release {
	t.Helper()
	c, _ := cluster(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	revs, err := action.NewHistory(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

// examples/k8s/helm.yaml (deploymentType: NativeHelm): HelmDeploy installs the release, then
// upgrades it; a failed smoke check after an upgrade rolls the release back (HelmRollback, a
// new revision restoring the one before this execution's), as `helm history` shows; HelmDelete
// uninstalls it.
func TestNativeHelmDeployRollbackDelete(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-helm")
	const ns, name = "e2e-helm-helm-dev", "web"
	run := func(file string, sets ...string) *workflows.PipelineResult {
		t.Helper()
		r, err := load.File(filepath.Join(dir, file), load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
		}
		_, res := runPlan(t, env.starter, r.Plan)
		return res
	}
	image := func() string { return deploymentOf(t, cs, ns, name).Spec.Template.Spec.Containers[0].Image }

	res := run("helm.yaml")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.helm_deploy": status.Succeeded, "deploy_dev.smoke": status.Succeeded})
	out := res.Tree.Find("deploy_dev.helm_deploy").Outputs
	if fmt.Sprintf("%v %v %v %v", out["newReleaseVersion"], out["prevReleaseVersion"], out["chartVersion"], out["releaseName"]) != "1 0 1.0.0 web" {
		t.Errorf("HelmDeploy outputs %v", out)
	}
	if d := deploymentOf(t, cs, ns, name); image() != "library/nginx:1.27" || *d.Spec.Replicas != 2 || d.Labels["chart"] != "web-1.0.0" {
		t.Errorf("release 1: image %s, replicas %d, labels %v", image(), *d.Spec.Replicas, d.Labels)
	}

	res = run("helm.yaml", "pipeline.variables.tag=1.28")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded})
	if image() != "library/nginx:1.28" {
		t.Errorf("release 2: image %s", image())
	}

	res = run("helm.yaml", "pipeline.variables.tag=1.29", "pipeline.variables.smoke=fail")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev.helm_deploy": status.Succeeded,
		"deploy_dev.smoke": status.Failed, "deploy_dev.rollbackSteps.helm_rollback": status.Succeeded})
	if out := res.Tree.Find("deploy_dev.rollbackSteps.helm_rollback").Outputs; fmt.Sprintf("%v %v", out["rollbackVersion"], out["newReleaseVersion"]) != "2 4" {
		t.Errorf("HelmRollback outputs %v", out)
	}
	if image() != "library/nginx:1.28" {
		t.Errorf("after the rollback: image %s, want 1.28", image())
	}
	var history []string
	for _, r := range helmHistory(t, ns, name) {
		history = append(history, fmt.Sprintf("%d:%s", r.Version, r.Info.Status))
	}
	if strings.Join(history, " ") != "1:superseded 2:superseded 3:superseded 4:deployed" {
		t.Errorf("helm history %v", history)
	}

	writeFile(t, filepath.Join(dir, "delete.yaml"), `pipeline:
  name: Remove web
  identifier: remove_web
  stages:
    - stage:
        name: Remove
        identifier: remove
        type: Deployment
        spec:
          deploymentType: NativeHelm
          service: {serviceRef: web_helm}
          environment:
            environmentRef: dev
            infrastructureDefinitions: [{identifier: dev_helm}]
          execution:
            steps:
              - step: {type: HelmDelete, name: Dry run, identifier: dry, spec: {dryRun: true}}
              - step: {type: HelmDelete, name: Delete, identifier: delete, spec: {releaseName: web}}
              - step: {type: HelmDelete, name: Again, identifier: again, spec: {}}
        failureStrategies:
          - onFailure: {errors: [AllErrors], action: {type: Ignore}}
`)
	res = run("delete.yaml", "pipeline.variables.tag=1.27")
	conformance.Check(t, res.Tree, map[string]status.Status{"remove.dry": status.Succeeded, "remove.delete": status.Succeeded, "remove.again": status.IgnoreFailed})
	if f := res.Tree.Find("remove.again").Failure; f == nil || f.Category != "Verification" || !strings.Contains(f.Message, "Helm release web does not exist") {
		t.Errorf("deleting a deleted release: %+v", f)
	}
	if h := helmHistory(t, ns, name); h != nil {
		t.Errorf("release still has %d revisions", len(h))
	}
}

// examples/k8s/helm-bluegreen.yaml and helm-canary.yaml through the engine: blue-green swaps
// the Service `web` between the colour releases and a failure after the swap swaps it back;
// a canary runs beside the release and is gone after the stage, and a failed canary stage
// leaves the release as it was.
func TestNativeHelmBlueGreenAndCanary(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-helmpro")
	const ns, canaryNS = "e2e-helmpro-helm-bluegreen", "e2e-helmpro-helm-dev"
	run := func(file string, sets ...string) *workflows.PipelineResult {
		t.Helper()
		r, err := load.File(filepath.Join(dir, file), load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
		}
		_, res := runPlan(t, env.starter, r.Plan)
		return res
	}
	routes := func(svc string) string {
		t.Helper()
		s, err := cs.CoreV1().Services(ns).Get(context.Background(), svc, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Spec.Selector["harness.io/color"]
	}
	image := func(name string) string { return deploymentOf(t, cs, ns, name).Spec.Template.Spec.Containers[0].Image }
	canaryImage := func(name string) string {
		return deploymentOf(t, cs, canaryNS, name).Spec.Template.Spec.Containers[0].Image
	}

	res := run("helm-bluegreen.yaml")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.swap": status.Succeeded})
	if out := res.Tree.Find("deploy_dev.bg_deploy").Outputs; out["releaseName"] != "web-blue" || out["stageColor"] != "blue" {
		t.Errorf("first HelmBGDeploy outputs %v", out)
	}
	res = run("helm-bluegreen.yaml", "pipeline.variables.tag=1.28")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.swap": status.Succeeded})
	if routes("web") != "green" || image("web-green") != "library/nginx:1.28" || image("web-blue") != "library/nginx:1.27" {
		t.Errorf("after the second run: web routes to %s, green runs %s", routes("web"), image("web-green"))
	}
	res = run("helm-bluegreen.yaml", "pipeline.variables.tag=1.29", "pipeline.variables.smoke=fail")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev.swap": status.Succeeded,
		"deploy_dev.smoke": status.Failed, "deploy_dev.rollbackSteps.helm_rollback": status.Succeeded})
	if routes("web") != "green" || image("web-green") != "library/nginx:1.28" {
		t.Errorf("after the rollback: web routes to %s (want green, 1.28)", routes("web"))
	}
	if h := helmHistory(t, ns, "web-blue"); len(h) != 3 || h[2].Info.Status != release.StatusDeployed || image("web-blue") != "library/nginx:1.27" {
		t.Errorf("web-blue after the rollback: %d revisions, image %s", len(h), image("web-blue"))
	}

	res = run("helm-canary.yaml")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.canary_delete": status.Succeeded})
	if out := res.Tree.Find("deploy_dev.canary").Outputs; out["canaryWorkload"] != "Deployment/web-canary" || fmt.Sprint(out["targetInstances"]) != "1" {
		t.Errorf("HelmCanaryDeploy outputs %v", out)
	}
	res = run("helm-canary.yaml", "pipeline.variables.tag=1.28", "pipeline.variables.smoke=fail")
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev.check_canary": status.Failed,
		"deploy_dev.rollbackSteps.helm_rollback": status.Succeeded})
	if helmHistory(t, canaryNS, "web-canary") != nil || canaryImage("web") != "library/nginx:1.27" {
		t.Errorf("after the failed canary: the canary release is left, or web runs %s", canaryImage("web"))
	}
}
