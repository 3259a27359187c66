package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var chartFiles = []File{
	{"charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n"},
	{"charts/web/values.yaml", "replicas: 1\nimage: nginx:1.27\ngreeting: hello\n"},
	{"charts/web/templates/_helpers.tpl", "{{- define \"web.name\" -}}{{ .Release.Name }}-web{{- end -}}\n"},
	{"charts/web/templates/deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.name" . }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: {{ .Values.image | quote }}}]}
`},
	{"charts/web/templates/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ include \"web.name\" . }}-config}\ndata: {GREETING: {{ .Values.greeting | quote }}}\n"},
	{"charts/web/templates/NOTES.txt", "Thanks for installing {{ .Release.Name }}.\n"},
}

// A chart renders as `helm template` renders it: helpers, the release name and namespace,
// the chart's values overridden by values files in order; NOTES.txt is left out.
func TestHelm(t *testing.T) {
	values := []File{{"v/a.yaml", "replicas: 2\ngreeting: from a\n"}, {"v/b.yaml", "replicas: 4\n"}}
	objs, err := Helm(chartFiles, "charts/web", values, Release{Name: "rel", Namespace: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects", len(objs))
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			if o.GetName() != "rel-web" || o.GetNamespace() != "dev" || r != 4 {
				t.Errorf("deployment %s/%s x%d", o.GetNamespace(), o.GetName(), r)
			}
		case "ConfigMap":
			if g, _, _ := unstructured.NestedString(o.Object, "data", "GREETING"); g != "from a" {
				t.Errorf("greeting %q", g)
			}
		}
	}
	bad := append([]File{}, chartFiles...)
	bad[3] = File{"charts/web/templates/deployment.yaml", "kind: {{ .Values.nope.deeper }}\n"}
	if _, err := Helm(bad, "charts/web", nil, Release{Name: "rel"}); err == nil || !strings.Contains(err.Error(), "deployment.yaml") {
		t.Errorf("a template error: %v", err)
	}
}
