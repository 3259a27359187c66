package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/internal/gittest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// A service whose manifests live in a Github-type repository (a real Git server over HTTP
// with a username and token from the secret resolver) deploys to the cluster: the stage
// fetches them once at its service phase and records the commit; a new commit on the branch
// is what the next run deploys, and a rerun of the first run deploys the first commit again.
func TestK8sManifestsFromGit(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-git")
	srv, first, files := gitService(t, dir)
	p := loadDev(t, dir)
	const ns = "e2e-git-dev"
	check := func(res *workflows.PipelineResult, commit string, replicas int32) {
		t.Helper()
		conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
		stage := res.Tree.Find("deploy_dev")
		if got := stage.Manifests["web"]; got != commit {
			t.Errorf("stage fetched %q, want commit %s (notes %v)", got, commit, stage.Notes)
		}
		if d := deploymentOf(t, cs, ns, "web"); *d.Spec.Replicas != replicas {
			t.Errorf("replicas %d, want %d (commit %s)", *d.Spec.Replicas, replicas, commit)
		}
	}
	firstRun, res := runPlan(t, env.starter, p)
	check(res, first, 2)
	if !strings.Contains(strings.Join(res.Tree.Find("deploy_dev").Notes, "\n"), "manifest web: "+srv.HTTPURL+"/web.git at commit "+first) {
		t.Errorf("notes %v", res.Tree.Find("deploy_dev").Notes)
	}

	second := srv.Commit("web", "main", map[string]string{"deploy/values.yaml": strings.Replace(files["deploy/values.yaml"],
		"replicas: <+serviceVariables.replicas>", "replicas: 3", 1)})
	_, res = runPlan(t, env.starter, p)
	check(res, second, 3)

	res = rerun(t, firstRun.ID)
	check(res, first, 2)
}

// gitService moves examples/k8s's web manifests and values into a Github-type repository on
// a real Git server (an Account connector with a username and token from the secret
// resolver) and points the service at it. It returns the server, the commit and the files.
func gitService(t *testing.T, dir string) (*gittest.Server, string, map[string]string) {
	t.Helper()
	srv := gittest.Start(t)
	files := map[string]string{}
	for _, name := range []string{"manifests/configmap.yaml", "manifests/deployment.yaml", "manifests/service.yaml", "values.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "web", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		files["deploy/"+name] = string(b)
	}
	first := srv.NewRepo("web", files)
	t.Setenv(secrets.EnvName("git_user"), srv.Username)
	t.Setenv(secrets.EnvName("git_token"), srv.Password)
	connector := fmt.Sprintf(`connector:
  name: Web repository
  identifier: web_repo
  type: Github
  spec:
    url: %s
    type: Account
    validationRepo: web.git
    authentication:
      type: Http
      spec:
        type: UsernameToken
        spec:
          usernameRef: git_user
          tokenRef: git_token
`, srv.HTTPURL)
	writeFile(t, filepath.Join(dir, "git-connector.yaml"), connector)
	local := `              store:
                type: Local
                spec:
                  paths: [web/manifests]
              valuesPaths: [web/values.yaml]
`
	git := `              store:
                type: Github
                spec:
                  connectorRef: web_repo
                  repoName: web.git
                  gitFetchType: Branch
                  branch: main
                  paths: [deploy/manifests]
              valuesPaths: [deploy/values.yaml]
`
	rewriteService(t, dir, local, git)
	return srv, first, files
}

// A store whose credentials the server refuses fails the stage at its service phase with an
// Authentication failure naming the repository and branch, and no credential.
func TestK8sManifestsFromGitRefused(t *testing.T) {
	cluster(t)
	dir := k8sExample(t, "e2e-gitbad")
	srv := gittest.Start(t)
	srv.NewRepo("web", map[string]string{"deploy/manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
	t.Setenv(secrets.EnvName("git_bad_token"), "not-the-token")
	connector := fmt.Sprintf("connector:\n  name: Repo\n  identifier: web_repo\n  type: Git\n  spec:\n    url: %s/web.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_bad_token}\n", srv.HTTPURL, srv.Username)
	writeFile(t, filepath.Join(dir, "git-connector.yaml"), connector)
	rewriteService(t, dir, "type: Local\n                spec:\n                  paths: [web/manifests]\n              valuesPaths: [web/values.yaml]",
		"type: Git\n                spec: {connectorRef: web_repo, gitFetchType: Branch, branch: main, paths: [deploy/manifests]}")
	p := loadDev(t, dir)
	_, res := runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Failed, "deploy_dev": status.Failed, "deploy_dev.rolling": status.NotStarted})
	f := res.Tree.Find("deploy_dev").Failure
	if f == nil || f.Category != "Authentication" || !strings.Contains(f.Message, "/web.git, branch main") || strings.Contains(f.Message, "not-the-token") {
		t.Errorf("stage failure %+v", f)
	}
}

// A DockerRegistry artifact with a registry connector (a real OCI registry on loopback behind
// basic auth) resolves to a digest at the service phase: the Deployment runs the image by
// digest, a new image pushed under the same tag is what the next run deploys, and a rerun of
// the first run deploys the first digest again.
func TestK8sArtifactDigestFromRegistry(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-registry")
	host, push, first := registryService(t, dir)
	p := loadDev(t, dir)
	const ns = "e2e-registry-dev"
	check := func(res *workflows.PipelineResult, digest string) {
		t.Helper()
		conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
		want := host + "/library/nginx:1.27@" + digest
		if got := res.Tree.Find("deploy_dev").Artifact; got != digest {
			t.Errorf("stage resolved %q, want %s", got, digest)
		}
		if img := deploymentOf(t, cs, ns, "web").Spec.Template.Spec.Containers[0].Image; img != want {
			t.Errorf("deployed %s, want %s", img, want)
		}
	}
	firstRun, res := runPlan(t, env.starter, p)
	check(res, first)
	second := push()
	_, res = runPlan(t, env.starter, p)
	check(res, second)
	res = rerun(t, firstRun.ID)
	check(res, first)
}

// registryService points examples/k8s's artifact at a real OCI registry on loopback (behind
// basic auth, through a DockerRegistry connector) holding library/nginx:1.27. It returns the
// registry's host, a function that pushes a new image under that tag, and the first digest.
func registryService(t *testing.T, dir string) (string, func() string, string) {
	t.Helper()
	reg := registrytest.Start(t)
	push := func() string { return reg.Push(t, "library/nginx", "1.27") }
	first := push()
	t.Setenv(secrets.EnvName("registry_token"), registrytest.Password)
	writeFile(t, filepath.Join(dir, "registry-connector.yaml"), fmt.Sprintf("connector:\n  name: Registry\n  identifier: registry\n  type: DockerRegistry\n  spec:\n    dockerRegistryUrl: %s\n    providerType: Other\n    auth:\n      type: UsernamePassword\n      spec: {username: %s, passwordRef: registry_token}\n", reg.URL, registrytest.Username))
	rewriteService(t, dir, "              spec:\n                imagePath: library/nginx", "              spec:\n                connectorRef: registry\n                imagePath: library/nginx")
	return reg.Host, push, first
}

// A Kustomize manifest (a base and an overlay with a patch and a ConfigMap generator, beside
// the service) is built with the Kustomize API and deployed by the rolling deploy; expressions
// in it are rendered first. The service's patches (patchesPaths, a KustomizePatches manifest)
// apply after the overlay's own.
func TestK8sKustomizeManifest(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-kustomize")
	files := map[string]string{
		"kustomize/base/kustomization.yaml": "resources: [deployment.yaml]\n",
		"kustomize/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "<+artifact.image>"}]}
`,
		"kustomize/overlays/dev/kustomization.yaml": "resources: [../../base]\ncommonLabels: {tier: <+env.identifier>}\npatches: [{path: replicas.yaml}]\nconfigMapGenerator: [{name: settings, literals: [GREETING=<+serviceVariables.greeting>]}]\n",
		"kustomize/overlays/dev/replicas.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
		// patchesPaths of the Kustomize manifest, and a KustomizePatches manifest, both with
		// expressions (the reference renders them in patches only).
		"kustomize/patches/owner.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {owner: <+service.identifier>}}\n",
		"patches/replicas.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: <+serviceVariables.replicas>}\n",
	}
	for name, text := range files {
		writeFile(t, filepath.Join(dir, name), text)
	}
	rewriteService(t, dir, localManifest, `            type: Kustomize
            spec:
              store:
                type: Local
                spec: {folderPath: kustomize}
              overlayConfiguration: {kustomizeYamlFolderPath: overlays/dev}
              patchesPaths: [kustomize/patches/owner.yaml]
        - manifest:
            identifier: replicas
            type: KustomizePatches
            spec:
              store:
                type: Local
                spec: {paths: [patches/replicas.yaml]}
`)
	p := loadDev(t, dir)
	_, res := runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	d := deploymentOf(t, cs, "e2e-kustomize-dev", "web")
	if *d.Spec.Replicas != 2 || d.Labels["tier"] != "dev" || d.Labels["owner"] != "web" || d.Spec.Template.Spec.Containers[0].Image != "library/nginx:1.27" {
		t.Errorf("deployment: replicas %d, labels %v, image %s", *d.Spec.Replicas, d.Labels, d.Spec.Template.Spec.Containers[0].Image)
	}
	cms, err := cs.CoreV1().ConfigMaps("e2e-kustomize-dev").List(context.Background(), metav1.ListOptions{})
	found := false
	for _, cm := range cms.Items {
		found = found || (strings.HasPrefix(cm.Name, "settings-") && cm.Data["GREETING"] == "hello from dev")
	}
	if err != nil || !found {
		t.Errorf("no generated settings ConfigMap with the rendered greeting: %v %v", cms.Items, err)
	}
}

// A HelmChart manifest whose chart is in Git (with a values file beside it) is rendered with
// the Helm SDK for the stage's release and deployed by the rolling deploy; expressions in the
// values are rendered first.
func TestK8sHelmChartFromGit(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-helm")
	srv := gittest.Start(t)
	first := srv.NewRepo("charts", map[string]string{
		"web/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/values.yaml":               "replicas: 1\nimage: nginx\n",
		"web/templates/_helpers.tpl":    "{{- define \"web.labels\" -}}app: web\nrelease: {{ .Release.Name }}{{- end -}}\n",
		"web/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    {{- include \"web.labels\" . | nindent 4 }}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: {{ .Values.image | quote }}}]}\n",
		"web/templates/NOTES.txt":       "installed {{ .Release.Name }}\n",
		"envs/dev.yaml":                 "replicas: <+serviceVariables.replicas>\nimage: <+artifact.image>\n",
	})
	t.Setenv(secrets.EnvName("git_token"), srv.Password)
	connector := fmt.Sprintf("connector:\n  name: Charts\n  identifier: charts\n  type: Git\n  spec:\n    url: %s/charts.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_token}\n", srv.HTTPURL, srv.Username)
	writeFile(t, filepath.Join(dir, "git-connector.yaml"), connector)
	rewriteService(t, dir, localManifest, `            type: HelmChart
            spec:
              store:
                type: Git
                spec: {connectorRef: charts, gitFetchType: Branch, branch: main, folderPath: web}
              valuesPaths: [envs/dev.yaml]
              helmVersion: V3
`)
	p := loadDev(t, dir)
	_, res := runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	if got := res.Tree.Find("deploy_dev").Manifests["web"]; got != first {
		t.Errorf("chart commit %q, want %s", got, first)
	}
	release := fmt.Sprint(res.Tree.Find("deploy_dev.rolling").Outputs["releaseName"])
	d := deploymentOf(t, cs, "e2e-helm-dev", "web")
	if *d.Spec.Replicas != 2 || d.Labels["release"] != release || d.Spec.Template.Spec.Containers[0].Image != "library/nginx:1.27" {
		t.Errorf("deployment: replicas %d, labels %v (release %s), image %s", *d.Spec.Replicas, d.Labels, release, d.Spec.Template.Spec.Containers[0].Image)
	}
}

// localManifest is examples/k8s's web manifest (local files), which tests rewrite into others.
const localManifest = `            type: K8sManifest
            spec:
              store:
                type: Local
                spec:
                  paths: [web/manifests]
              valuesPaths: [web/values.yaml]
`

// rewriteService replaces old by new in the example's service.yaml, failing if the example
// no longer holds old.
func rewriteService(t *testing.T, dir, old, new string) {
	t.Helper()
	file := filepath.Join(dir, "service.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("examples/k8s/service.yaml no longer holds %q:\n%s", old, b)
	}
	writeFile(t, file, strings.Replace(string(b), old, new, 1))
}

// loadDev writes devPipeline beside the example's entities and loads it for a run (tag 1.27).
func loadDev(t *testing.T, dir string) *plan.Plan {
	t.Helper()
	file := filepath.Join(dir, "dev.yaml")
	writeFile(t, file, devPipeline)
	return loadRun(t, file, "pipeline.variables.tag=1.27")
}

func writeFile(t testing.TB, file, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// K8sApply steps with their own manifestSource: one from a Git repository (fetched at the
// service phase, its commit recorded under the step's path) applied whole, one beside the
// pipeline applied by filePaths with its own values; the service's manifests are deployed by
// the rolling deploy as usual.
func TestK8sApplyManifestSource(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-source")
	p, commit := sourcePipeline(t, dir)
	_, res := runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.from_git": status.Succeeded, "deploy_dev.local": status.Succeeded})
	if got := res.Tree.Find("deploy_dev").Manifests["spec.execution.steps.from_git"]; got != commit {
		t.Errorf("manifestSource fetched at %q, want %s", got, commit)
	}
	const ns = "e2e-source-dev"
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "ops-settings", metav1.GetOptions{})
	if err != nil || cm.Data["tag"] != "1.27" {
		t.Errorf("ops-settings: %v %v", cm, err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "extra-one", metav1.GetOptions{}); err != nil {
		t.Errorf("extra-one: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "not-applied", metav1.GetOptions{}); err == nil {
		t.Error("a file filePaths does not name was applied")
	}
	deploymentOf(t, cs, ns, "web") // the service's own manifests, deployed by the rolling step
}

// sourcePipeline writes devPipeline with two K8sApply steps of their own manifestSource (a Git
// repository's folder, and files beside the pipeline with filePaths) and loads it; it returns
// the plan and the Git repository's commit.
func sourcePipeline(t *testing.T, dir string) (*plan.Plan, string) {
	t.Helper()
	srv := gittest.Start(t)
	commit := srv.NewRepo("ops", map[string]string{"jobs/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ops-settings}\ndata: {tag: \"<+artifact.tag>\"}\n"})
	t.Setenv(secrets.EnvName("git_token"), srv.Password)
	writeFile(t, filepath.Join(dir, "ops-connector.yaml"), fmt.Sprintf("connector:\n  name: Ops\n  identifier: ops\n  type: Git\n  spec:\n    url: %s/ops.git\n    connectionType: Repo\n    type: Http\n    spec: {username: %s, passwordRef: git_token}\n", srv.HTTPURL, srv.Username))
	writeFile(t, filepath.Join(dir, "extra/objects.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-{{ .Values.suffix }}}\ndata: {a: b}\n")
	writeFile(t, filepath.Join(dir, "extra/other.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-applied}\n")
	writeFile(t, filepath.Join(dir, "extra-values.yaml"), "suffix: one\n")
	pipeline := strings.Replace(devPipeline, `              - step:
                  type: ShellScript`, `              - step:
                  type: K8sApply
                  name: From Git
                  identifier: from_git
                  spec:
                    manifestSource:
                      type: K8sManifest
                      spec:
                        store:
                          type: Git
                          spec: {connectorRef: ops, gitFetchType: Branch, branch: main, paths: [jobs]}
              - step:
                  type: K8sApply
                  name: Local
                  identifier: local
                  spec:
                    filePaths: [extra/objects.yaml]
                    skipRendering: false
                    manifestSource:
                      type: K8sManifest
                      spec:
                        store: {type: Local, spec: {paths: [extra]}}
                        valuesPaths: [extra-values.yaml]
              - step:
                  type: ShellScript`, 1)
	file := filepath.Join(dir, "dev.yaml")
	writeFile(t, file, pipeline)
	return loadRun(t, file, "pipeline.variables.tag=1.27"), commit
}

// An OpenshiftTemplate manifest (a Template beside the service, its paramsPaths file, and an
// OpenshiftParam manifest whose values are expressions) is processed as `oc process` does and
// deployed by the rolling deploy.
func TestK8sOpenshiftTemplate(t *testing.T) {
	_, cs := cluster(t)
	dir := k8sExample(t, "e2e-openshift")
	files := map[string]string{
		"openshift/template.yaml": `apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: web}
labels: {template: web}
parameters:
  - {name: NAME, value: web}
  - {name: REPLICAS, value: "1"}
  - {name: IMAGE, required: true}
  - {name: TIER, value: none}
objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: "${NAME}", labels: {tier: "${TIER}"}}
    spec:
      replicas: "${{REPLICAS}}"
      selector: {matchLabels: {app: "${NAME}"}}
      template:
        metadata: {labels: {app: "${NAME}"}}
        spec: {containers: [{name: web, image: "${IMAGE}"}]}
`,
		"openshift/defaults.params": "REPLICAS=3\nTIER=backend\n",
		"params/dev.params":         "IMAGE=<+artifact.image>\nREPLICAS=<+serviceVariables.replicas>\n",
	}
	for name, text := range files {
		writeFile(t, filepath.Join(dir, name), text)
	}
	rewriteService(t, dir, localManifest, `            type: OpenshiftTemplate
            spec:
              store:
                type: Local
                spec: {paths: [openshift/template.yaml]}
              paramsPaths: [openshift/defaults.params]
        - manifest:
            identifier: dev_params
            type: OpenshiftParam
            spec:
              store:
                type: Local
                spec: {paths: [params/dev.params]}
`)
	p := loadDev(t, dir)
	_, res := runPlan(t, env.starter, p)
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev.rolling": status.Succeeded})
	d := deploymentOf(t, cs, "e2e-openshift-dev", "web")
	if *d.Spec.Replicas != 2 || d.Labels["tier"] != "backend" || d.Labels["template"] != "web" || d.Spec.Template.Spec.Containers[0].Image != "library/nginx:1.27" {
		t.Errorf("deployment: replicas %d, labels %v, image %s", *d.Spec.Replicas, d.Labels, d.Spec.Template.Spec.Containers[0].Image)
	}
}
