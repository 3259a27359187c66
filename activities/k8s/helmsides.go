package k8s

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// Helm canary and blue-green keep the new version in a Helm release of its own beside the
// stage's: `<release>-canary` for a canary, `<release>-blue` and `<release>-green` for the two
// colours. Two releases cannot own one object, so a side release holds only what each copy
// needs for itself: the workload, renamed `<name>-<suffix>`, and the ConfigMaps and Secrets it
// uses, renamed the same way (pod templates follow). The chart is rendered with the stage's
// release name, so `.Release.Name` and the labels Services select on are those HelmDeploy
// gives; Helm records and rolls back the side release like any other. Blue-green's Services,
// and every other object the chart has, are applied by Gantry beside the colour releases,
// since both colours share them.

// sideRelease is a Helm post-renderer that gives Helm the objects of a side release in place
// of its own rendering of the chart.
type sideRelease struct {
	name string
	objs []*object
}

// Run returns the side release's manifest.
func (r *sideRelease) Run(*bytes.Buffer) (*bytes.Buffer, error) {
	var out bytes.Buffer
	for _, o := range r.objs {
		b, err := yaml.Marshal(o.Object.Unstructured.Object)
		if err != nil {
			return nil, fmt.Errorf("write %s for Helm release %s: %w", o.ID(), r.name, err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return &out, nil
}

// helmName is the Helm release a Helm step acts on: the stage's, or its side release.
func (s *stepRun) helmName() string {
	if s.side != nil {
		return s.side.name
	}
	return s.in.ReleaseName
}

// sideObjects renders the chart as the stage's release and keeps one copy's own objects: its
// Deployment renamed `<name>-<suffix>` and labelled, and the ConfigMaps and Secrets renamed
// the same way. The rest is returned apart, as shared.
func (s *stepRun) sideObjects(step, suffix string, labels map[string]string) (dep *object, own, shared []*object, err error) {
	objs, err := s.render(renderOptions{revision: 0})
	if err != nil {
		return nil, nil, nil, err
	}
	if dep, err = theDeployment(objs, step); err != nil {
		return nil, nil, nil, err
	}
	for _, o := range objs {
		switch {
		case o == dep:
		case (o.GetKind() == "ConfigMap" || o.GetKind() == "Secret") && o.GetAPIVersion() == "v1":
			o.versioned = true
			addMetaLabels(o, labels)
			own = append(own, o)
		default:
			shared = append(shared, o)
		}
	}
	version(append([]*object{dep}, own...), suffix)
	dep.SetName(dep.GetName() + "-" + suffix)
	addLabels(dep, labels)
	return dep, append([]*object{dep}, own...), shared, nil
}

func addMetaLabels(o *object, add map[string]string) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range add {
		labels[k] = v
	}
	o.SetLabels(labels)
}

// helmCanaryDeploy deploys the canary release `<release>-canary`: the chart's Deployment as
// `<name>-canary` with the selected number of pods, labelled harness.io/track: canary, so the
// chart's Services send it its share of traffic. HelmDeploy then deploys the stage's release.
func (s *stepRun) helmCanaryDeploy(sp stepspec.HelmCanaryDeploySpec) (map[string]any, error) {
	dep, own, _, err := s.sideObjects(stepspec.HelmCanaryDeploy, "canary", map[string]string{LabelTrack: "canary"})
	if err != nil {
		return nil, err
	}
	n, err := instances(sp.InstanceSelection, replicas(dep.Object.Unstructured))
	if err != nil {
		return nil, err
	}
	_ = unstructured.SetNestedField(dep.Object.Unstructured.Object, n, "spec", "replicas")
	s.side = &sideRelease{name: s.in.ReleaseName + "-canary", objs: own}
	out, err := s.helmDeploy(stepspec.HelmDeploySpec{HelmBGDeploySpec: sp.HelmBGDeploySpec})
	if err != nil {
		return nil, err
	}
	out["canaryWorkload"] = "Deployment/" + dep.GetName()
	out["targetInstances"] = n
	return out, nil
}

// helmCanaryDelete uninstalls the canary release; none is not an error (a retried delete, or
// a canary that never deployed).
func (s *stepRun) helmCanaryDelete() (map[string]any, error) {
	s.side = &sideRelease{name: s.in.ReleaseName + "-canary"}
	return s.uninstallSide()
}

// uninstallSide uninstalls the side release if it exists.
func (s *stepRun) uninstallSide() (map[string]any, error) {
	cfg, err := s.helmConfig()
	if err != nil {
		return nil, err
	}
	revs, err := s.helmHistory(cfg)
	if err != nil {
		return nil, err
	}
	if len(revs) == 0 {
		s.logf("Helm release %s does not exist: nothing to delete", s.helmName())
		return map[string]any{"releaseName": s.helmName(), "deleted": false}, nil
	}
	if err := s.uninstall(cfg, true); err != nil {
		return nil, err
	}
	s.logf("uninstalled Helm release %s", s.helmName())
	return map[string]any{"releaseName": s.helmName(), "deleted": true}, nil
}

// helmBlueGreenDeploy deploys the chart as the stage colour's release, `<release>-<colour>`,
// whose Deployment `<name>-<colour>` carries harness.io/color; then applies the primary and
// stage Services (and the chart's other shared objects): the stage Service routes to the new
// colour, the primary keeps the live one until HelmBlueGreenSwapStep (on a first deployment
// both route to the new colour).
func (s *stepRun) helmBlueGreenDeploy(sp stepspec.HelmBGDeploySpec) (map[string]any, error) {
	objs, err := s.render(renderOptions{revision: 0})
	if err != nil {
		return nil, err
	}
	primary, stage, primaryColor, stageColor, err := s.colors(objs)
	if err != nil {
		return nil, err
	}
	_, own, shared, err := s.sideObjects(stepspec.HelmBGDeploy, stageColor, map[string]string{LabelColor: stageColor})
	if err != nil {
		return nil, err
	}
	s.side = &sideRelease{name: s.in.ReleaseName + "-" + stageColor, objs: own}
	out, err := s.helmDeploy(stepspec.HelmDeploySpec{HelmBGDeploySpec: sp})
	if err != nil {
		return nil, err
	}
	// The Services come from the same rendering as sideObjects' shared objects; the stage
	// Service is added when the chart has only the primary.
	var apply []*object
	for _, o := range shared {
		switch o.GetName() {
		case primary.GetName():
			if o.GetKind() == "Service" {
				setSelectorColor(o, primaryColor)
			}
		case stage.GetName():
			if o.GetKind() == "Service" {
				setSelectorColor(o, stageColor)
			}
		}
		apply = append(apply, o)
	}
	if !hasObject(shared, stage) {
		setSelectorColor(stage, stageColor)
		apply = append(apply, stage)
	}
	if err := s.apply(apply, false); err != nil {
		return nil, err
	}
	s.logf("%s routes to %s, %s to %s", primary.GetName(), primaryColor, stage.GetName(), stageColor)
	out["stageColor"], out["primaryColor"] = stageColor, primaryColor
	out["primaryServiceName"], out["stageServiceName"] = primary.GetName(), stage.GetName()
	return out, nil
}

func hasObject(objs []*object, o *object) bool {
	for _, x := range objs {
		if x.GetKind() == o.GetKind() && x.GetName() == o.GetName() {
			return true
		}
	}
	return false
}

// helmRollback rolls back what this execution changed: the blue-green Services first, if it
// swapped them, so traffic returns before anything else moves; then each of the stage's Helm
// releases (its own, the canary, both colours) to the revision it had before, uninstalling one
// this execution installed.
func (s *stepRun) helmRollback(sp stepspec.HelmRollbackSpec) (map[string]any, error) {
	out, err := s.rollbackRelease(sp)
	if err != nil {
		return nil, err
	}
	var sides []any
	for _, suffix := range []string{"canary", "blue", "green"} {
		s.side = &sideRelease{name: s.in.ReleaseName + "-" + suffix}
		cfg, err := s.helmConfig()
		if err != nil {
			return nil, err
		}
		revs, err := s.helmHistory(cfg)
		if err != nil {
			return nil, err
		}
		if !changedBy(revs, executionLabel(s.exec)) {
			continue
		}
		if suffix != "canary" {
			if err := s.swapBackIfSwapped(); err != nil {
				return nil, err
			}
		}
		side, err := s.rollbackRelease(sp)
		if err != nil {
			return nil, err
		}
		sides = append(sides, side)
		out["rolledBack"] = true
	}
	s.side = nil
	out["sideReleases"] = nonNil(sides)
	return out, nil
}

// swapBackIfSwapped swaps the blue-green Services back when this execution swapped them. A
// colour release whose deployment failed before its Services were applied has none to swap.
func (s *stepRun) swapBackIfSwapped() error {
	if _, _, err := s.liveColors(); err != nil {
		s.logf("no blue-green Services to swap back: %s", contract.Classify(err).Message)
		return nil
	}
	rollback := s.in.Rollback
	s.in.Rollback = true
	defer func() { s.in.Rollback = rollback }()
	_, err := s.swapServices()
	return err
}
