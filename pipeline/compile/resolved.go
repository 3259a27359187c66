package compile

import (
	"cmp"
	"strings"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/steps"
	"github.com/gantry-cd/gantry/pipeline/templates"
	"github.com/gantry-cd/gantry/plan"
)

// Resolved is what the front end resolved before compiling: the entities of the Deployment
// stages and the pods of the containerized step groups (pipeline/entities), and the template
// links it expanded (pipeline/templates). Compile places each on its node.
type Resolved struct {
	Deploys   map[string]*plan.Deployment // by stage identifier
	Multis    map[string]*entities.Multi  // multi-service and multi-environment stages
	Pods      map[string]*plan.Pod        // by entities.PodKey
	Refs      map[string]*plan.StepRefs   // steps with stores, by entities.PodKey
	Templates []templates.Use
	// Chains are the pipelines `type: Pipeline` stages run, by stage identifier.
	Chains map[string]*plan.Chain
	// Origins are the pipeline's nodes copied from templates, positioned in their files.
	Origins *pipeline.Origins
	// Secrets are the routes of the secrets kept in secret manager connectors.
	Secrets map[string]plan.SecretRoute
}

// place gives the compiled nodes what was resolved for them.
func (r Resolved) place(p *plan.Plan) {
	deployments(p, r.Deploys, r.Multis)
	pods(p, r.Pods)
	stepRefs(p, r.Refs)
	templateRefs(p, r.Templates)
	if len(r.Secrets) > 0 {
		p.Secrets = r.Secrets
	}
}

// stepRefs gives each step with stores its resolved connectors and its provisioners' scope.
func stepRefs(p *plan.Plan, refs map[string]*plan.StepRefs) {
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if n.Kind != plan.KindStep {
			return
		}
		e, _ := steps.Lookup(n.Type)
		if !e.Stores && !e.SSHTarget && !e.Monitored && e.Ticketing == "" {
			return
		}
		if !e.Stores && refs[strings.Join(path, "/")] == nil {
			return // a ShellScript on the worker, a Verify step of the stage's own service
		}
		r := &plan.StepRefs{}
		if found, ok := refs[strings.Join(path, "/")]; ok {
			c := *found
			r = &c
		}
		r.Project = projectOf(p)
		if r.Monitored != nil {
			r.Monitored.Project = r.Project
		}
		n.Refs = r
	})
}

// deployments gives each Deployment stage node its resolved deployment, and each
// multi-deployment stage its implicit loop and the deployment of every iteration.
func deployments(p *plan.Plan, deploys map[string]*plan.Deployment, multis map[string]*entities.Multi) {
	plan.Walk(p.Stages, nil, func(n *plan.Node, _ []string) {
		if n.Kind == plan.KindStage {
			if d, ok := deploys[n.ID]; ok {
				n.Deploy = d
				scopeHosts(p, d)
			}
			if m, ok := multis[n.ID]; ok {
				n.Strategy, n.Deploys = m.Strategy, m.Deploys
				for _, d := range m.Deploys {
					scopeHosts(p, d)
				}
			}
		}
	})
}

// scopeHosts gives a deployment, its Ssh hosts and its monitored service their project.
func scopeHosts(p *plan.Plan, d *plan.Deployment) {
	if d != nil {
		d.Project = projectOf(p)
	}
	if d != nil && d.Infra != nil && d.Infra.Ssh != nil {
		d.Infra.Ssh.Project = projectOf(p)
	}
	if d != nil && d.Monitored != nil {
		d.Monitored.Project = projectOf(p)
	}
}

// projectOf is the plan's org/project.
func projectOf(p *plan.Plan) string {
	return cmp.Or(p.Org, "default") + "/" + cmp.Or(p.Project, "default")
}

// pods gives each CI stage, containerized step group and Container step its pod.
func pods(p *plan.Plan, pods map[string]*plan.Pod) {
	if len(pods) == 0 {
		return
	}
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if n.Kind == plan.KindGroup || n.Kind == plan.KindStage || (n.Traits != nil && n.Traits.OwnPod) {
			if pod, ok := pods[strings.Join(path, "/")]; ok {
				n.Pod = pod
			}
		}
	})
}

// templateRefs records on each expanded node the template and version it came from.
func templateRefs(p *plan.Plan, uses []templates.Use) {
	byPath := map[string]templates.Use{}
	for _, u := range uses {
		if u.Kind == "Pipeline" {
			p.Template = &plan.TemplateRef{Ref: u.Ref, Version: u.Version}
			continue
		}
		byPath[strings.Join(u.IDs(), "/")] = u
	}
	plan.Walk(p.Stages, nil, func(n *plan.Node, path []string) {
		if u, ok := byPath[strings.Join(path, "/")]; ok && n.ID != "" && n.Postfix == "" {
			n.Template = &plan.TemplateRef{Ref: u.Ref, Version: u.Version}
		}
	})
}
