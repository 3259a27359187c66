package k8s

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

func (s *stepRun) resource(o *object) dynamic.ResourceInterface {
	r := s.c.dyn.Resource(o.gvr)
	if o.namespaced {
		return r.Namespace(o.GetNamespace())
	}
	return r
}

// apply server-side applies objects in order (namespaces and configuration first, as listed by
// applyOrder), as field manager "gantry" taking over conflicting fields. dryRun asks the API
// server to validate and admit without persisting.
func (s *stepRun) apply(objs []*object, dryRun bool) error {
	for _, o := range applyOrder(objs) {
		body, err := json.Marshal(o.Object.Unstructured.Object)
		if err != nil {
			return err
		}
		force := true
		opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := s.resource(o).Patch(s.ctx, o.GetName(), types.ApplyPatchType, body, opts); err != nil {
			if apierrors.IsNotFound(err) && dryRun && o.namespaced {
				continue // its namespace is created by this same apply
			}
			what := "apply"
			if dryRun {
				what = "dry run of"
			}
			return classify(s.ctx, err, "%s %s (from %s)", what, o.ID(), o.File)
		}
		if !dryRun {
			s.logf("applied %s", o.ID())
		}
	}
	return nil
}

// applyOrder puts namespaces, then cluster-wide and configuration objects, then workloads
// and services, so what a workload mounts exists before it starts.
func applyOrder(objs []*object) []*object {
	rank := func(kind string) int {
		switch kind {
		case "Namespace":
			return 0
		case "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			return 1
		case "ConfigMap", "Secret", "PersistentVolumeClaim":
			return 2
		}
		if isWorkload(kind) {
			return 4
		}
		return 3
	}
	out := make([]*object, 0, len(objs))
	for r := 0; r <= 4; r++ {
		for _, o := range objs {
			if rank(o.GetKind()) == r {
				out = append(out, o)
			}
		}
	}
	return out
}

// remove deletes objects, in reverse apply order; objects already gone are fine.
func (s *stepRun) remove(ctx context.Context, objs []*object) ([]any, error) {
	ordered := applyOrder(objs)
	var deleted []any
	bg := metav1.DeletePropagationBackground
	for i := len(ordered) - 1; i >= 0; i-- {
		o := ordered[i]
		err := s.resource(o).Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		switch {
		case apierrors.IsNotFound(err):
			s.logf("%s is already gone", o.ID())
		case err != nil:
			return deleted, classify(ctx, err, "delete %s", o.ID())
		default:
			s.logf("deleted %s", o.ID())
			deleted = append(deleted, o.ID())
		}
	}
	return deleted, nil
}
