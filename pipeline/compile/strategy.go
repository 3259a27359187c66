package compile

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/plan"
)

// strategy compiles a looping strategy (spec 6.1). A strategy left as an unresolved runtime
// input means no loop.
func (c *compiler) strategy(n *yaml.Node) *plan.Strategy {
	if n == nil || (n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value)) {
		return nil
	}
	var s pipeline.Strategy
	d := &pipeline.Decoder{File: c.file, Origins: c.src.Origins, Diags: &c.diags}
	d.Decode(n, &s, "strategy")
	out := &plan.Strategy{MaxConcurrency: s.MaxConcurrency, When: s.When, OnFailure: s.OnFailure, Parallelism: s.Parallelism}
	switch {
	case s.Matrix != nil && s.Matrix.Kind == yaml.MappingNode:
		var dynamic []plan.Axis
		for i := 0; i+1 < len(s.Matrix.Content); i += 2 {
			k, v := s.Matrix.Content[i].Value, s.Matrix.Content[i+1]
			switch k {
			case "exclude":
				out.Exclude = pipeline.Value(v)
			case "maxConcurrency":
				out.MaxConcurrency = v.Value
			case "nodeName":
				out.NodeName = v.Value
			default:
				axis := plan.Axis{Key: k, Values: pipeline.Value(v)}
				if v.Kind == yaml.ScalarNode && expressionish(v.Value) {
					dynamic = append(dynamic, axis)
				} else {
					out.Axes = append(out.Axes, axis)
				}
			}
		}
		out.Axes = append(out.Axes, dynamic...)
	case s.Repeat != nil:
		r := s.Repeat
		out.Times, out.Items = r.Times, pipeline.Value(r.Items)
		out.Start, out.End, out.Unit, out.PartitionSize = r.Start, r.End, r.Unit, r.PartitionSize
		if r.MaxConcurrency != "" {
			out.MaxConcurrency = r.MaxConcurrency
		}
		if r.NodeName != "" {
			out.NodeName = r.NodeName
		}
	}
	return out
}

func expressionish(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '<' && s[i+1] == '+' {
			return true
		}
	}
	return false
}
