package k8s

import (
	"encoding/json"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// diff shows what deploying the stage's manifests would change, as `kubectl diff` does: each
// object as the API server would store it (a server-side dry-run apply) against the live one
// (K8sDiff). Fields the server keeps for itself are left out of both sides.
func (s *stepRun) diff() (map[string]any, error) {
	objs, err := s.renderNext()
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	changed := []any{}
	for _, o := range applyOrder(objs) {
		live, err := s.resource(o).Get(s.ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, classify(s.ctx, err, "read %s", o.ID())
		}
		body, err := json.Marshal(o.Object.Unstructured.Object)
		if err != nil {
			return nil, err
		}
		force := true
		opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force, DryRun: []string{metav1.DryRunAll}}
		want, err := s.resource(o).Patch(s.ctx, o.GetName(), types.ApplyPatchType, body, opts)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, classify(s.ctx, err, "dry run of %s (from %s)", o.ID(), o.File)
			}
			want = o.Object.Unstructured // in a namespace that does not exist yet
		}
		before, after := diffText(live), diffText(want)
		if before == after {
			continue
		}
		changed = append(changed, o.ID())
		d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(before), B: difflib.SplitLines(after),
			FromFile: "live/" + o.ID(), ToFile: "merged/" + o.ID(), Context: 3})
		text.WriteString(d)
	}
	out := s.mask.Apply(text.String())
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			s.logf("%s", line)
		}
	}
	s.logf("diff: %d of %d objects would change", len(changed), len(objs))
	return map[string]any{"diff": out, "changedResources": changed}, nil
}

// diffText is an object as YAML without what the server maintains (status, managed fields,
// versions, timestamps); "" for none.
func diffText(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", "deployment.kubernetes.io/revision")
	if len(c.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	b, _ := yaml.Marshal(c.Object)
	return string(b)
}
