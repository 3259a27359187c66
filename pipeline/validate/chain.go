package validate

import (
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"

	"gopkg.in/yaml.v3"
)

// chainStage checks a `type: Pipeline` stage's spec: the pipeline it runs, its inputs (a
// mapping shaped as an input set's pipeline, or a runtime input) and its outputs (unique
// identifiers, each with an expression of the child). Finding the pipeline is the loader's.
func (c *checker) chainStage(s *pipeline.Stage) {
	spec := s.Chain
	if spec.Pipeline != "" && !dynamic(spec.Pipeline) {
		c.identifier(spec.Node, "pipeline", spec.Pipeline, "chained pipeline")
	} else if dynamic(spec.Pipeline) {
		c.diags.Unsupportedf(c.pos(pipeline.ValueAt(spec.Node, "pipeline")), "unsupported-chain",
			"stage %s names its pipeline with an expression; Gantry finds chained pipelines before the run, so it needs the identifier", s.Identifier).
			SetHint("write the child pipeline's identifier")
	}
	if spec.Inputs != nil && spec.PipelineInputs != nil {
		c.diags.Errorf(c.pos(pipeline.Key(spec.Node, "pipelineInputs")), "stage-spec",
			"stage %s has both inputs and pipelineInputs", s.Identifier).SetHint("keep one of them: both are the child pipeline's runtime inputs")
	}
	if in := spec.InputTree(); in != nil {
		if in.Kind == yaml.ScalarNode && !inputs.IsRuntimeInput(in.Value) || in.Kind == yaml.SequenceNode {
			c.diags.Errorf(c.pos(in), "wrong-type", "the inputs of stage %s must be a mapping: the child pipeline's runtime inputs", s.Identifier).
				SetHint("write them as an input set's pipeline: `inputs: {identifier: child, variables: [{name: v, type: String, value: x}]}`")
		}
	}
	seen := map[string]*yaml.Node{}
	for i := range spec.Outputs {
		o := &spec.Outputs[i]
		c.identifier(o.Node, "name", o.Name, "chained pipeline output")
		if prev, ok := seen[o.Name]; ok {
			c.diags.Errorf(c.pos(pipeline.ValueAt(o.Node, "name")), "duplicate-identifier",
				"output %q of stage %s is already defined at line %d", o.Name, s.Identifier, prev.Line)
		} else if o.Name != "" {
			seen[o.Name] = o.Node
		}
	}
}
