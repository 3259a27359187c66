package pipeline

import "gopkg.in/yaml.v3"

// ChainSpec is the spec of a `type: Pipeline` stage: another pipeline, found by identifier
// (and org and project), run as a child execution. Inputs (or pipelineInputs) are the child's
// runtime inputs, shaped as an input set's pipeline; Outputs are read in the child's context
// when it ends and become the stage's outputs.
type ChainSpec struct {
	Node               *yaml.Node    `yaml:"-"`
	Org                string        `yaml:"org" gantry:"required"`
	Project            string        `yaml:"project" gantry:"required"`
	Pipeline           string        `yaml:"pipeline" gantry:"required"`
	Inputs             *yaml.Node    `yaml:"inputs"`
	PipelineInputs     *yaml.Node    `yaml:"pipelineInputs"`
	InputSetReferences []string      `yaml:"inputSetReferences"`
	Outputs            []ChainOutput `yaml:"outputs"`
	Description        string        `yaml:"description"`
}

func decodeChainSpec(d *Decoder, s *Stage) {
	s.Chain = &ChainSpec{}
	d.Decode(s.Spec, s.Chain, "Pipeline stage spec")
}

// ChainOutput is one output of a chained pipeline: Value is an expression of the child.
type ChainOutput struct {
	Node        *yaml.Node `yaml:"-"`
	Name        string     `yaml:"name" gantry:"required"`
	Value       string     `yaml:"value" gantry:"required"`
	Description string     `yaml:"description"`
}

// InputTree is the child's runtime inputs: inputs, or pipelineInputs when inputs is absent.
func (c *ChainSpec) InputTree() *yaml.Node {
	if c.Inputs != nil {
		return c.Inputs
	}
	return c.PipelineInputs
}

// ChainStages returns the pipeline's `type: Pipeline` stages in YAML order.
func (p *Pipeline) ChainStages() []*Stage {
	var out []*Stage
	for _, s := range p.AllStages() {
		if s.Chain != nil {
			out = append(out, s)
		}
	}
	return out
}
