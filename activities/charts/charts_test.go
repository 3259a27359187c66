package charts

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/charttest"
	"github.com/gantry-cd/gantry/internal/registrytest"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/plan"
)

var files = map[string]string{
	"values.yaml":               "replicas: 1\n",
	"values-prod.yaml":          "replicas: 3\n",
	"templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Version }}\nspec:\n  replicas: {{ .Values.replicas }}\n",
}

var sec = secrets.Map{"chart_token": charttest.Password, "registry_token": registrytest.Password, "wrong": "not-it"}

func httpChart(r *charttest.Repo, version string) *plan.ChartRepo {
	return &plan.ChartRepo{Type: "Http", Name: "web", Version: version, ValuesPaths: []string{"values-prod.yaml"},
		Connector: plan.RegistryConnector{ID: "charts", URL: r.URL, Username: charttest.Username, PasswordRef: "chart_token"}}
}

func ociChart(reg *registrytest.Registry, version string) *plan.ChartRepo {
	return &plan.ChartRepo{Type: "OciHelmChart", Name: "web", Version: version, BasePath: "team/charts",
		Connector: plan.RegistryConnector{ID: "oci", URL: "http://" + reg.Host, Username: registrytest.Username, PasswordRef: "registry_token"}}
}

// A chart of an HTTP repository: an exact version, a constraint, the latest stable one; its
// values file from inside the chart; it renders with the Helm SDK.
func TestPullHTTP(t *testing.T) {
	r := charttest.StartRepo(t)
	for _, v := range []string{"1.2.0", "1.10.0", "2.0.0-rc.1"} {
		r.Add(t, charttest.Package(t, "web", v, files))
	}
	p := &Puller{Secrets: sec}
	for _, c := range []struct{ ask, want string }{{"1.2.0", "1.2.0"}, {"~1.2", "1.2.0"}, {"^1", "1.10.0"}, {"", "1.10.0"}} {
		got, err := p.Pull(context.Background(), httpChart(r, c.ask))
		if err != nil {
			t.Fatalf("%q: %v", c.ask, err)
		}
		if got.Chart == nil || got.Chart.Version != c.want || got.Chart.Name != "web" {
			t.Errorf("%q: pulled %+v, want %s", c.ask, got.Chart, c.want)
		}
		if len(got.Values) != 1 || got.Values[0].Path != "web/values-prod.yaml" {
			t.Errorf("%q: values %+v", c.ask, got.Values)
		}
		mf := make([]manifests.File, len(got.Files))
		for i, f := range got.Files {
			mf[i] = manifests.File{Path: f.Path, Text: f.Text}
		}
		objs, err := manifests.Helm(mf, "web", []manifests.File{{Path: got.Values[0].Path, Text: got.Values[0].Text}}, manifests.Release{Name: "rel", Namespace: "ns"})
		if err != nil || len(objs) != 1 || objs[0].GetName() != "rel-"+c.want {
			t.Fatalf("%q: rendered %v %v", c.ask, objs, err)
		}
	}
}

// A chart pushed to an OCI registry as `helm push` does: by version, by constraint, latest,
// and pinned by digest after the tag was pushed again.
func TestPullOCI(t *testing.T) {
	reg := registrytest.Start(t)
	first := charttest.PushOCI(t, reg, "team/charts", charttest.Package(t, "web", "0.3.0", files))
	charttest.PushOCI(t, reg, "team/charts", charttest.Package(t, "web", "0.10.1", files))
	p := &Puller{Secrets: sec}
	for _, c := range []struct{ ask, want string }{{"0.3.0", "0.3.0"}, {"<0.5", "0.3.0"}, {"", "0.10.1"}} {
		got, err := p.Pull(context.Background(), ociChart(reg, c.ask))
		if err != nil {
			t.Fatalf("%q: %v", c.ask, err)
		}
		if got.Chart.Version != c.want || !strings.HasPrefix(got.Digest, "sha256:") {
			t.Errorf("%q: pulled %+v %s, want %s", c.ask, got.Chart, got.Digest, c.want)
		}
	}
	changed := map[string]string{"values.yaml": "replicas: 9\n", "templates/deployment.yaml": files["templates/deployment.yaml"]}
	charttest.PushOCI(t, reg, "team/charts", charttest.Package(t, "web", "0.3.0", changed)) // the tag moves
	pinned := ociChart(reg, "0.3.0")
	pinned.Digest = first
	got, err := p.Pull(context.Background(), pinned)
	if err != nil || got.Digest != first {
		t.Fatalf("pinned: %s %v, want %s", got.Digest, err, first)
	}
	for _, f := range got.Files {
		if f.Path == "web/values.yaml" && f.Text != files["values.yaml"] {
			t.Errorf("pinned by digest, yet pulled the chart pushed later: %q", f.Text)
		}
	}
}

// Each failure has its category and names the repository, chart and version, never a secret.
func TestPullFailures(t *testing.T) {
	r := charttest.StartRepo(t)
	r.Add(t, charttest.Package(t, "web", "1.0.0", files))
	reg := registrytest.Start(t)
	charttest.PushOCI(t, reg, "team/charts", charttest.Package(t, "web", "1.0.0", files))
	cases := []struct {
		name   string
		chart  func() *plan.ChartRepo
		want   contract.Category
		saying string
	}{
		{"http bad token", func() *plan.ChartRepo { c := httpChart(r, ""); c.Connector.PasswordRef = "wrong"; return c }, contract.Authentication, "refused"},
		{"http no such version", func() *plan.ChartRepo { return httpChart(r, "9.9.9") }, contract.Verification, "no chart web at version 9.9.9 (versions: 1.0.0)"},
		{"http no such chart", func() *plan.ChartRepo { c := httpChart(r, ""); c.Name = "api"; return c }, contract.Verification, "no chart api"},
		{"http no values file", func() *plan.ChartRepo { c := httpChart(r, ""); c.ValuesPaths = []string{"values-qa.yaml"}; return c }, contract.Verification, "no values file values-qa.yaml"},
		{"http unreachable", func() *plan.ChartRepo { c := httpChart(r, ""); c.Connector.URL = "http://127.0.0.1:1"; return c }, contract.Connectivity, "cannot reach"},
		{"oci bad token", func() *plan.ChartRepo { c := ociChart(reg, "1.0.0"); c.Connector.PasswordRef = "wrong"; return c }, contract.Authentication, "refused"},
		{"oci no such version", func() *plan.ChartRepo { return ociChart(reg, "2.0.0") }, contract.Verification, "team/charts/web:2.0.0: not found"},
		{"oci no version matches", func() *plan.ChartRepo { return ociChart(reg, ">=2") }, contract.Verification, "no version >=2"},
		{"oci not a chart", func() *plan.ChartRepo {
			reg.Push(t, "team/images/web", "1.0.0") // an image where a chart is looked for
			c := ociChart(reg, "1.0.0")
			c.BasePath = "team/images"
			return c
		}, contract.Verification, "no application/vnd.cncf.helm.chart.content.v1.tar+gzip layer"},
	}
	p := &Puller{Secrets: sec}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Pull(context.Background(), c.chart())
			if err == nil {
				t.Fatal("pulled")
			}
			if got := contract.Classify(err).Category; got != c.want || !strings.Contains(err.Error(), c.saying) {
				t.Errorf("%s: %v, want %s saying %q", got, err, c.want, c.saying)
			}
			for _, s := range sec {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error shows a secret: %v", err)
				}
			}
		})
	}
}

// A chart with a packaged dependency (charts/NAME-VERSION.tgz, as `helm dependency update`
// leaves it) arrives with the dependency unpacked, and renders with it.
func TestPullPackagedDependency(t *testing.T) {
	dep := charttest.Package(t, "cache", "0.2.0", map[string]string{
		"values.yaml":          "size: 1\n",
		"templates/cache.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cache-{{ .Values.size }}}\n",
	})
	parent := map[string][]byte{
		"Chart.yaml":             []byte("apiVersion: v2\nname: web\nversion: 1.0.0\ndependencies: [{name: cache, version: 0.2.0}]\n"),
		"values.yaml":            []byte("cache: {size: 3}\n"),
		"templates/web.yaml":     []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"),
		"charts/cache-0.2.0.tgz": dep,
	}
	r := charttest.StartRepo(t)
	r.Add(t, charttest.Archive(t, "web", parent))
	got, err := (&Puller{Secrets: sec}).Pull(context.Background(), &plan.ChartRepo{Type: "Http", Name: "web",
		Connector: plan.RegistryConnector{ID: "charts", URL: r.URL, Username: charttest.Username, PasswordRef: "chart_token"}})
	if err != nil {
		t.Fatal(err)
	}
	mf := make([]manifests.File, len(got.Files))
	for i, f := range got.Files {
		mf[i] = manifests.File{Path: f.Path, Text: f.Text}
	}
	if !slices.ContainsFunc(got.Files, func(f plan.File) bool { return f.Path == "web/charts/cache-0.2.0/templates/cache.yaml" }) {
		t.Errorf("the dependency's archive was not unpacked: %v", got.Files)
	}
	objs, err := manifests.Helm(mf, "web", nil, manifests.Release{Name: "rel", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if strings.Join(names, " ") != "cache-3 web" {
		t.Errorf("rendered %v, want the dependency's object with the parent's values", names)
	}
}
