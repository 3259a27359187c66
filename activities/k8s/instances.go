package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// Instances reads a Kubernetes or NativeHelm target's instances: the pods of the workloads
// (Deployments, StatefulSets, DaemonSets) its last successful release applied, with their
// images, nodes and readiness. A workload whose images or replicas differ from what the release
// applied has drifted. The target is gone when its namespace, its release or every one of
// those workloads is.
func (a *Activity) Instances(ctx context.Context, t contract.InstanceTarget) (contract.InstanceRead, error) {
	if t.Connector == nil {
		return contract.InstanceRead{}, contract.Fail(contract.Unknown, "target %s/%s has no cluster connector", t.Key.Environment, t.Key.Infra)
	}
	cfg, err := restConfig(ctx, *t.Connector, a.Secrets, &secrets.Masker{})
	if err != nil {
		return contract.InstanceRead{}, err
	}
	c, err := newClient(cfg)
	if err != nil {
		return contract.InstanceRead{}, contract.Fail(contract.Unknown, "connector %s: %v", t.Connector.ID, err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, t.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return contract.InstanceRead{Gone: "namespace " + t.Namespace + " no longer exists"}, nil
	} else if err != nil {
		return contract.InstanceRead{}, classify(ctx, err, "read namespace %s", t.Namespace)
	}
	var objs []map[string]any
	if t.DeploymentType == "NativeHelm" {
		objs, err = helmObjects(ctx, c, t)
	} else {
		objs, err = releaseObjects(ctx, c, t)
	}
	if err != nil || objs == nil {
		if err == nil {
			return contract.InstanceRead{Gone: "release " + t.Release + " in namespace " + t.Namespace + " no longer exists"}, nil
		}
		return contract.InstanceRead{}, err
	}
	var all []contract.Instance
	var drift []string
	found := 0
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if !isWorkload(u.GetKind()) {
			continue
		}
		want := workloadOf(o)
		live, err := liveWorkload(ctx, c, t.Namespace, u.GetKind(), u.GetName())
		if err != nil {
			return contract.InstanceRead{}, err
		}
		if live == nil {
			continue
		}
		found++
		name := u.GetKind() + " " + u.GetName()
		if !slices.Equal(live.images, want.images) {
			drift = append(drift, fmt.Sprintf("%s runs %s; Gantry deployed %s", name, strings.Join(live.images, ", "), strings.Join(want.images, ", ")))
		}
		if want.replicas != nil && live.replicas != nil && *want.replicas != *live.replicas {
			drift = append(drift, fmt.Sprintf("%s was scaled to %d outside Gantry; it was deployed with %d", name, *live.replicas, *want.replicas))
		}
		pods, err := c.cs.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{LabelSelector: live.selector})
		if err != nil {
			return contract.InstanceRead{}, classify(ctx, err, "list the pods of %s in namespace %s", name, t.Namespace)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue // leaving: no longer an instance
			}
			all = append(all, podInstance(p))
		}
	}
	if found == 0 {
		return contract.InstanceRead{Gone: "the workloads of release " + t.Release + " in namespace " + t.Namespace + " no longer exist"}, nil
	}
	slices.SortFunc(all, func(a, b contract.Instance) int { return strings.Compare(a.Name, b.Name) })
	return contract.ReadOf(all, drift), nil
}

// releaseObjects are the objects Gantry's last successful release of the target applied; nil
// when the release has no history left.
func releaseObjects(ctx context.Context, c *client, t contract.InstanceTarget) ([]map[string]any, error) {
	s := &stepRun{ctx: ctx, c: c, in: &contract.DeployInput{Namespace: t.Namespace, ReleaseName: t.Release, Connector: *t.Connector},
		log: &logs.Writer{}, mask: &secrets.Masker{}} // an unreadable history is a missing one, said nowhere
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	r := h.LastSucceeded(h.Next())
	if r == nil {
		return nil, nil
	}
	return r.Objects, nil
}

// helmObjects are the objects of the Helm release's deployed revision; nil when the release
// no longer exists.
func helmObjects(ctx context.Context, c *client, t contract.InstanceTarget) ([]map[string]any, error) {
	cfg := new(action.Configuration)
	if err := cfg.Init(&restGetter{c: c, namespace: t.Namespace}, t.Namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, contract.Fail(contract.Unknown, "connector %s: Helm: %v", t.Connector.ID, err)
	}
	rel, err := action.NewGet(cfg).Run(t.Release)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(ctx, err, "read Helm release %s in namespace %s", t.Release, t.Namespace)
	}
	var out []map[string]any
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
			continue // not an object (a comment, a NOTES fragment)
		}
		out = append(out, m)
	}
	return out, nil
}

// workload is what instances depend on: replicas, images, and the pods' selector.
type workload struct {
	replicas *int64
	images   []string
	selector string
}

// workloadOf reads a workload object's replicas and its pod template's images.
func workloadOf(o map[string]any) workload {
	var w workload
	if n, ok, _ := unstructured.NestedFieldNoCopy(o, "spec", "replicas"); ok {
		switch n := n.(type) {
		case int64:
			w.replicas = &n
		case float64:
			v := int64(n)
			w.replicas = &v
		}
	}
	containers, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok {
			img, _ := m["image"].(string)
			w.images = append(w.images, img)
		}
	}
	return w
}

// liveWorkload reads a workload as it is now; nil when it does not exist.
func liveWorkload(ctx context.Context, c *client, ns, kind, name string) (*workload, error) {
	var obj any
	var err error
	switch kind {
	case "Deployment":
		obj, err = c.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	case "StatefulSet":
		obj, err = c.cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		obj, err = c.cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(ctx, err, "read %s %s in namespace %s", kind, name, ns)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "read %s %s in namespace %s: %v", kind, name, ns, err)
	}
	w := workloadOf(u)
	if kind == "DaemonSet" {
		w.replicas = nil // as many as nodes: never scaled by hand
	}
	sel := &metav1.LabelSelector{}
	if m, ok, _ := unstructured.NestedMap(u, "spec", "selector"); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, sel); err != nil {
			return nil, contract.Fail(contract.Unknown, "%s %s: selector: %v", kind, name, err)
		}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "%s %s: selector: %v", kind, name, err)
	}
	w.selector = s.String()
	return &w, nil
}

// podInstance is a pod as an instance: its containers' images, node and readiness.
func podInstance(p corev1.Pod) contract.Instance {
	imgs := make([]string, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		imgs[i] = c.Image
	}
	in := contract.Instance{Name: p.Name, Artifact: strings.Join(imgs, ","), Node: p.Spec.NodeName}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			in.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return in
}
