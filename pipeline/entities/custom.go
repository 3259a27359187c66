package entities

import (
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/templates"
	"github.com/gantry-cd/gantry/plan"
)

// deploymentTemplate finds the CustomDeployment template a customDeploymentRef names and
// decodes its spec; nil, reported, when it is missing or of another type.
func (r *resolver) deploymentTemplate(file string, ref *pipeline.DeploymentTemplateRef, needs string) (*templates.Doc, *pipeline.CustomDeploymentSpec) {
	if ref == nil {
		return nil, nil
	}
	pos := r.at(file, pipeline.ValueAt(ref.Node, "templateRef"))
	doc, e := r.c.Templates.Lookup(ref.TemplateRef, ref.VersionLabel)
	if e != nil {
		r.diags.Errorf(pos, map[bool]string{true: "missing-entity", false: e.Code}[e.Code == templates.MissingTemplate], "%s: %s", needs, e.Message).SetHint("%s", e.Hint)
		return nil, nil
	}
	r.checkTemplate(doc)
	if doc.T.Type != "CustomDeployment" {
		r.diags.Errorf(pos, "template-type", "%s: template %s is a %s template, not a CustomDeployment one", needs, doc.Key(), doc.T.Type)
		return nil, nil
	}
	var spec pipeline.CustomDeploymentSpec
	(&pipeline.Decoder{File: doc.File, Diags: &diag.List{}}).Decode(doc.T.Spec, &spec, "CustomDeployment template spec") // checked with the template
	if spec.Infrastructure == nil || spec.Infrastructure.FetchInstancesScript == nil || spec.Infrastructure.FetchInstancesScript.Store == nil ||
		spec.Infrastructure.FetchInstancesScript.Store.Spec == nil {
		r.diags.Errorf(pos, "template-type", "%s: template %s has no fetch-instances script", needs, doc.Key())
		return nil, nil
	}
	return doc, &spec
}

// checkTemplate checks a template file where it is used, as an entity file is when loaded.
func (r *resolver) checkTemplate(doc *templates.Doc) {
	if r.c.checked[doc.File] || r.c.check == nil {
		return
	}
	r.c.checked[doc.File] = true
	r.c.Sources[doc.File] = doc.Src
	if f, d := pipeline.Parse(doc.File, doc.Src); len(d.Invalid()) == 0 && f.Root != nil {
		r.diags.Add(r.c.check(f)...)
	}
}

// customInfra resolves a CustomDeployment infrastructure: its template's script, list path and
// attributes, and the template's variables with the infrastructure's values over them.
func (r *resolver) customInfra(file string, in *pipeline.Infrastructure) *plan.CustomInfra {
	doc, spec := r.deploymentTemplate(file, in.Spec.CustomDeploymentRef, "infrastructure "+in.Identifier)
	if spec == nil {
		return nil
	}
	inf := spec.Infrastructure
	out := &plan.CustomInfra{Template: doc.Key(), Script: inf.FetchInstancesScript.Store.Spec.Content, ListPath: inf.InstancesListPath}
	for _, a := range inf.InstanceAttributes {
		out.Attributes = append(out.Attributes, plan.InstanceAttribute{Name: a.Name, JSONPath: a.JSONPath})
	}
	own := map[string]pipeline.Variable{}
	for _, v := range in.Spec.Variables {
		own[v.Name] = v
	}
	for _, v := range inf.Variables {
		if o, ok := own[v.Name]; ok {
			v.Value = o.Value
			delete(own, v.Name)
		}
		out.Variables = append(out.Variables, plan.Variable{Name: v.Name, Type: v.Type, Value: v.Value})
	}
	for _, v := range in.Spec.Variables {
		if _, extra := own[v.Name]; extra {
			r.diags.Errorf(r.at(file, pipeline.ValueAt(v.Node, "name")), "unknown-reference",
				"infrastructure %s sets variable %s, which template %s does not declare", in.Identifier, v.Name, doc.Key()).
				SetHint("declare it in the template's infrastructure variables, or remove it")
		}
	}
	return out
}

// sameTemplate reports a CustomDeployment service whose deployment template is not its
// infrastructure's.
func (r *resolver) sameTemplate(s *pipeline.Stage, svc *pipeline.File, d *plan.Deployment) {
	if svc == nil || d.Infra == nil || d.Infra.Custom == nil || svc.Service.ServiceDefinition == nil || svc.Service.ServiceDefinition.Spec == nil {
		return
	}
	ref := svc.Service.ServiceDefinition.Spec.CustomDeploymentRef
	if ref == nil {
		return
	}
	doc, _ := r.deploymentTemplate(svc.Name, ref, "service "+svc.Service.Identifier)
	if doc != nil && doc.Key() != d.Infra.Custom.Template {
		r.diags.Errorf(r.at(r.file, pipeline.ValueAt(s.Spec, "service")), "deployment-type",
			"stage %s: service %s deploys with template %s, infrastructure %s with %s", s.Identifier, svc.Service.Identifier, doc.Key(), d.Infra.ID, d.Infra.Custom.Template).
			SetHint("use the same deployment template (and version) for both")
	}
}
