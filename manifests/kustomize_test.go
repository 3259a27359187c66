package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An overlay over a base, with a strategic-merge patch, a name prefix and a generated
// ConfigMap, builds as `kustomize build` builds it; a kustomization that names a missing file
// is an error naming the folder.
func TestKustomize(t *testing.T) {
	files := []File{
		{"k/base/kustomization.yaml", "resources: [deployment.yaml]\n"},
		{"k/base/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n"},
		{"k/overlays/prod/kustomization.yaml", "resources: [../../base]\nnamePrefix: prod-\npatches: [{path: replicas.yaml}]\nconfigMapGenerator: [{name: settings, literals: [MODE=prod]}]\n"},
		{"k/overlays/prod/replicas.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n"},
	}
	objs, err := Kustomize(files, "k/overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, o := range objs {
		kinds[o.GetKind()] = o.GetName()
		if o.GetKind() == "Deployment" {
			if r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); r != 3 {
				t.Errorf("replicas %d, want the overlay's 3", r)
			}
		}
	}
	if kinds["Deployment"] != "prod-web" || !strings.HasPrefix(kinds["ConfigMap"], "prod-settings-") {
		t.Errorf("objects %v", kinds)
	}
	if _, err := Kustomize(files[:1], "k/base"); err == nil || !strings.Contains(err.Error(), "kustomize build k/base") {
		t.Errorf("missing resource: %v", err)
	}
}

// Patch files from outside the kustomization (KustomizePatches manifests) join its
// patches after its own; a file of two documents patches two objects.
func TestKustomizeWithPatches(t *testing.T) {
	files := []File{
		{"k/kustomization.yaml", "resources: [deployment.yaml]\npatches: [{path: own.yaml}]\n"},
		{"k/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {MODE: dev}\n"},
		{"k/own.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n"},
	}
	patch := File{"patches/prod.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 5\n  template:\n    spec: {containers: [{name: web, image: nginx:1.28}]}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {MODE: prod}\n"}
	objs, err := Kustomize(files, "k", patch)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if r != 5 || cs[0].(map[string]any)["image"] != "nginx:1.28" {
				t.Errorf("deployment replicas %d containers %v, want the patch's", r, cs)
			}
		case "ConfigMap":
			if m, _, _ := unstructured.NestedString(o.Object, "data", "MODE"); m != "prod" {
				t.Errorf("MODE %s, want prod", m)
			}
		}
	}
	if _, err := Kustomize(files[1:], "k", patch); err == nil || !strings.Contains(err.Error(), "no kustomization file") {
		t.Errorf("patches without a kustomization: %v", err)
	}
}
