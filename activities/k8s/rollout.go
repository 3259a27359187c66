package k8s

import (
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// rolloutKinds are the workloads kubectl rollout manages.
var rolloutKinds = []string{"Deployment", "StatefulSet", "DaemonSet"}

// rollout runs a K8sRollout command on its resources, as `kubectl rollout` does: restart
// (a new pod template annotation), pause and resume (Deployments), undo (a Deployment back to
// its previous revision), status and history. Every command but pause and history waits for
// the workloads to be steady.
func (s *stepRun) rollout(sp stepspec.K8sRolloutSpec) (map[string]any, error) {
	command := sp.Command
	targets, err := s.rolloutTargets(sp.Resources)
	if err != nil {
		return nil, err
	}
	var ids []string
	histories := map[string]any{}
	for _, o := range targets {
		ids = append(ids, o.ID())
		switch command {
		case "restart":
			body := mustJSON(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{"kubectl.kubernetes.io/restartedAt": time.Now().UTC().Format(time.RFC3339)}}}}})
			err = s.patchLive(o, body, "restart")
		case "pause", "resume":
			if o.GetKind() != "Deployment" {
				return nil, contract.Fail(contract.Unknown, "%s: only Deployments can be paused and resumed", o.ID())
			}
			err = s.patchLive(o, mustJSON(map[string]any{"spec": map[string]any{"paused": command == "pause"}}), command)
		case "undo":
			err = s.undo(o)
		case "history":
			var h []map[string]any
			if h, err = s.revisions(o); err == nil {
				histories[o.ID()] = h
				for _, r := range h {
					s.logf("%s revision %v: %v", o.ID(), r["revision"], r["changeCause"])
				}
			}
		case "status":
		default:
			return nil, contract.Fail(contract.Unknown, "rollout command %q is not restart, pause, resume, undo, status or history", command)
		}
		if err != nil {
			return nil, err
		}
	}
	if command != "pause" && command != "history" {
		if err := s.waitSteady(targets, false); err != nil {
			return nil, err
		}
	}
	out := map[string]any{"command": command, "resources": ids}
	if command == "history" {
		out["history"] = histories
	}
	return out, nil
}

// rolloutTargets are the workloads a K8sRollout step names: by resource name, those of the
// release's last deployment, or those of manifest paths.
func (s *stepRun) rolloutTargets(res *stepspec.RolloutResources) ([]*object, error) {
	if res == nil {
		return nil, contract.Fail(contract.Unknown, "K8sRollout needs resources")
	}
	var spec stepspec.RolloutTarget
	if res.Spec != nil {
		spec = *res.Spec
	}
	var objs []*object
	switch res.Type {
	case "ResourceName":
		var err error
		if objs, err = s.namedObjects("resources", spec.ResourceNames); err != nil {
			return nil, err
		}
	case "ReleaseName":
		h, err := s.loadHistory()
		if err != nil {
			return nil, err
		}
		if len(h.Releases) == 0 {
			return nil, contract.Fail(contract.Unknown, "release %s has not been deployed in namespace %s", s.in.ReleaseName, s.in.Namespace)
		}
		if objs, err = s.objectsOf(&h.Releases[len(h.Releases)-1]); err != nil {
			return nil, err
		}
	case "ManifestPath":
		var err error
		if objs, err = s.manifestPathObjects("resources", spec.AllManifestPaths, spec.ManifestPaths); err != nil {
			return nil, err
		}
	default:
		return nil, contract.Fail(contract.Unknown, "resources.type %q is not ResourceName, ReleaseName or ManifestPath", res.Type)
	}
	var out []*object
	for _, o := range objs {
		if slices.Contains(rolloutKinds, o.GetKind()) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, contract.Fail(contract.Unknown, "no Deployment, StatefulSet or DaemonSet among the step's resources")
	}
	return out, nil
}

func (s *stepRun) patchLive(o *object, body []byte, what string) error {
	if _, err := s.resource(o).Patch(s.ctx, o.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return classify(s.ctx, err, "%s %s", what, o.ID())
	}
	s.logf("%s: %s", o.ID(), what)
	return nil
}

// revisionAnnotation numbers a Deployment's ReplicaSets.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// replicaSets are a Deployment's ReplicaSets, newest revision first.
func (s *stepRun) replicaSets(o *object) (*appsv1.Deployment, []appsv1.ReplicaSet, error) {
	d, err := s.c.cs.AppsV1().Deployments(o.GetNamespace()).Get(s.ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, nil, classify(s.ctx, err, "read %s", o.ID())
	}
	list, err := s.c.cs.AppsV1().ReplicaSets(o.GetNamespace()).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, classify(s.ctx, err, "list the ReplicaSets of %s", o.ID())
	}
	var own []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if slices.ContainsFunc(rs.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == d.UID }) {
			own = append(own, rs)
		}
	}
	slices.SortFunc(own, func(a, b appsv1.ReplicaSet) int { return revision(b) - revision(a) })
	return d, own, nil
}

func revision(rs appsv1.ReplicaSet) int {
	n, _ := strconv.Atoi(rs.Annotations[revisionAnnotation])
	return n
}

// undo puts a Deployment's pod template back to its previous revision's.
func (s *stepRun) undo(o *object) error {
	if o.GetKind() != "Deployment" {
		return contract.Fail(contract.Unknown, "%s: Gantry undoes Deployments' rollouts; a %s's is not undone yet", o.ID(), o.GetKind())
	}
	_, rss, err := s.replicaSets(o)
	if err != nil {
		return err
	}
	if len(rss) < 2 {
		return contract.Fail(contract.Unknown, "%s has no previous revision to go back to", o.ID())
	}
	prev := rss[1]
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	body := mustJSON([]map[string]any{{"op": "replace", "path": "/spec/template", "value": tmpl}})
	if _, err := s.resource(o).Patch(s.ctx, o.GetName(), types.JSONPatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return classify(s.ctx, err, "undo %s", o.ID())
	}
	s.logf("%s: back to revision %d", o.ID(), revision(prev))
	return nil
}

// revisions lists a Deployment's revisions, oldest first, with their change causes and images.
func (s *stepRun) revisions(o *object) ([]map[string]any, error) {
	if o.GetKind() != "Deployment" {
		return nil, contract.Fail(contract.Unknown, "%s: Gantry lists Deployments' revisions; a %s's are not listed yet", o.ID(), o.GetKind())
	}
	_, rss, err := s.replicaSets(o)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for i := len(rss) - 1; i >= 0; i-- {
		rs := rss[i]
		var images []any
		for _, c := range rs.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		out = append(out, map[string]any{"revision": revision(rs), "changeCause": rs.Annotations["kubernetes.io/change-cause"], "images": images})
	}
	return out, nil
}
