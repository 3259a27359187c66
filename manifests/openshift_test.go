package manifests

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const webTemplate = `apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: web}
labels: {template: web}
parameters:
  - {name: NAME, value: web}
  - {name: REPLICAS, value: "1"}
  - {name: IMAGE, required: true}
  - {name: PASSWORD, generate: expression, from: "[a-z0-9]{12}"}
objects:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: "${NAME}"}
    spec:
      replicas: "${{REPLICAS}}"
      selector: {matchLabels: {app: "${NAME}"}}
      template:
        metadata: {labels: {app: "${NAME}"}}
        spec: {containers: [{name: web, image: "${IMAGE}", env: [{name: GREETING, value: "hello ${NAME}, ${UNKNOWN}"}]}]}
  - apiVersion: v1
    kind: Secret
    metadata: {name: "${NAME}-db"}
    stringData: {password: "${PASSWORD}"}
`

// A template is processed as oc process processes it: param files (later ones win) over the
// parameters' own values, generated values, ${{}} as JSON, the template's labels on every
// object; a required parameter without a value, or a param file naming one the template does
// not have, is an error naming it.
func TestOpenshiftTemplate(t *testing.T) {
	tmpl := File{"openshift/web.yaml", webTemplate}
	params := []File{{"openshift/dev.params", "# dev\nIMAGE=nginx:1.27\nREPLICAS=2\n"}, {"env.params", "REPLICAS='3'\n"}}
	objs, err := OpenshiftTemplate(tmpl, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects", len(objs))
	}
	d := objs[0]
	r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	env := c["env"].([]any)[0].(map[string]any)
	if d.GetName() != "web" || r != 3 || c["image"] != "nginx:1.27" || env["value"] != "hello web, ${UNKNOWN}" || d.GetLabels()["template"] != "web" {
		t.Errorf("deployment %s replicas %d container %v labels %v", d.GetName(), r, c, d.GetLabels())
	}
	if pw, _, _ := unstructured.NestedString(objs[1].Object, "stringData", "password"); !regexp.MustCompile(`^[a-z0-9]{12}$`).MatchString(pw) {
		t.Errorf("generated password %q", pw)
	}
	if _, err := OpenshiftTemplate(tmpl, nil); err == nil || !strings.Contains(err.Error(), "parameter IMAGE is required") {
		t.Errorf("missing required parameter: %v", err)
	}
	if _, err := OpenshiftTemplate(tmpl, []File{{"x.params", "IMAGE=a\nIMAGES=b\n"}}); err == nil || !strings.Contains(err.Error(), "x.params:2: the template has no parameter IMAGES") {
		t.Errorf("unknown parameter: %v", err)
	}
	if _, err := OpenshiftTemplate(File{"d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}, nil); err == nil || !strings.Contains(err.Error(), "kind Template") {
		t.Errorf("not a template: %v", err)
	}
}

func TestGenerate(t *testing.T) {
	for expr, re := range map[string]string{`[A-Z]{3}\d{2}`: `^[A-Z]{3}[0-9]{2}$`, `user\w{4}`: `^user[a-zA-Z0-9_]{4}$`, `[a-f\d]{8}`: `^[a-f0-9]{8}$`} {
		v, err := generate(expr)
		if err != nil || !regexp.MustCompile(re).MatchString(v) {
			t.Errorf("generate(%s) = %q, %v", expr, v, err)
		}
	}
	if _, err := generate("[z-a]"); err == nil {
		t.Error("a backwards range generated a value")
	}
}
