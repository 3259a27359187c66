package entities

import (
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/plan"
)

// gitStoreTypes are the store types fetched from a Git repository through a Git connector.
var gitStoreTypes = map[string]bool{"Git": true, "Github": true, "GitLab": true, "Gitlab": true, "Bitbucket": true}

// StepRefs resolves the Git connectors named by the stores of steps whose catalog entry has
// Stores (the Terraform steps' configuration, var and backend files), keyed by the step's
// path as PodKey writes it.
func (c *Catalog) StepRefs(src pipeline.Source, p *pipeline.Pipeline) (map[string]*plan.StepRefs, diag.List) {
	r := &resolver{c: c, file: src.File, src: src}
	out := map[string]*plan.StepRefs{}
	for _, s := range p.AllStages() {
		if s.Execution() == nil {
			continue
		}
		visit := func(v pipeline.StepVisit) {
			st := v.Step
			if st == nil || st.Spec == nil {
				return
			}
			e, _ := steps.Lookup(st.Type)
			if !e.Stores && !e.SSHTarget && !e.Monitored && e.Ticketing == "" {
				return
			}
			refs := &plan.StepRefs{}
			if e.Stores {
				r.stores(st.Spec, "a "+st.Type+" step's store", refs)
			}
			if e.SSHTarget {
				r.sshTarget(st.Spec, refs)
			}
			if e.Monitored {
				if ref := monitoredRef(st.Spec); ref != "" && !strings.Contains(ref, "<+") {
					r.configuredMonitored(st.Spec, ref, refs)
				}
				if t := pipeline.Field(pipeline.Field(st.Spec, "monitoredService"), "type"); t != nil && t.Value == "Template" {
					r.templateMonitored(st.Spec, refs)
				}
			}
			if e.Ticketing != "" {
				r.ticketConnector(st.Spec, e.Ticketing, refs)
			}
			if len(refs.Git) > 0 || len(refs.SSH) > 0 || refs.Monitored != nil || refs.Ticket != nil {
				out[PodKey(s.Identifier, v.Groups, st.Identifier)] = refs
			}
		}
		ex := s.Execution()
		pipeline.WalkSteps(ex.Steps, false, nil, nil, visit)
		pipeline.WalkSteps(ex.RollbackSteps, true, nil, nil, visit)
	}
	return out, r.diags
}

// stores finds every `store:` below n whose type is a Git store and resolves its connector.
func (r *resolver) stores(n *yaml.Node, needs string, refs *plan.StepRefs) {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, e := range n.Content {
			r.stores(e, needs, refs)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "store" && v.Kind == yaml.MappingNode {
				typ, spec := pipeline.Field(v, "type"), pipeline.Field(v, "spec")
				ref := pipeline.Field(spec, "connectorRef")
				if typ != nil && gitStoreTypes[typ.Value] && ref != nil && strings.Contains(ref.Value, "<+") {
					r.diags.Unsupportedf(r.at(r.file, ref), "unsupported-expression",
						"the connector of %s is an expression; Gantry resolves connectors before the run", needs).
						SetHint("name the connector")
				}
				if typ != nil && gitStoreTypes[typ.Value] && ref != nil && ref.Value != "" && !strings.Contains(ref.Value, "<+") {
					if _, done := refs.Git[ref.Value]; !done {
						if gc, ok := r.gitConnector(r.file, spec, ref.Value, needs); ok {
							if refs.Git == nil {
								refs.Git = map[string]plan.GitConnector{}
							}
							refs.Git[ref.Value] = gc
						}
					}
				}
				continue
			}
			r.stores(v, needs, refs)
		}
	}
}

// sshTarget resolves the SSH credential of a step that runs on a target host
// (onDelegate: false, executionTarget.connectorRef).
func (r *resolver) sshTarget(spec *yaml.Node, refs *plan.StepRefs) {
	if od := pipeline.Field(spec, "onDelegate"); od == nil || od.Value != "false" {
		return
	}
	et := pipeline.Field(spec, "executionTarget")
	ref := pipeline.Field(et, "connectorRef")
	if ref == nil || ref.Value == "" || strings.Contains(ref.Value, "<+") {
		return // required by validation; an expression is resolved by nobody before the run
	}
	if cr, ok := r.sshCredential(r.file, et, ref.Value, "the target host's SSH credential"); ok {
		refs.SSH = map[string]plan.SSHCredential{ref.Value: cr}
	}
}
