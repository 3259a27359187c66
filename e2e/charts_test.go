package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/charttest"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// webChart is a chart whose Deployment's replicas and image come from values, and whose
// version shows in a label.
var webChart = map[string]string{
	"values.yaml":               "replicas: 1\nimage: nginx\n",
	"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {chart: {{ .Chart.Version | quote }}}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: {{ .Values.image | quote }}}]}\n",
}

// chartService points examples/k8s's service at chart web of a chart repository, with a Values
// manifest beside the service overriding replicas and image with expressions.
func chartService(t *testing.T, dir, store string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "overrides.yaml"), "replicas: <+serviceVariables.replicas>\nimage: <+artifact.image>\n")
	rewriteService(t, dir, localManifest, `            type: HelmChart
            spec:
`+store+`              chartName: web
              chartVersion: ^1
        - manifest:
            identifier: overrides
            type: Values
            spec:
              store:
                type: Local
                spec: {paths: [overrides.yaml]}
`)
}

// httpChartService points examples/k8s's service at chart web (versions 1.1.0 and 2.0.0, the
// service asking for ^1) of an HTTP chart repository behind basic auth.
func httpChartService(t *testing.T, dir string) *charttest.Repo {
	t.Helper()
	repo := charttest.StartRepo(t)
	repo.Add(t, charttest.Package(t, "web", "1.1.0", webChart))
	repo.Add(t, charttest.Package(t, "web", "2.0.0", webChart))
	t.Setenv(secrets.EnvName("chart_token"), charttest.Password)
	writeFile(t, filepath.Join(dir, "chart-connector.yaml"), fmt.Sprintf("connector:\n  name: Charts\n  identifier: charts\n  type: HttpHelmRepo\n  spec:\n    helmRepoUrl: %s\n    auth:\n      type: UsernamePassword\n      spec: {username: %s, passwordRef: chart_token}\n", repo.URL, charttest.Username))
	chartService(t, dir, "              store:\n                type: Http\n                spec: {connectorRef: charts}\n")
	return repo
}

// A HelmChart of an HTTP chart repository (an HttpHelmRepo connector with basic auth): the
// highest version matching the constraint is pulled, rendered with the Values manifest's
// overrides and deployed; `<+manifests.web.helm.version>` is published; a rerun deploys the
// version the first run pulled though a newer one was published since.
func TestK8sHelmChartFromHTTPRepo(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-chartrepo")
	repo := httpChartService(t, dir)
	p := loadDev(t, dir)
	check := func(res *workflows.PipelineResult, version string) {
		t.Helper()
		conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
		if got := res.Tree.Find("deploy_dev").Manifests["web"]; got != version {
			t.Errorf("pulled %q, want %s", got, version)
		}
		d := deploymentOf(t, cs, "e2e-chartrepo-dev", "web")
		if *d.Spec.Replicas != 2 || d.Labels["chart"] != version || d.Spec.Template.Spec.Containers[0].Image != "library/nginx:1.27" {
			t.Errorf("deployment: replicas %d, labels %v, image %s; want chart %s", *d.Spec.Replicas, d.Labels, d.Spec.Template.Spec.Containers[0].Image, version)
		}
	}
	first, res := runPlan(t, env.starter, p)
	check(res, "1.1.0")
	if !strings.Contains(strings.Join(res.Tree.Find("deploy_dev").Notes, "\n"), "manifest web: chart web 1.1.0 from "+repo.URL) {
		t.Errorf("notes %v", res.Tree.Find("deploy_dev").Notes)
	}
	repo.Add(t, charttest.Package(t, "web", "1.2.0", webChart))
	_, res = runPlan(t, env.starter, p)
	check(res, "1.2.0")
	res = rerun(t, first.ID)
	check(res, "1.1.0")
}

// A HelmChart of an OCI registry (an OciHelmRepo connector), pushed there as `helm push` does:
// pulled by constraint below basePath, its digest recorded beside the version.
func TestK8sHelmChartFromOCI(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-chartoci")
	reg := registrytest.Start(t)
	digest := charttest.PushOCI(t, reg, "team/charts", charttest.Package(t, "web", "1.4.0", webChart))
	t.Setenv(secrets.EnvName("registry_token"), registrytest.Password)
	writeFile(t, filepath.Join(dir, "oci-connector.yaml"), fmt.Sprintf("connector:\n  name: OCI charts\n  identifier: oci_charts\n  type: OciHelmRepo\n  spec:\n    helmRepoUrl: %s\n    auth:\n      type: UsernamePassword\n      spec: {username: %s, passwordRef: registry_token}\n", reg.URL, registrytest.Username))
	chartService(t, dir, "              store:\n                type: OciHelmChart\n                spec:\n                  basePath: team/charts\n                  config: {type: Generic, spec: {connectorRef: oci_charts}}\n")
	_, res := runPlan(t, env.starter, loadDev(t, dir))
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	if got := res.Tree.Find("deploy_dev").Manifests["web"]; got != "1.4.0@"+digest {
		t.Errorf("pulled %q, want 1.4.0@%s", got, digest)
	}
	if d := deploymentOf(t, cs, "e2e-chartoci-dev", "web"); d.Labels["chart"] != "1.4.0" || *d.Spec.Replicas != 2 {
		t.Errorf("deployment labels %v, replicas %d", d.Labels, *d.Spec.Replicas)
	}
}

// examples/k8s/chart-git.yaml: the example chart read from a Git repository (a Github store);
// the test serves the example's files from a real Git server in place of GitHub.
func TestK8sExampleChartFromGit(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-chartgit")
	srv := gittest.Start(t)
	files := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "charts"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files["examples/k8s/"+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	commit := srv.NewRepo("gantry", files)
	t.Setenv(secrets.EnvName("github_token"), srv.Password)
	b, err := os.ReadFile(filepath.Join(dir, "connector-github.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(strings.Replace(string(b), "https://github.com/gantry-cd/gantry", srv.HTTPURL+"/gantry.git", 1), "x-access-token", srv.Username, 1)
	writeFile(t, filepath.Join(dir, "connector-github.yaml"), text)
	r, err := load.File(filepath.Join(dir, "chart-git.yaml"), load.Options{ForRun: true})
	if err != nil || !r.OK() {
		t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
	}
	_, res := runPlan(t, env.starter, r.Plan)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	if got := res.Tree.Find("deploy_dev").Manifests["chart"]; got != commit {
		t.Errorf("chart fetched at %q, want %s", got, commit)
	}
	release := fmt.Sprint(res.Tree.Find("deploy_dev.rolling").Outputs["releaseName"])
	d := deploymentOf(t, cs, "e2e-chartgit-dev", release)
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "library/nginx:1.27" || d.Labels["chart"] != "web-1.0.0" {
		t.Errorf("deployment %s: replicas %d, image %s, labels %v", release, *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, d.Labels)
	}
}
