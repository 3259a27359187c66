package pipeline

import "gopkg.in/yaml.v3"

// DeploymentStageSpec is a Deployment stage's spec: the service it deploys, the environment
// and infrastructure it deploys to (one of each, or several for a fan-out, spec 21), and the
// steps that do it.
type DeploymentStageSpec struct {
	StageSteps       `yaml:",inline"`
	DeploymentType   string     `yaml:"deploymentType"`
	Service          *yaml.Node `yaml:"service"`
	Services         *yaml.Node `yaml:"services"`
	Environment      *yaml.Node `yaml:"environment"`
	Environments     *yaml.Node `yaml:"environments"`
	EnvironmentGroup *yaml.Node `yaml:"environmentGroup"`
	// MultiDeploymentConfig tunes the fan-out of services × environments (spec 21.2).
	MultiDeploymentConfig *yaml.Node `yaml:"multiDeploymentConfig"`
	// ServiceConfig and Infrastructure are the legacy (v1) forms of service and environment.
	ServiceConfig  *yaml.Node `yaml:"serviceConfig"`
	Infrastructure *yaml.Node `yaml:"infrastructure"`
}

func decodeDeploymentSpec(d *Decoder, s *Stage) {
	s.Deployment = &DeploymentStageSpec{}
	decodeStageSpec(d, s, s.Deployment)
	provisionerGroup(d, s.Deployment)
}

// ProvisionerID is the identifier of the step group a Deployment stage's environment
// provisioner becomes: its steps run before the infrastructure is rendered (issue 55).
const ProvisionerID = "provisioner"

// provisionerGroup makes a Deployment stage's `environment.provisioner` (steps and rollback
// steps) the first step group of its execution, marked Provisioner, so that validation,
// connector resolution and compilation treat its steps as any others.
func provisionerGroup(d *Decoder, spec *DeploymentStageSpec) {
	n := Field(spec.Environment, "provisioner")
	if n == nil || n.Kind != yaml.MappingNode || spec.Execution == nil {
		return
	}
	var ex Execution
	d.Decode(n, &ex, "environment provisioner")
	// The group's own YAML: the provisioner's keys with its name and identifier, positioned
	// at the provisioner, under a `stepGroup` key as a steps entry has it.
	at := func(v string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: n.Line, Column: n.Column}
	}
	group := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column,
		Content: append([]*yaml.Node{at("name"), at(ProvisionerID), at("identifier"), at(ProvisionerID)}, n.Content...)}
	entry := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column, Content: []*yaml.Node{at("stepGroup"), group}}
	g := &StepGroup{Node: group, Identity: Identity{Name: ProvisionerID, Identifier: ProvisionerID}, Steps: ex.Steps,
		RollbackSteps: ex.RollbackSteps, Provisioner: true}
	spec.Execution.Steps = append([]StepElement{{Node: entry, StepGroup: g}}, spec.Execution.Steps...)
}
