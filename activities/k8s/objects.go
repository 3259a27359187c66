package k8s

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/plan"
)

// Labels and annotations Gantry puts on or reads from objects. The harness.io ones are the
// reference's, so manifests written for it keep working.
const (
	LabelRelease        = "gantry.io/release"
	LabelTrack          = "harness.io/track"
	LabelColor          = "harness.io/color"
	AnnotSkipVersioning = "harness.io/skip-versioning"
	AnnotPrimaryService = "harness.io/primary-service"
	AnnotStageService   = "harness.io/stage-service"
	AnnotSwappedBy      = "gantry.io/swapped-by"
	AnnotManifestHash   = "gantry.io/manifest-hash"
	FieldManager        = "gantry"
)

// object is a rendered object with its API mapping.
type object struct {
	manifests.Object
	gvr        schema.GroupVersionResource
	namespaced bool
	versioned  bool // a ConfigMap or Secret renamed per release
}

// ID is the object's `Kind/name` (namespaced: `namespace/Kind/name`), as outputs list them.
func (o *object) ID() string {
	if o.GetNamespace() != "" {
		return o.GetNamespace() + "/" + o.GetKind() + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetName()
}

func isWorkload(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet"
}

// renderOptions select which manifest files render and how.
type renderOptions struct {
	revision  int
	files     func(path string) bool // nil: all
	noRender  bool                   // skipRendering: apply the files as they are
	versionBy string                 // suffix for versioned ConfigMaps/Secrets ("" = none)
}

// render turns the deployment's manifests into objects: expressions were rendered by the
// workflow, the release revision is filled in here, then Go templates run over the values.
// Namespaced objects without a namespace get the infrastructure's; every object is labelled
// with the release.
func (s *stepRun) render(o renderOptions) ([]*object, error) {
	if err := s.expandSecrets(); err != nil {
		return nil, err
	}
	var values, patches, params []manifests.File
	for _, m := range s.in.Manifests {
		switch m.Type {
		case "Values":
			values = append(values, toFiles(m.Files, o.revision)...)
		case "KustomizePatches":
			patches = append(patches, toFiles(m.Files, o.revision)...)
		case "OpenshiftParam":
			params = append(params, toFiles(m.Files, o.revision)...)
		}
	}
	var out []*object
	for _, m := range s.in.Manifests {
		if m.Type == "Values" || m.Type == "KustomizePatches" || m.Type == "OpenshiftParam" {
			continue
		}
		var files []manifests.File
		for _, f := range toFiles(m.Files, o.revision) {
			if o.files == nil || o.files(f.Path) {
				files = append(files, f)
			}
		}
		var objs []manifests.Object
		var err error
		switch {
		case m.Type == "Kustomize":
			objs, err = manifests.Kustomize(files, m.Folder, patches...)
		case m.Type == "OpenshiftTemplate":
			if len(files) != 1 {
				return nil, contract.Fail(contract.Unknown, "manifest %s: an OpenshiftTemplate manifest is one template file, found %d", m.ID, len(files))
			}
			// The template's own param files, then the service's OpenshiftParam files.
			objs, err = manifests.OpenshiftTemplate(files[0], append(toFiles(m.Values, o.revision), params...))
		case m.Type == "HelmChart":
			objs, err = manifests.Helm(files, m.Folder, append(toFiles(m.Values, o.revision), values...),
				manifests.Release{Name: s.in.ReleaseName, Namespace: s.in.Namespace, Revision: o.revision})
		case o.noRender:
			for _, f := range files {
				more, err := manifests.Split(f.Path, []byte(f.Text))
				if err != nil {
					return nil, contract.Fail(contract.Unknown, "manifest %s: %v", m.ID, err)
				}
				objs = append(objs, more...)
			}
		default:
			var vals map[string]any
			if vals, err = manifests.Values(append(toFiles(m.Values, o.revision), values...)); err != nil {
				return nil, contract.Fail(contract.Unknown, "manifest %s: %v", m.ID, err)
			}
			objs, err = manifests.Render(files, vals)
		}
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "manifest %s: %s", m.ID, s.mask.Apply(err.Error()))
		}
		for _, obj := range objs {
			mo, err := s.mapObject(obj)
			if err != nil {
				return nil, err
			}
			mo.versioned = !m.SkipVersioning && o.versionBy != "" && (obj.GetKind() == "ConfigMap" || obj.GetKind() == "Secret") &&
				obj.GetAPIVersion() == "v1" && obj.GetAnnotations()[AnnotSkipVersioning] != "true"
			out = append(out, mo)
		}
	}
	if o.versionBy != "" {
		version(out, o.versionBy)
	}
	return out, nil
}

// expandSecrets resolves secret references in manifests and values once per step; the values
// join the masker so logs and outputs never show them.
func (s *stepRun) expandSecrets() error {
	if s.expanded {
		return nil
	}
	s.expanded = true
	for i := range s.in.Manifests {
		m := &s.in.Manifests[i]
		for _, fs := range [][]plan.File{m.Files, m.Values} {
			for j := range fs {
				t, err := secrets.Expand(s.ctx, s.secrets, s.mask, fs[j].Text)
				if err != nil {
					return contract.Fail(contract.Unknown, "manifest %s, %s: %v", m.ID, fs[j].Path, err)
				}
				fs[j].Text = t
			}
		}
	}
	return nil
}

func toFiles(fs []plan.File, revision int) []manifests.File {
	out := make([]manifests.File, len(fs))
	for i, f := range fs {
		out[i] = manifests.File{Path: f.Path, Text: strings.ReplaceAll(f.Text, contract.ReleaseRevisionMarker, strconv.Itoa(revision))}
	}
	return out
}

// mapObject finds an object's resource and scope, and sets its namespace and release label.
func (s *stepRun) mapObject(obj manifests.Object) (*object, error) {
	gvk := obj.GroupVersionKind()
	m, err := s.c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, contract.Fail(contract.Unknown, "%s: the cluster has no resource type %s", obj.File, gvk)
		}
		return nil, classify(s.ctx, err, "look up resource type %s", gvk)
	}
	o := &object{Object: obj, gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	if o.namespaced && o.GetNamespace() == "" {
		o.SetNamespace(s.in.Namespace)
	}
	if !o.namespaced {
		o.SetNamespace("")
	}
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRelease] = s.in.ReleaseName
	o.SetLabels(labels)
	return o, nil
}

// version renames versioned ConfigMaps and Secrets to `name-suffix` and points the pod
// templates that use them at the new names, so each release keeps its own configuration and a
// rollback gets the configuration it was deployed with.
func version(objs []*object, suffix string) {
	renamed := map[string]string{} // kind/name -> new name
	for _, o := range objs {
		if o.versioned {
			n := o.GetName() + "-" + suffix
			renamed[o.GetKind()+"/"+o.GetName()] = n
			o.SetName(n)
		}
	}
	if len(renamed) == 0 {
		return
	}
	for _, o := range objs {
		if pod, ok := podSpec(o.Object.Unstructured); ok {
			rewriteRefs(pod, renamed)
		}
	}
}

// podSpec returns a workload's pod spec (Pods, Deployments, StatefulSets, DaemonSets, Jobs,
// ReplicaSets, CronJobs), in place.
func podSpec(u *unstructured.Unstructured) (map[string]any, bool) {
	var path []string
	switch u.GetKind() {
	case "Pod":
		path = []string{"spec"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		path = []string{"spec", "template", "spec"}
	default:
		return nil, false
	}
	return mapAt(u.Object, path...)
}

// mapAt walks nested maps without copying them.
func mapAt(m map[string]any, path ...string) (map[string]any, bool) {
	cur := m
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// rewriteRefs points a pod spec's ConfigMap and Secret references at renamed objects.
func rewriteRefs(pod map[string]any, renamed map[string]string) {
	ref := func(m map[string]any, kind, field string) {
		if m == nil {
			return
		}
		if n, ok := m[field].(string); ok {
			if to, ok := renamed[kind+"/"+n]; ok {
				m[field] = to
			}
		}
	}
	sub := func(m any, key string) map[string]any {
		mm, _ := m.(map[string]any)
		if mm == nil {
			return nil
		}
		r, _ := mm[key].(map[string]any)
		return r
	}
	for _, v := range list(pod, "volumes") {
		ref(sub(v, "configMap"), "ConfigMap", "name")
		ref(sub(v, "secret"), "Secret", "secretName")
		if pr := sub(v, "projected"); pr != nil {
			for _, src := range list(pr, "sources") {
				ref(sub(src, "configMap"), "ConfigMap", "name")
				ref(sub(src, "secret"), "Secret", "name")
			}
		}
	}
	for _, s := range list(pod, "imagePullSecrets") {
		m, _ := s.(map[string]any)
		ref(m, "Secret", "name")
	}
	for _, key := range []string{"containers", "initContainers"} {
		for _, c := range list(pod, key) {
			cm, _ := c.(map[string]any)
			if cm == nil {
				continue
			}
			for _, ef := range list(cm, "envFrom") {
				ref(sub(ef, "configMapRef"), "ConfigMap", "name")
				ref(sub(ef, "secretRef"), "Secret", "name")
			}
			for _, e := range list(cm, "env") {
				vf := sub(e, "valueFrom")
				ref(sub(vf, "configMapKeyRef"), "ConfigMap", "name")
				ref(sub(vf, "secretKeyRef"), "Secret", "name")
			}
		}
	}
}

func ensureLabels(m map[string]any, path []string, add map[string]string) {
	cur := m
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	for k, v := range add {
		cur[k] = v
	}
}

func fmtIDs(objs []*object) []any {
	out := make([]any, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.ID())
	}
	return out
}

func schemaGK(apiVersion, kind string) (schema.GroupKind, string) {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version
}
