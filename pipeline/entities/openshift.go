package entities

import (
	"strings"

	"github.com/gantry-cd/gantry/manifests"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// openshiftTemplate resolves an OpenshiftTemplate manifest: its template file as the files,
// its paramsPaths (files of the same store) as the values, which is where the K8s steps look
// for them.
func (r *resolver) openshiftTemplate(file, what string, m *pipeline.Manifest, pm *plan.Manifest) {
	spec := *m.Spec
	spec.ValuesPaths = m.Spec.ParamsPaths
	r.filesManifest(file, what, &spec, pm)
	if m.Spec.Store.Type == "Local" && len(pm.Files) != 1 {
		r.diags.Errorf(r.at(file, m.Spec.Store.Spec.Node), "manifest", "%s: an OpenshiftTemplate manifest is one template file, found %d", what, len(pm.Files)).
			SetHint("name the template file in `paths`, and its param files in `paramsPaths`")
	}
}

// checkOpenshift processes a service's Local OpenshiftTemplate with its param files and the
// service's OpenshiftParam files, when all are read and hold no expressions, so a broken
// template is an error before a run.
func (r *resolver) checkOpenshift(file, service string, spec *pipeline.ServiceSpec, resolved []plan.Manifest) {
	var tmpl *plan.Manifest
	var shared []plan.File
	for i := range resolved {
		pm := &resolved[i]
		if pm.Store != nil || pm.S3 != nil {
			if pm.Type == "OpenshiftTemplate" || pm.Type == "OpenshiftParam" {
				return // fetched when the stage starts
			}
			continue
		}
		switch pm.Type {
		case "OpenshiftTemplate":
			tmpl = pm
		case "OpenshiftParam":
			shared = append(shared, pm.Files...)
		}
	}
	if tmpl == nil || len(tmpl.Files) != 1 {
		return
	}
	all := append(append(append([]plan.File{}, tmpl.Files...), tmpl.Values...), shared...)
	var params []manifests.File
	for _, f := range all {
		if strings.Contains(f.Text, "<+") {
			return // rendered when the stage runs
		}
		params = append(params, manifests.File{Path: f.Path, Text: f.Text})
	}
	if _, err := manifests.OpenshiftTemplate(params[0], params[1:]); err != nil {
		for _, me := range spec.Manifests {
			if m := me.Manifest; m != nil && m.Identifier == tmpl.ID {
				r.diags.Errorf(r.at(file, pipeline.ValueAt(m.Node, "type")), "manifest-openshift", "service %s, manifest %s: %v", service, m.Identifier, err).
					SetHint("`oc process --local -f TEMPLATE --param-file FILE` must succeed (required parameters may come from the service's OpenshiftParam manifests)")
			}
		}
	}
}

// paramsWithoutTemplate warns of OpenshiftParam manifests in a service with no
// OpenshiftTemplate for them to fill in.
func (r *resolver) paramsWithoutTemplate(file, service string, spec *pipeline.ServiceSpec) {
	var params []*pipeline.Manifest
	for _, me := range spec.Manifests {
		switch m := me.Manifest; {
		case m == nil:
		case m.Type == "OpenshiftTemplate":
			return
		case m.Type == "OpenshiftParam":
			params = append(params, m)
		}
	}
	for _, m := range params {
		r.diags.Warnf(r.at(file, pipeline.ValueAt(m.Node, "type")), "manifest-ignored",
			"service %s, manifest %s: OpenshiftParam files give an OpenshiftTemplate's parameters, and the service has none; they are not used", service, m.Identifier).
			SetHint("add a manifest of `type: OpenshiftTemplate`")
	}
}
