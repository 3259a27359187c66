package entities

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// The legacy (v1) Deployment stage carries its service and infrastructure inline:
// `serviceConfig` (a service reference or a whole `serviceDefinition`) and `infrastructure`
// (an environment, by reference or inline, and an `infrastructureDefinition`). They are
// self-contained, so a Kubernetes one runs like the current form.

type legacyServiceConfig struct {
	Node              *yaml.Node                  `yaml:"-"`
	Description       string                      `yaml:"description"`
	ServiceRef        string                      `yaml:"serviceRef"`
	Service           *legacyEntity               `yaml:"service"`
	ServiceDefinition *pipeline.ServiceDefinition `yaml:"serviceDefinition"`
	StageOverrides    *yaml.Node                  `yaml:"stageOverrides"`
	UseFromStage      *yaml.Node                  `yaml:"useFromStage"`
}

// legacyEntity is an inline service or environment: who it is, not what it deploys.
type legacyEntity struct {
	Node        *yaml.Node        `yaml:"-"`
	Identifier  string            `yaml:"identifier"`
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Tags        map[string]string `yaml:"tags"`
	Type        string            `yaml:"type"`
}

type legacyInfrastructure struct {
	Node                         *yaml.Node      `yaml:"-"`
	Description                  string          `yaml:"description"`
	EnvironmentRef               string          `yaml:"environmentRef"`
	Environment                  *legacyEntity   `yaml:"environment"`
	InfrastructureDefinition     *legacyInfraDef `yaml:"infrastructureDefinition"`
	InfrastructureKey            string          `yaml:"infrastructureKey"`
	AllowSimultaneousDeployments string          `yaml:"allowSimultaneousDeployments"`
	UseFromStage                 *yaml.Node      `yaml:"useFromStage"`
}

type legacyInfraDef struct {
	Node        *yaml.Node                   `yaml:"-"`
	Description string                       `yaml:"description"`
	Type        string                       `yaml:"type" gantry:"required"`
	Spec        *pipeline.InfrastructureSpec `yaml:"spec" gantry:"required"`
	Provisioner *yaml.Node                   `yaml:"provisioner"`
}

// legacy resolves a v1 Deployment stage.
func (r *resolver) legacy(s *pipeline.Stage, d *plan.Deployment) {
	spec := s.Deployment
	dec := &pipeline.Decoder{File: r.file, Origins: r.src.Origins, Diags: &r.diags}
	if spec.ServiceConfig != nil {
		var sc legacyServiceConfig
		dec.Decode(spec.ServiceConfig, &sc, "serviceConfig")
		d.Service = r.legacyService(s, sc)
	}
	if spec.Infrastructure != nil {
		var li legacyInfrastructure
		dec.Decode(spec.Infrastructure, &li, "infrastructure")
		d.Environment, d.Infra = r.legacyInfrastructure(s, li)
	}
	r.finish(s, d)
}

func (r *resolver) legacyService(s *pipeline.Stage, sc legacyServiceConfig) *plan.Service {
	for key, n := range map[string]*yaml.Node{"useFromStage": sc.UseFromStage, "stageOverrides": sc.StageOverrides} {
		if n != nil {
			r.diags.Unsupportedf(r.at(r.file, pipeline.Key(sc.Node, key)), "unsupported-field",
				"stage %s: serviceConfig.%s (legacy form) is not supported yet", s.Identifier, key).
				SetHint("reference the service with `service: {serviceRef: ...}` or `useFromStage` in the current form")
			return nil
		}
	}
	def := sc.ServiceDefinition
	if def == nil {
		if sc.ServiceRef == "" {
			return nil // validate reports the missing service
		}
		return r.service(pipeline.DeploymentStageService{Node: sc.Node, ServiceRef: sc.ServiceRef})
	}
	if def.Type != "Kubernetes" {
		r.diags.Unsupportedf(r.at(r.file, pipeline.ValueAt(def.Node, "type")), "unsupported-deployment-type",
			"stage %s: service definition type %s is valid in the reference, but Gantry deploys only Kubernetes services yet", s.Identifier, def.Type)
		return nil
	}
	svc := &pipeline.Service{Entity: pipeline.Entity{Identity: pipeline.Identity{Identifier: pipeline.LocalRef(sc.ServiceRef)}}, ServiceDefinition: def}
	if sc.Service != nil {
		svc.Identifier, svc.Name, svc.Description, svc.Tags = sc.Service.Identifier, sc.Service.Name, sc.Service.Description, sc.Service.Tags
	}
	if svc.Identifier == "" {
		svc.Identifier = s.Identifier + "_service"
	}
	if svc.Name == "" {
		svc.Name = svc.Identifier
	}
	return r.buildService(&pipeline.File{Name: r.file, Service: svc})
}

func (r *resolver) legacyInfrastructure(s *pipeline.Stage, li legacyInfrastructure) (*plan.Environment, *plan.Infrastructure) {
	if li.UseFromStage != nil {
		r.diags.Unsupportedf(r.at(r.file, pipeline.Key(li.Node, "useFromStage")), "unsupported-field",
			"stage %s: infrastructure.useFromStage (legacy form) is not supported yet", s.Identifier).
			SetHint("use `environment: {useFromStage: {stage: ...}}` in the current form")
		return nil, nil
	}
	var env *plan.Environment
	switch {
	case li.Environment != nil:
		e := li.Environment
		env = &plan.Environment{ID: e.Identifier, Name: e.Name, Description: e.Description, Tags: e.Tags, Type: e.Type}
	case li.EnvironmentRef != "":
		if _, env = r.environmentByRef(li.Node, li.EnvironmentRef); env == nil {
			return nil, nil
		}
	default:
		return nil, nil // validate reports the missing environment
	}
	def := li.InfrastructureDefinition
	if def == nil {
		return env, nil
	}
	if def.Type != "KubernetesDirect" {
		r.diags.Unsupportedf(r.at(r.file, pipeline.ValueAt(def.Node, "type")), "unsupported-infrastructure-type",
			"stage %s: infrastructure type %s is valid in the reference, but Gantry deploys only to KubernetesDirect yet", s.Identifier, def.Type)
		return env, nil
	}
	if def.Provisioner != nil {
		r.diags.Warnf(r.at(r.file, pipeline.Key(def.Node, "provisioner")), "not-implemented", "provisioner steps are not run; the infrastructure must exist")
	}
	id := li.InfrastructureKey
	if id == "" {
		id = s.Identifier + "_infrastructure"
	}
	return env, r.infrastructure(r.file, &pipeline.Infrastructure{
		Entity: pipeline.Entity{Identity: pipeline.Identity{Identifier: id, Name: id}}, EnvironmentRef: env.ID,
		Typed:                        pipeline.Typed[pipeline.InfrastructureSpec]{Type: def.Type, Spec: def.Spec},
		AllowSimultaneousDeployments: li.AllowSimultaneousDeployments,
	})
}
