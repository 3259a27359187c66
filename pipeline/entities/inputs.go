package entities

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// withInputs is an entity file with the runtime inputs of its root object (service,
// environment, infrastructureDefinition) filled from a stage's inputs for it (serviceInputs,
// environmentInputs, an infrastructure's inputs). Runtime inputs left open are reported at the
// entity: a run needs them.
func (r *resolver) withInputs(f *pipeline.File, root string, in *yaml.Node, where string) *pipeline.File {
	what := map[string]string{"service": "service", "environment": "environment", "infrastructureDefinition": "infrastructure definition"}[root]
	if !hasInputs(pipeline.Field(f.Root, root)) && (in == nil || in.Kind != yaml.MappingNode) {
		return f
	}
	copied := pipeline.CopyNode(f.Root)
	obj := pipeline.Field(copied, root)
	if in != nil && in.Kind == yaml.MappingNode {
		r.diags.Add(templates.Fill(r.src, what, obj, in, where)...)
	}
	applyDefaults(obj)
	open := openInputs(obj, root)
	for _, o := range open {
		r.diags.Errorf(r.at(f.Name, o.node), "missing-input", "%s %s has no value for its runtime input %s", what,
			scalarOf(pipeline.Field(obj, "identifier")), o.path).
			SetHint("give it in the stage's %s, or a .default() in the file", where)
	}
	if len(open) > 0 {
		return nil
	}
	nf := &pipeline.File{Name: f.Name, Src: f.Src, Root: copied}
	if d := nf.Decode(); d.HasErrors() {
		r.diags.Add(d...)
		return nil
	}
	return nf
}

type openInput struct {
	path string
	node *yaml.Node
}

// openInputs are the runtime inputs under n without a default, by path.
func openInputs(n *yaml.Node, path string) []openInput {
	var out []openInput
	switch n.Kind {
	case yaml.ScalarNode:
		if pipeline.IsRuntimeInput(n.Value) {
			out = append(out, openInput{path, n})
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, openInputs(n.Content[i+1], path+"."+n.Content[i].Value)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			key := fmt.Sprint(i)
			if id := pipeline.Field(c, "identifier"); id != nil {
				key = id.Value
			} else if name := pipeline.Field(c, "name"); name != nil {
				key = name.Value
			}
			out = append(out, openInputs(c, path+"."+key)...)
		}
	}
	return out
}

func hasInputs(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		return pipeline.IsRuntimeInput(n.Value)
	}
	for _, c := range n.Content {
		if hasInputs(c) {
			return true
		}
	}
	return false
}

// applyDefaults replaces the runtime inputs still open under n by their defaults, once the
// stage gave what it gives.
func applyDefaults(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && pipeline.IsRuntimeInput(n.Value) {
		if in, err := inputs.Parse(n.Value); err == nil && in.Default != nil {
			n.Value, n.Tag, n.Style = *in.Default, "!!str", 0
		}
		return
	}
	for _, c := range n.Content {
		applyDefaults(c)
	}
}

func scalarOf(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
