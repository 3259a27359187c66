package k8s

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// cleanup is how long bookkeeping after a failure may take once the step's own time is up.
const cleanup = 30 * time.Second

func (s *stepRun) cleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.ctx), cleanup)
}

// rollingDeploy applies all manifests as a new release and waits for steady state (spec 15.2).
func (s *stepRun) rollingDeploy(sp stepspec.K8sRollingDeploySpec) (map[string]any, error) {
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	rev := h.Next()
	objs, err := s.render(renderOptions{revision: rev, versionBy: itoa(rev)})
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, contract.Fail(contract.Unknown, "the service's manifests render no objects")
	}
	if !sp.SkipDryRun.Bool() {
		if err := s.apply(objs, true); err != nil {
			return nil, err
		}
		s.logf("dry run: %d objects accepted by the API server", len(objs))
	}
	s.logf("release %s #%d", s.in.ReleaseName, rev)
	cur, err := s.release(h, rev, objs)
	if err != nil {
		return nil, err
	}
	var pruned []any
	if sp.PruningEnabled.Bool() {
		if prev := h.LastSucceeded(rev); prev != nil {
			if pruned, err = s.prune(prev, objs); err != nil {
				return nil, err
			}
		}
	}
	ips, err := s.settle(h, cur, ReleaseSucceeded, objs)
	if err != nil {
		return nil, err
	}
	return map[string]any{"releaseName": s.in.ReleaseName, "releaseNumber": int64(rev), "podIps": ips, "prunedResourceIds": nonNil(pruned)}, nil
}

// release records objs as release rev in progress, applies them and waits for their steady
// state; a failed release is recorded as failed (even when the step was cancelled).
func (s *stepRun) release(h *History, rev int, objs []*object) (*Release, error) {
	h.Releases = append(h.Releases, Release{Number: rev, Status: ReleaseInProgress, ExecutionID: s.exec, StepPath: s.path, Objects: record(objs)})
	if err := s.saveHistory(s.ctx, h); err != nil {
		return nil, err
	}
	err := s.apply(objs, false)
	if err == nil {
		err = s.waitSteady(objs, false)
	}
	cur := h.Latest()
	if err != nil {
		cur.Status = ReleaseFailed
		ctx, cancel := s.cleanupCtx()
		defer cancel()
		if serr := s.saveHistory(ctx, h); serr != nil {
			s.logf("could not record release #%d as failed: %v", rev, serr)
		}
		return nil, err
	}
	return cur, nil
}

// settle records the release's outcome in the history and reads the IPs of the pods of objs,
// what a step that ends a release reports.
func (s *stepRun) settle(h *History, cur *Release, status string, objs []*object) ([]any, error) {
	cur.Status = status
	if err := s.saveHistory(s.ctx, h); err != nil {
		return nil, err
	}
	return s.podIPs(objs)
}

func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// prune deletes what the previous release applied and this one does not. Versioned
// ConfigMaps and Secrets of older releases are kept for rollback.
func (s *stepRun) prune(prev *Release, objs []*object) ([]any, error) {
	current := map[string]bool{}
	for _, o := range objs {
		current[o.ID()] = true
	}
	old, err := s.objectsOf(prev)
	if err != nil {
		return nil, err
	}
	var gone []*object
	for _, o := range old {
		if current[o.ID()] || o.GetKind() == "Namespace" {
			continue
		}
		if (o.GetKind() == "ConfigMap" || o.GetKind() == "Secret") && strings.HasSuffix(o.GetName(), "-"+itoa(prev.Number)) {
			continue
		}
		gone = append(gone, o)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	s.logf("pruning %d resources removed from the manifests since release #%d", len(gone), prev.Number)
	return s.remove(s.ctx, gone)
}

// rollingRollback restores the last successful release of this release name, if this
// execution deployed a newer one (spec 5.10.1, 15.2). Only workloads are rolled back, plus,
// with pruning, the resources the failed release pruned.
func (s *stepRun) rollingRollback(sp stepspec.K8sRollingRollbackSpec) (map[string]any, error) {
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	cur := h.Latest()
	if of := s.in.RollbackOf; of != "" {
		// A post-deployment rollback undoes the earlier execution's release, which must still
		// be the newest successful one: what runs.
		if cur = h.LastSucceeded(h.Next()); cur == nil || cur.ExecutionID != of {
			return nil, contract.Fail(contract.Unknown, "release %s in namespace %s: its newest successful release was not deployed by execution %s, so that deployment is no longer what runs; nothing was rolled back",
				s.in.ReleaseName, s.in.Namespace, of)
		}
	} else if cur == nil || cur.ExecutionID != s.exec {
		s.logf("no release was deployed by this execution; nothing to roll back")
		return map[string]any{"rolledBack": false, "recreatedResourceIds": []any{}, "podIps": []any{}}, nil
	}
	curObjs, err := s.objectsOf(cur)
	if err != nil {
		return nil, err
	}
	prev := h.LastSucceeded(cur.Number)
	if prev == nil && s.in.RollbackOf != "" {
		return nil, contract.Fail(contract.Unknown, "release %s in namespace %s has no successful release before #%d to restore; nothing was rolled back", s.in.ReleaseName, s.in.Namespace, cur.Number)
	}
	if prev == nil {
		// First deployment: the state before it had none of these workloads.
		var workloads []*object
		for _, o := range curObjs {
			if isWorkload(o.GetKind()) {
				workloads = append(workloads, o)
			}
		}
		s.logf("release #%d has no successful predecessor; deleting its workloads", cur.Number)
		deleted, err := s.remove(s.ctx, workloads)
		if err != nil {
			return nil, err
		}
		cur.Status = ReleaseRolledBack
		if err := s.saveHistory(s.ctx, h); err != nil {
			return nil, err
		}
		return map[string]any{"rolledBack": true, "deletedResourceIds": deleted, "recreatedResourceIds": []any{}, "podIps": []any{}}, nil
	}
	prevObjs, err := s.objectsOf(prev)
	if err != nil {
		return nil, err
	}
	var restore, recreated []*object
	curIDs := map[string]bool{}
	for _, o := range curObjs {
		curIDs[o.ID()] = true
	}
	for _, o := range prevObjs {
		switch {
		case isWorkload(o.GetKind()), o.GetKind() == "ConfigMap" || o.GetKind() == "Secret":
			restore = append(restore, o) // workloads and the configuration they mount
		case sp.PruningEnabled.Bool() && !curIDs[o.ID()]:
			if _, err := s.resource(o).Get(s.ctx, o.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				restore, recreated = append(restore, o), append(recreated, o)
			}
		}
	}
	s.logf("rolling back release %s from #%d to #%d", s.in.ReleaseName, cur.Number, prev.Number)
	if err := s.apply(restore, false); err != nil {
		return nil, err
	}
	if err := s.waitSteady(restore, false); err != nil {
		return nil, err
	}
	ips, err := s.settle(h, cur, ReleaseRolledBack, restore)
	if err != nil {
		return nil, err
	}
	return map[string]any{"rolledBack": true, "rolledBackTo": int64(prev.Number), "recreatedResourceIds": fmtIDs(recreated), "podIps": ips}, nil
}

// instances reads an instanceSelection: a count, or a percentage of base rounded up.
func instances(sel *stepspec.InstanceSelection, base int64) (int64, error) {
	if sel == nil || sel.Spec == nil {
		return 0, contract.Fail(contract.Unknown, "the step needs instanceSelection, a Count or a Percentage")
	}
	num := func(key string, v stepspec.Text) (int64, error) {
		n, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
		if err != nil || n < 0 {
			return 0, contract.Fail(contract.Unknown, "instanceSelection %s %q is not a number", key, string(v))
		}
		return int64(n), nil
	}
	switch sel.Type {
	case "Count":
		return num("count", sel.Spec.Count)
	case "Percentage":
		p, err := num("percentage", sel.Spec.Percentage)
		if err != nil {
			return 0, err
		}
		return int64(math.Ceil(float64(base) * float64(p) / 100)), nil
	}
	return 0, contract.Fail(contract.Unknown, "instanceSelection type %s is not Count or Percentage", sel.Type)
}

func replicas(u *unstructured.Unstructured) int64 {
	if v, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		return v
	}
	return 1
}

// theDeployment finds the single Deployment canary and blue-green steps work on.
func theDeployment(objs []*object, step string) (*object, error) {
	var found []*object
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return nil, contract.Fail(contract.Unknown, "%s needs exactly one Deployment in the manifests, found %d", step, len(found))
	}
	return found[0], nil
}

// addTrack labels a workload's metadata, selector and pod template.
func addLabels(o *object, add map[string]string) {
	labels := o.GetLabels()
	for k, v := range add {
		labels[k] = v
	}
	o.SetLabels(labels)
	ensureLabels(o.Object.Unstructured.Object, []string{"spec", "selector", "matchLabels"}, add)
	ensureLabels(o.Object.Unstructured.Object, []string{"spec", "template", "metadata", "labels"}, add)
}

// canaryDeploy deploys `<name>-canary`, a copy of the service's Deployment with the selected
// number of pods, and its ConfigMaps and Secrets suffixed -canary.
func (s *stepRun) canaryDeploy(sp stepspec.K8sCanaryDeploySpec) (map[string]any, error) {
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	rev := h.Next()
	objs, err := s.render(renderOptions{revision: rev, versionBy: "canary"})
	if err != nil {
		return nil, err
	}
	dep, err := theDeployment(objs, stepspec.K8sCanaryDeploy)
	if err != nil {
		return nil, err
	}
	n, err := instances(sp.InstanceSelection, replicas(dep.Object.Unstructured))
	if err != nil {
		return nil, err
	}
	dep.SetName(dep.GetName() + "-canary")
	_ = unstructured.SetNestedField(dep.Object.Unstructured.Object, n, "spec", "replicas")
	addLabels(dep, map[string]string{LabelTrack: "canary"})
	apply := []*object{dep}
	for _, o := range objs {
		if o.versioned {
			labels := o.GetLabels()
			labels[LabelTrack] = "canary"
			o.SetLabels(labels)
			apply = append(apply, o)
		}
	}
	if !sp.SkipDryRun.Bool() {
		if err := s.apply(apply, true); err != nil {
			return nil, err
		}
	}
	if err := s.apply(apply, false); err != nil {
		return nil, err
	}
	if err := s.waitSteady(apply, false); err != nil {
		return nil, err
	}
	return map[string]any{"canaryWorkload": "Deployment/" + dep.GetName(), "targetInstances": n, "releaseNumber": int64(rev)}, nil
}

// canaryKinds are what a canary deployment leaves behind: its workload and its configuration.
var canaryKinds = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
	{"ConfigMap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}},
}

// canaryDelete deletes the canary workload and configuration of the release.
func (s *stepRun) canaryDelete() (map[string]any, error) {
	sel := LabelRelease + "=" + s.in.ReleaseName + "," + LabelTrack + "=canary"
	var deleted []any
	for _, k := range canaryKinds {
		ids, err := s.deleteBySelector(k.kind, k.gvr, sel)
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, ids...)
	}
	if len(deleted) == 0 {
		s.logf("no canary workload to delete")
	}
	for _, d := range deleted {
		s.logf("deleted %s", d)
	}
	return map[string]any{"deletedResourceIds": nonNil(deleted)}, nil
}

// deleteBySelector deletes the objects of one kind in the step's namespace that a label selector
// matches (dependents in the background), and returns their ids, namespace/Kind/name.
func (s *stepRun) deleteBySelector(kind string, gvr schema.GroupVersionResource, sel string) ([]any, error) {
	res := s.c.dyn.Resource(gvr).Namespace(s.in.Namespace)
	list, err := res.List(s.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, classify(s.ctx, err, "list canary %ss", kind)
	}
	bg := metav1.DeletePropagationBackground
	var ids []any
	for _, o := range list.Items {
		if err := res.Delete(s.ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return nil, classify(s.ctx, err, "delete %s/%s", kind, o.GetName())
		}
		ids = append(ids, s.in.Namespace+"/"+kind+"/"+o.GetName())
	}
	return ids, nil
}

// bgServices finds the primary and stage Services of a blue-green manifest: annotated with
// harness.io/primary-service and harness.io/stage-service, or the only Service as primary with
// a `<name>-stage` copy as stage.
func bgServices(objs []*object) (primary, stage *object, err error) {
	var svcs []*object
	for _, o := range objs {
		if o.GetKind() == "Service" {
			svcs = append(svcs, o)
			switch {
			case o.GetAnnotations()[AnnotPrimaryService] == "true":
				primary = o
			case o.GetAnnotations()[AnnotStageService] == "true":
				stage = o
			}
		}
	}
	if primary == nil && len(svcs) == 1 {
		primary = svcs[0]
	}
	if primary == nil {
		return nil, nil, contract.Fail(contract.Unknown, "blue-green needs one Service, or one annotated %s: \"true\" (found %d Services)", AnnotPrimaryService, len(svcs))
	}
	if stage == nil {
		c := primary.Object.Unstructured.DeepCopy()
		c.SetName(primary.GetName() + "-stage")
		stage = &object{Object: manifestsObject(primary.File, c), gvr: primary.gvr, namespaced: true}
	}
	return primary, stage, nil
}

func (s *stepRun) liveColor(svc *object) (string, map[string]string, error) {
	u, err := s.resource(svc).Get(s.ctx, svc.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, classify(s.ctx, err, "read %s", svc.ID())
	}
	sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector")
	return sel[LabelColor], u.GetAnnotations(), nil
}

func other(color string) string {
	if color == "blue" {
		return "green"
	}
	return "blue"
}

func setSelectorColor(o *object, color string) {
	ensureLabels(o.Object.Unstructured.Object, []string{"spec", "selector"}, map[string]string{LabelColor: color})
}

// colors finds a blue-green deployment's primary and stage Services among objs and the colours
// they are to route to: the stage colour is the one the live primary Service does not route
// to; on a first deployment, with no live colour, both route to it.
func (s *stepRun) colors(objs []*object) (primary, stage *object, primaryColor, stageColor string, err error) {
	if primary, stage, err = bgServices(objs); err != nil {
		return nil, nil, "", "", err
	}
	if primaryColor, _, err = s.liveColor(primary); err != nil {
		return nil, nil, "", "", err
	}
	stageColor = other(primaryColor)
	if primaryColor == "" {
		primaryColor = stageColor
	}
	return primary, stage, primaryColor, stageColor, nil
}

// blueGreenDeploy deploys `<name>-<stage color>` behind the stage Service; the primary Service
// keeps routing to the primary colour (on a first deployment both route to the new one).
func (s *stepRun) blueGreenDeploy(sp stepspec.K8sBlueGreenDeploySpec) (map[string]any, error) {
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	rev := h.Next()
	objs, err := s.render(renderOptions{revision: rev, versionBy: itoa(rev)})
	if err != nil {
		return nil, err
	}
	dep, err := theDeployment(objs, stepspec.K8sBlueGreenDeploy)
	if err != nil {
		return nil, err
	}
	primary, stage, primaryColor, stageColor, err := s.colors(objs)
	if err != nil {
		return nil, err
	}
	base := dep.GetName()
	hash, err := s.contentHash()
	if err != nil {
		return nil, err
	}
	dep.SetName(base + "-" + stageColor)
	addLabels(dep, map[string]string{LabelColor: stageColor})
	ann := dep.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotManifestHash] = hash
	dep.SetAnnotations(ann)
	out := map[string]any{"stageColor": stageColor, "primaryColor": primaryColor, "primaryServiceName": primary.GetName(),
		"stageServiceName": stage.GetName(), "releaseNumber": int64(rev), "stageDeploymentSkipped": false}
	if sp.SkipUnchangedManifest.Bool() && primaryColor != stageColor {
		live, err := s.c.cs.AppsV1().Deployments(s.in.Namespace).Get(s.ctx, base+"-"+primaryColor, metav1.GetOptions{})
		if err == nil && live.Annotations[AnnotManifestHash] == hash {
			s.logf("the manifest is unchanged from the primary (%s); skipping the stage deployment", primaryColor)
			out["stageDeploymentSkipped"] = true
			return out, nil
		}
	}
	setSelectorColor(primary, primaryColor)
	setSelectorColor(stage, stageColor)
	var apply []*object
	for _, o := range objs {
		if o != primary && o.GetKind() != "Service" || o == dep {
			apply = append(apply, o)
		}
	}
	apply = append(apply, primary, stage)
	if !sp.SkipDryRun.Bool() {
		if err := s.apply(apply, true); err != nil {
			return nil, err
		}
	}
	cur, err := s.release(h, rev, apply)
	if err != nil {
		return nil, err
	}
	cur.Status = ReleaseSucceeded
	if err := s.saveHistory(s.ctx, h); err != nil {
		return nil, err
	}
	if tr := sp.TrafficRouting; tr != nil && (tr.Provider != "" || tr.Spec.Name != "" || len(tr.Spec.Routes) > 0) {
		routed, err := s.configTraffic(tr)
		if err != nil {
			return nil, err
		}
		out["trafficRouting"] = routed
	}
	return out, nil
}

// contentHash fingerprints what a blue-green release runs: every object but the Services,
// before release versioning, so an unchanged manifest hashes the same in every release.
func (s *stepRun) contentHash() (string, error) {
	objs, err := s.render(renderOptions{revision: 0})
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, o := range objs {
		if o.GetKind() != "Service" {
			h.Write(mustJSON(o.Object.Unstructured.Object))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// bgColors are a blue-green release's two Services and the colours they route to live.
type bgColors struct {
	primary, stage           *object
	primaryColor, stageColor string
	primaryAnnotations       map[string]string
}

// liveColors renders the release's objects and reads which colour each of its Services routes
// to; an error when either is not deployed with colours yet.
func (s *stepRun) liveColors() ([]*object, bgColors, error) {
	var c bgColors
	objs, err := s.render(renderOptions{revision: 0})
	if err != nil {
		return nil, c, err
	}
	if c.primary, c.stage, err = bgServices(objs); err != nil {
		return nil, c, err
	}
	if c.primaryColor, c.primaryAnnotations, err = s.liveColor(c.primary); err != nil {
		return nil, c, err
	}
	if c.stageColor, _, err = s.liveColor(c.stage); err != nil {
		return nil, c, err
	}
	if c.primaryColor == "" || c.stageColor == "" {
		return nil, c, contract.Fail(contract.Unknown, "services %s and %s are not deployed with colours; run K8sBlueGreenDeploy or HelmBGDeploy first", c.primary.GetName(), c.stage.GetName())
	}
	return objs, c, nil
}

// swapServices swaps the colours the primary and stage Services route to. In a rollback
// section it swaps back only if this execution swapped them.
func (s *stepRun) swapServices() (map[string]any, error) {
	_, c, err := s.liveColors()
	if err != nil {
		return nil, err
	}
	primary, stage, pc, sc, pann := c.primary, c.stage, c.primaryColor, c.stageColor, c.primaryAnnotations
	if s.in.Rollback && pann[AnnotSwappedBy] != s.exec {
		s.logf("the services were not swapped by this execution; leaving primary on %s", pc)
		return map[string]any{"swapped": false, "primaryColor": pc, "stageColor": sc}, nil
	}
	if pc == sc {
		s.logf("both services route to %s (first deployment); nothing to swap", pc)
		return map[string]any{"swapped": false, "primaryColor": pc, "stageColor": sc}, nil
	}
	marker := s.exec
	if s.in.Rollback {
		marker = ""
	}
	patch := func(svc *object, color, swappedBy string) error {
		var ann any = nil
		if svc == primary {
			if swappedBy != "" {
				ann = map[string]any{AnnotSwappedBy: swappedBy}
			} else {
				ann = map[string]any{AnnotSwappedBy: nil}
			}
		}
		body := map[string]any{"spec": map[string]any{"selector": map[string]any{LabelColor: color}}}
		if ann != nil {
			body["metadata"] = map[string]any{"annotations": ann}
		}
		_, err := s.resource(svc).Patch(s.ctx, svc.GetName(), types.MergePatchType, mustJSON(body), metav1.PatchOptions{FieldManager: FieldManager})
		return classify(s.ctx, err, "point %s at %s", svc.ID(), color)
	}
	if err := patch(primary, sc, marker); err != nil {
		return nil, err
	}
	if err := patch(stage, pc, ""); err != nil {
		return nil, err
	}
	s.logf("swapped: %s now routes to %s, %s to %s", primary.GetName(), sc, stage.GetName(), pc)
	return map[string]any{"swapped": true, "primaryColor": sc, "stageColor": pc}, nil
}

// stageScaleDown scales the stage colour's Deployment to zero once the primary Service routes
// elsewhere (K8sBlueGreenStageScaleDown): after a swap, the old version stops using capacity.
func (s *stepRun) stageScaleDown() (map[string]any, error) {
	objs, c, err := s.liveColors()
	if err != nil {
		return nil, err
	}
	dep, err := theDeployment(objs, stepspec.K8sBlueGreenStageScaleDown)
	if err != nil {
		return nil, err
	}
	pc, sc := c.primaryColor, c.stageColor
	if pc == sc {
		s.logf("both services route to %s: nothing runs apart from the primary, nothing scaled down", pc)
		return map[string]any{"scaledDown": false, "stageColor": sc}, nil
	}
	name := dep.GetName() + "-" + sc
	body := mustJSON(map[string]any{"spec": map[string]any{"replicas": 0}})
	if _, err := s.c.cs.AppsV1().Deployments(s.in.Namespace).Patch(s.ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "scale"); err != nil {
		if apierrors.IsNotFound(err) {
			s.logf("deployment %s (stage colour %s) is gone: nothing to scale down", name, sc)
			return map[string]any{"scaledDown": false, "stageColor": sc}, nil
		}
		return nil, classify(s.ctx, err, "scale down %s", name)
	}
	s.logf("scaled down deployment %s (stage colour %s) to 0 replicas", name, sc)
	return map[string]any{"scaledDown": true, "stageColor": sc, "deployment": name}, nil
}

// pathMatcher matches manifest files by their path, or by a path relative to a store folder.
func pathMatcher(paths []string) (func(string) bool, map[string]bool) {
	used := map[string]bool{}
	return func(p string) bool {
		for _, want := range paths {
			want = strings.TrimPrefix(want, "./")
			if p == want || strings.HasSuffix(p, "/"+want) {
				used[want] = true
				return true
			}
		}
		return false
	}, used
}

// applyFiles applies selected manifest files (K8sApply), any kinds including Jobs, and waits
// for workloads and Jobs unless skipSteadyStateCheck.
func (s *stepRun) applyFiles(sp stepspec.K8sApplySpec) (map[string]any, error) {
	paths := []string(sp.FilePaths)
	if len(paths) == 0 && !s.in.StepSource {
		return nil, contract.Fail(contract.Unknown, "K8sApply needs at least one entry in filePaths")
	}
	match, used := pathMatcher(paths)
	if len(paths) == 0 {
		match = nil // all files of the step's manifestSource
	}
	objs, err := s.render(renderOptions{files: match, noRender: sp.SkipRendering.Bool()})
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if !used[strings.TrimPrefix(p, "./")] {
			of := "the service"
			if s.in.StepSource {
				of = "the step's manifestSource"
			}
			return nil, contract.Fail(contract.Unknown, "filePaths entry %q matches no manifest file of %s", p, of)
		}
	}
	if !sp.SkipDryRun.Bool() {
		if err := s.apply(objs, true); err != nil {
			return nil, err
		}
	}
	if err := s.apply(objs, false); err != nil {
		return nil, err
	}
	if !sp.SkipSteadyStateCheck.Bool() {
		if err := s.waitSteady(objs, true); err != nil {
			return nil, err
		}
	}
	return map[string]any{"appliedResourceIds": fmtIDs(objs)}, nil
}

// scale sets a workload's replicas through its scale subresource (K8sScale). A percentage is of
// the replicas the release's manifests ask for, or of the current count if they do not name it.
func (s *stepRun) scale(sp stepspec.K8sScaleSpec) (map[string]any, error) {
	ref := strings.TrimSpace(sp.Workload)
	kind, name, ok := strings.Cut(ref, "/")
	if !ok {
		kind, name = "Deployment", ref
	}
	objs, err := s.render(renderOptions{revision: 0})
	if err != nil {
		return nil, err
	}
	var target *object
	for _, o := range objs {
		if strings.EqualFold(o.GetKind(), kind) && o.GetName() == name {
			target = o
		}
	}
	if target == nil {
		if target, err = s.byName(kind + "/" + name); err != nil {
			return nil, err
		}
	}
	live, err := s.resource(target).Get(s.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classify(s.ctx, err, "read %s", target.ID())
	}
	base := replicas(live)
	if _, ok, _ := unstructured.NestedInt64(target.Object.Unstructured.Object, "spec", "replicas"); ok {
		base = replicas(target.Object.Unstructured)
	}
	n, err := instances(sp.InstanceSelection, base)
	if err != nil {
		return nil, err
	}
	body := mustJSON(map[string]any{"spec": map[string]any{"replicas": n}})
	if _, err := s.resource(target).Patch(s.ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "scale"); err != nil {
		return nil, classify(s.ctx, err, "scale %s", target.ID())
	}
	s.logf("scaled %s from %d to %d replicas", target.ID(), replicas(live), n)
	if !sp.SkipSteadyStateCheck.Bool() {
		if err := s.waitSteady([]*object{target}, false); err != nil {
			return nil, err
		}
	}
	return map[string]any{"workload": target.ID(), "replicas": n}, nil
}

// patchTypes are K8sPatch's merge strategies as the API server names them.
var patchTypes = map[string]types.PatchType{
	"Strategic": types.StrategicMergePatchType, "Merge": types.MergePatchType, "Json": types.JSONPatchType,
}

// patch applies the step's Inline patch (YAML or JSON) to a live workload (K8sPatch), records
// the change cause when asked, and waits for the workload to be steady again.
func (s *stepRun) patch(sp stepspec.K8sPatchSpec) (map[string]any, error) {
	ref := strings.TrimSpace(sp.Workload)
	if !strings.Contains(ref, "/") {
		ref = "Deployment/" + ref
	}
	target, err := s.byName(ref)
	if err != nil {
		return nil, err
	}
	strategy := sp.MergeStrategyType
	pt, ok := patchTypes[strategy]
	if !ok {
		return nil, contract.Fail(contract.Unknown, "mergeStrategyType %q is not Strategic, Merge or Json", strategy)
	}
	var source, content string
	if src := sp.Source; src != nil {
		source = src.Type
		if src.Spec != nil {
			content = src.Spec.Content
		}
	}
	if source != "Inline" || strings.TrimSpace(content) == "" {
		return nil, contract.Fail(contract.Unknown, "K8sPatch needs an Inline source with content (got a %q source)", source)
	}
	if content, err = secrets.Expand(s.ctx, s.secrets, s.mask, content); err != nil {
		return nil, contract.Fail(contract.Unknown, "K8sPatch content: %v", err)
	}
	body, err := yaml.YAMLToJSON([]byte(content))
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "K8sPatch content is neither YAML nor JSON: %v", err)
	}
	name := target.GetName()
	if _, err := s.resource(target).Patch(s.ctx, name, pt, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return nil, classify(s.ctx, shortInvalid(err), "patch %s (%s)", target.ID(), strategy)
	}
	s.logf("patched %s (%s merge)", target.ID(), strategy)
	if sp.RecordChangeCause.Bool() {
		cause := mustJSON(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			"kubernetes.io/change-cause": fmt.Sprintf("K8sPatch %s of execution %s", s.path, s.exec)}}})
		if _, err := s.resource(target).Patch(s.ctx, name, types.MergePatchType, cause, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return nil, classify(s.ctx, err, "record the change cause on %s", target.ID())
		}
	}
	if !sp.SkipSteadyStateCheck.Bool() {
		if err := s.waitSteady([]*object{target}, false); err != nil {
			return nil, err
		}
	}
	return map[string]any{"workload": target.ID()}, nil
}

// shortInvalid keeps the reason of an API server's "invalid" answer that quotes the whole
// patched object before it.
func shortInvalid(err error) error {
	msg := err.Error()
	if !apierrors.IsInvalid(err) || len(msg) < 300 {
		return err
	}
	if i := strings.LastIndex(msg, "\": "); i > 0 {
		return fmt.Errorf("the patched object is invalid: %s", msg[i+3:])
	}
	return err
}

// delete removes resources by name, by release or by manifest (K8sDelete).
func (s *stepRun) delete(sp stepspec.K8sDeleteSpec) (map[string]any, error) {
	var dr stepspec.DeleteResources
	if sp.DeleteResources != nil {
		dr = *sp.DeleteResources
	}
	var spec stepspec.DeleteTarget
	if dr.Spec != nil {
		spec = *dr.Spec
	}
	var targets []*object
	switch dr.Type {
	case "ResourceName":
		var err error
		if targets, err = s.namedObjects("deleteResources", spec.ResourceNames); err != nil {
			return nil, err
		}
	case "ReleaseName":
		h, err := s.loadHistory()
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for i := len(h.Releases) - 1; i >= 0; i-- {
			objs, err := s.objectsOf(&h.Releases[i])
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				if !seen[o.ID()] && o.GetKind() != "Namespace" {
					seen[o.ID()] = true
					targets = append(targets, o)
				}
			}
		}
		hist := &unstructured.Unstructured{}
		hist.SetAPIVersion("v1")
		hist.SetKind("Secret")
		hist.SetName(historyName(s.in.ReleaseName))
		o, err := s.mapObject(manifestsObject("release history", hist))
		if err != nil {
			return nil, err
		}
		targets = append(targets, o)
	case "ManifestPath":
		var err error
		if targets, err = s.manifestPathObjects("deleteResources", spec.AllManifestPaths, spec.ManifestPaths); err != nil {
			return nil, err
		}
	default:
		return nil, contract.Fail(contract.Unknown, "deleteResources.type %q is not ResourceName, ReleaseName or ManifestPath", dr.Type)
	}
	deleted, err := s.remove(s.ctx, targets)
	if err != nil {
		return nil, err
	}
	if dr.Type == "ReleaseName" && spec.DeleteNamespace.Bool() {
		if err := s.c.cs.CoreV1().Namespaces().Delete(s.ctx, s.in.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, classify(s.ctx, err, "delete namespace %s", s.in.Namespace)
		}
		s.logf("deleted namespace %s", s.in.Namespace)
		deleted = append(deleted, "Namespace/"+s.in.Namespace)
	}
	return map[string]any{"deletedResourceIds": nonNil(deleted)}, nil
}

// namedObjects are the objects a step's resourceNames (Kind/name, namespace/Kind/name) name;
// what is the field holding the spec, for errors.
func (s *stepRun) namedObjects(what string, names stepspec.List) ([]*object, error) {
	if len(names) == 0 {
		return nil, contract.Fail(contract.Unknown, "%s.spec.resourceNames is empty", what)
	}
	var out []*object
	for _, n := range names {
		o, err := s.byName(n)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// manifestPathObjects are the objects of the manifests a step's manifestPaths name, or of all
// of them with allManifestPaths.
func (s *stepRun) manifestPathObjects(what string, all stepspec.Text, paths stepspec.List) ([]*object, error) {
	var match func(string) bool
	if !all.Bool() {
		if len(paths) == 0 {
			return nil, contract.Fail(contract.Unknown, "%s.spec needs manifestPaths or allManifestPaths: true", what)
		}
		match, _ = pathMatcher(paths)
	}
	return s.render(renderOptions{files: match})
}

// knownKinds spells kinds users write in resource names in any case; others are core (v1).
var knownKinds = map[string][2]string{
	"deployment": {"apps/v1", "Deployment"}, "statefulset": {"apps/v1", "StatefulSet"}, "daemonset": {"apps/v1", "DaemonSet"},
	"replicaset": {"apps/v1", "ReplicaSet"}, "job": {"batch/v1", "Job"}, "cronjob": {"batch/v1", "CronJob"},
	"ingress": {"networking.k8s.io/v1", "Ingress"}, "networkpolicy": {"networking.k8s.io/v1", "NetworkPolicy"},
	"role": {"rbac.authorization.k8s.io/v1", "Role"}, "rolebinding": {"rbac.authorization.k8s.io/v1", "RoleBinding"},
	"clusterrole": {"rbac.authorization.k8s.io/v1", "ClusterRole"}, "clusterrolebinding": {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
	"horizontalpodautoscaler": {"autoscaling/v2", "HorizontalPodAutoscaler"}, "service": {"v1", "Service"},
	"configmap": {"v1", "ConfigMap"}, "secret": {"v1", "Secret"}, "serviceaccount": {"v1", "ServiceAccount"},
	"persistentvolumeclaim": {"v1", "PersistentVolumeClaim"}, "namespace": {"v1", "Namespace"},
}

// byName parses `Kind/name` or `namespace/Kind/name`.
func (s *stepRun) byName(ref string) (*object, error) {
	parts := strings.Split(ref, "/")
	ns := ""
	switch len(parts) {
	case 2:
	case 3:
		ns, parts = parts[0], parts[1:]
	default:
		return nil, contract.Fail(contract.Unknown, "resource name %q is not Kind/name or namespace/Kind/name", ref)
	}
	av, kind := "v1", parts[0]
	if k, ok := knownKinds[strings.ToLower(kind)]; ok {
		av, kind = k[0], k[1]
	}
	m, err := s.c.mapper.RESTMapping(schemaGK(av, kind))
	if err != nil {
		return nil, contract.Fail(contract.Unknown, "resource name %q: unknown kind %s", ref, kind)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	u.SetName(parts[1])
	u.SetNamespace(ns)
	return s.mapObject(manifestsObject("resourceNames", u))
}

// dryRun renders the manifests and has the API server validate and admit them without
// persisting anything (K8sDryRun). The rendered manifest is the step's output.
func (s *stepRun) dryRun() (map[string]any, error) {
	objs, err := s.renderNext()
	if err != nil {
		return nil, err
	}
	if err := s.apply(objs, true); err != nil {
		return nil, err
	}
	var docs []string
	for _, o := range objs {
		b, _ := yaml.Marshal(o.Object.Unstructured.Object)
		docs = append(docs, string(b))
	}
	s.logf("dry run: %d objects accepted by the API server", len(objs))
	return map[string]any{"manifestDryRun": s.mask.Apply(strings.Join(docs, "---\n")), "resources": fmtIDs(objs)}, nil
}

// renderNext renders the manifests as the release's next deployment would apply them.
func (s *stepRun) renderNext() ([]*object, error) {
	h, err := s.loadHistory()
	if err != nil {
		return nil, err
	}
	return s.render(renderOptions{revision: h.Next(), versionBy: itoa(h.Next())})
}

// podIPs lists the IPs of the running pods of the workloads.
func (s *stepRun) podIPs(objs []*object) ([]any, error) {
	var ips []string
	for _, o := range objs {
		if !isWorkload(o.GetKind()) {
			continue
		}
		sel, ok, _ := unstructured.NestedStringMap(o.Object.Unstructured.Object, "spec", "selector", "matchLabels")
		if !ok || len(sel) == 0 {
			continue
		}
		var parts []string
		for k, v := range sel {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		pods, err := s.c.cs.CoreV1().Pods(o.GetNamespace()).List(s.ctx, metav1.ListOptions{LabelSelector: strings.Join(parts, ",")})
		if err != nil {
			return nil, classify(s.ctx, err, "list pods of %s", o.ID())
		}
		for _, p := range pods.Items {
			if p.Status.PodIP != "" && p.DeletionTimestamp == nil && p.Status.Phase == "Running" {
				ips = append(ips, p.Status.PodIP)
			}
		}
	}
	sort.Strings(ips)
	out := make([]any, len(ips))
	for i, ip := range ips {
		out[i] = ip
	}
	return out, nil
}
