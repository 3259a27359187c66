package inputs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Source is one layer of input values, keyed by FQN (spec 9.3): an input set, the run's own
// input YAML, or --set flags.
type Source struct {
	Name       string
	File       string
	Values     map[string]*yaml.Node
	Identities map[string]map[string]string // FQN of a node -> identity keys (type)
}

// wholeSubtrees are accepted as a whole from inputs (spec 12.3): they carry nested runtime inputs.
var wholeSubtrees = map[string]bool{
	"service": true, "environment": true, "environmentGroup": true, "services": true,
	"environments": true, "template": true, "when": true, "strategy": true, "failureStrategies": true,
	"build": true, // a codebase's or GitClone step's build: {type, spec} as one value
}

// leaf is one addressable value of a pipeline-shaped tree.
type leaf struct {
	fqn      string
	node     *yaml.Node
	variable *yaml.Node // the variable mapping when the leaf is a variable's value
}

// flatten visits the leaves of a pipeline-shaped mapping by FQN. List elements are keyed by
// identifier (variables by name) and the stage/step/stepGroup/parallel wrappers disappear.
func flatten(n *yaml.Node, prefix string, ids map[string]map[string]string, visit func(leaf)) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		fqn := prefix + "." + key
		switch {
		case key == "identifier" || key == "type" || key == "name":
			continue // identity keys address values; they are not values
		case key == "template" && pipeline.Field(val, "templateInputs") != nil:
			// The reference's form for an input of a template link addresses it through the
			// use site; the link is expanded in place, so its inputs are the node's own fields
			// (spec 19.5.3).
			flatten(pipeline.Field(val, "templateInputs"), prefix, ids, visit)
		case val.Kind == yaml.SequenceNode && namedList(val):
			for _, v := range val.Content {
				name := pipeline.Field(v, "name")
				if name == nil {
					continue
				}
				vf := fqn + "." + name.Value
				if t := pipeline.Field(v, "type"); t != nil && ids != nil {
					ids[vf] = map[string]string{"type": t.Value}
				}
				if value := pipeline.Field(v, "value"); value != nil {
					visit(leaf{fqn: vf, node: value, variable: v})
				}
			}
		case wholeSubtrees[key]:
			visit(leaf{fqn: fqn, node: val})
		case val.Kind == yaml.SequenceNode && keyedList(val):
			flattenList(val, fqn, ids, visit)
		case val.Kind == yaml.MappingNode:
			flatten(val, fqn, ids, visit)
		default:
			visit(leaf{fqn: fqn, node: val})
		}
	}
}

func flattenList(list *yaml.Node, fqn string, ids map[string]map[string]string, visit func(leaf)) {
	for _, el := range list.Content {
		node := el
		for _, wrapper := range []string{"stage", "step", "stepGroup"} {
			if w := pipeline.Field(el, wrapper); w != nil {
				node = w
			}
		}
		if par := pipeline.Field(el, "parallel"); par != nil {
			flattenList(par, fqn, ids, visit)
			continue
		}
		id := pipeline.Field(node, "identifier")
		if id == nil {
			continue
		}
		nf := fqn + "." + id.Value
		if t := pipeline.Field(node, "type"); t != nil && ids != nil {
			ids[nf] = map[string]string{"type": t.Value}
		}
		flatten(node, nf, ids, visit)
	}
}

// namedList reports whether a list holds variables addressed by name (pipeline, stage and group
// variables, step environment, input and output variables).
func namedList(n *yaml.Node) bool {
	for _, el := range n.Content {
		if pipeline.Field(el, "name") == nil || pipeline.Field(el, "identifier") != nil {
			return false
		}
	}
	return len(n.Content) > 0
}

// keyedList reports whether a list's elements are addressed by identifier.
func keyedList(n *yaml.Node) bool {
	for _, el := range n.Content {
		if el.Kind != yaml.MappingNode {
			return false
		}
		if pipeline.Field(el, "identifier") == nil && pipeline.Field(el, "stage") == nil &&
			pipeline.Field(el, "step") == nil && pipeline.Field(el, "stepGroup") == nil &&
			pipeline.Field(el, "parallel") == nil {
			return false
		}
	}
	return len(n.Content) > 0
}

// SourceFromTree reads the values of a pipeline-shaped tree (the `pipeline:` part of an input
// set or of a run's input YAML).
func SourceFromTree(name, file string, tree *yaml.Node) *Source {
	s := &Source{Name: name, File: file, Values: map[string]*yaml.Node{}, Identities: map[string]map[string]string{}}
	flatten(tree, "pipeline", s.Identities, func(l leaf) { s.Values[l.fqn] = l.node })
	return s
}

// Open is a runtime input left without a value after merging.
type Open struct {
	FQN            string
	Pos            diag.Pos
	Required       bool // a run is rejected while it is open
	ExecutionInput bool // asked for when its node starts
}

// Result is a merged pipeline.
type Result struct {
	Root   *yaml.Node            // the pipeline mapping with the values applied, in a copy (the original when none applies)
	Values map[string]*yaml.Node // the values applied, by FQN (the <+inputSet> document)
	Open   []Open
}

// inputFields are a pipeline's fields by FQN: those holding a runtime input (in document
// order, with their parsed specs), whole subtrees holding runtime inputs inside them, and the
// fixed ones.
type inputFields struct {
	fields   map[string]leaf
	order    []string
	specs    map[string]*RuntimeInput
	fixed    map[string]bool
	ids      map[string]map[string]string
	subtrees map[string][]nestedInput // whole-subtree fields holding runtime inputs
	nestedAt map[string]bool
}

func collectFields(root *yaml.Node) *inputFields {
	f := &inputFields{fields: map[string]leaf{}, specs: map[string]*RuntimeInput{}, fixed: map[string]bool{},
		ids: map[string]map[string]string{}, subtrees: map[string][]nestedInput{}, nestedAt: map[string]bool{}}
	flatten(root, "pipeline", f.ids, func(l leaf) {
		switch {
		case l.node.Kind == yaml.ScalarNode && IsRuntimeInput(l.node.Value):
			f.fields[l.fqn] = l
			f.order = append(f.order, l.fqn)
		case l.node.Kind != yaml.ScalarNode:
			if nested := nestedInputs(l.node, l.fqn, nil); len(nested) > 0 {
				f.fields[l.fqn] = l
				f.order = append(f.order, l.fqn)
				f.subtrees[l.fqn] = nested
				for _, in := range nested {
					f.nestedAt[in.fqn] = true
				}
				return
			}
			f.fixed[l.fqn] = true
		default:
			f.fixed[l.fqn] = true
		}
	})
	for _, fqn := range f.order {
		in, err := Parse(f.fields[fqn].node.Value)
		if err != nil {
			continue // reported by validation at the field itself
		}
		f.specs[fqn] = in
	}
	return f
}

// choose returns the value each runtime input takes from the sources, the last source
// naming it winning, and the source it came from; values for fields that are not runtime
// inputs are warnings.
func (f *inputFields) choose(sources []*Source, diags *diag.List) (map[string]*yaml.Node, map[string]*Source) {
	chosen := map[string]*yaml.Node{}
	chosenFrom := map[string]*Source{}
	for _, src := range sources {
		for _, fqn := range sortedFQNs(src.Values) {
			val := src.Values[fqn]
			pos := pipeline.NodePos(src.File, val)
			if bad := identityMismatch(fqn, src, f.ids); bad != "" {
				diags.Warnf(pos, "input-identity", "%s: value for %s ignored: %s", src.Name, fqn, bad)
				continue
			}
			if f.nestedAt[fqn] && !(val.Kind == yaml.ScalarNode && IsRuntimeInput(val.Value)) {
				chosen[fqn], chosenFrom[fqn] = val, src // a runtime input inside a whole subtree
				continue
			}
			if _, ok := f.fields[fqn]; !ok {
				if f.fixed[fqn] {
					diags.Warnf(pos, "input-fixed", "%s: value for %s ignored: the pipeline field is fixed, not a runtime input", src.Name, fqn)
				} else {
					diags.Warnf(pos, "input-unknown", "%s: value for %s ignored: the pipeline has no such field", src.Name, fqn).
						SetHint("check the identifiers on the path; stages and steps are addressed by identifier, variables by name")
				}
				continue
			}
			if val.Kind == yaml.ScalarNode && IsRuntimeInput(val.Value) {
				continue // a later <+input> does not erase an earlier value (spec 12.3)
			}
			chosen[fqn], chosenFrom[fqn] = val, src
		}
	}
	return chosen, chosenFrom
}

// fallback is the value of a runtime input no source answered: its default, a variable's
// default, or empty for an optional variable; nil with the input left open otherwise.
func fallback(src pipeline.Source, fqn string, l leaf, in *RuntimeInput) (*yaml.Node, *Open) {
	switch {
	case in == nil:
		return nil, nil
	case in.ExecutionInput:
		// Asked when its node starts, even with a default (spec 9.7); the default
		// pre-fills the answer and is what ProceedWithDefaultValues uses.
		return nil, &Open{FQN: fqn, Pos: src.Pos(l.node), ExecutionInput: true}
	case in.Default != nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *in.Default}, nil
	case l.variable != nil && pipeline.Field(l.variable, "default") != nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: pipeline.Field(l.variable, "default").Value}, nil
	case l.variable != nil && !isTrue(pipeline.Field(l.variable, "required")) && in.Check("") == nil:
		// An optional variable is empty, unless its allowedValues or regex refuse that.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}, nil
	default:
		return nil, &Open{FQN: fqn, Pos: src.Pos(l.node), Required: true}
	}
}

// Merge applies defaults, then each source in order, to the runtime inputs of a pipeline
// (spec 12.3). Values for fixed fields, unknown FQNs or nodes whose identity differs are ignored
// with a warning; values failing allowedValues/regex are errors at the value's own position.
// src positions the pipeline's nodes; the merged tree's copies keep their origins in it.
func Merge(src pipeline.Source, root *yaml.Node, sources []*Source) (*Result, diag.List) {
	var diags diag.List
	res := &Result{Root: root, Values: map[string]*yaml.Node{}}
	pending := map[*yaml.Node]*yaml.Node{} // runtime-input nodes of root → their values
	f := collectFields(root)
	chosen, chosenFrom := f.choose(sources, &diags)
	for _, fqn := range f.order {
		if nested, ok := f.subtrees[fqn]; ok {
			// An unanswered condition input is false (spec C13), not a missing value.
			required := !strings.HasSuffix(fqn, ".when")
			res.Open = append(res.Open, mergeNested(src, nested, chosen[fqn], chosen, res.Values, pending, required)...)
			continue
		}
		l, in := f.fields[fqn], f.specs[fqn]
		val, ok := chosen[fqn]
		if !ok {
			var open *Open
			if val, open = fallback(src, fqn, l, in); open != nil {
				res.Open = append(res.Open, *open)
			}
			if val == nil {
				continue
			}
		} else if in != nil {
			src := chosenFrom[fqn]
			for _, v := range literalValues(val) {
				if err := in.Check(v); err != nil {
					diags.Errorf(pipeline.NodePos(src.File, val), "input-value", "%s: %s: %v", src.Name, fqn, err).
						SetHint("the pipeline declares %s", strings.TrimSpace(l.node.Value))
				}
			}
		}
		res.Values[fqn] = val
		pending[l.node] = val
	}
	if len(pending) > 0 {
		// The values go into a copy: the pipeline as written stays as it was.
		res.Root = src.Origins.CopyWith(root, func(orig, cp *yaml.Node) {
			if val, ok := pending[orig]; ok {
				replace(cp, val)
			}
		})
	}
	return res, diags
}

func identityMismatch(fqn string, src *Source, ids map[string]map[string]string) string {
	for p := fqn; p != ""; p = parent(p) {
		want, ok := ids[p]
		got, ok2 := src.Identities[p]
		if !ok || !ok2 {
			continue
		}
		for k, v := range got {
			if w, ok := want[k]; ok && w != v {
				return fmt.Sprintf("%s has %s %q in the pipeline but %q here", p, k, w, v)
			}
		}
	}
	return ""
}

func parent(fqn string) string {
	if i := strings.LastIndexByte(fqn, '.'); i >= 0 {
		return fqn[:i]
	}
	return ""
}

// literalValues lists the values to check: a scalar, or each element of a list; values that are
// expressions are checked only after they resolve.
func literalValues(n *yaml.Node) []string {
	var out []string
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "<+") {
			out = append(out, n.Value)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, literalValues(c)...)
		}
	}
	return out
}

// replace puts a value in place of a runtime-input node, keeping the field's position so later
// diagnostics point at the pipeline line that asked for the input.
func replace(dst, val *yaml.Node) {
	line, col := dst.Line, dst.Column
	*dst = *deepCopy(val)
	dst.Line, dst.Column = line, col
}

func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = deepCopy(ch)
	}
	return &c
}

func isTrue(n *yaml.Node) bool { return n != nil && strings.EqualFold(n.Value, "true") }

func sortedFQNs(m map[string]*yaml.Node) []string { return slices.Sorted(maps.Keys(m)) }

// nestedInput is a runtime input inside a whole subtree (an environment's
// `infrastructureDefinitions: <+input>`), addressed by its path below the subtree.
type nestedInput struct {
	fqn  string
	path []string // map keys, and list elements by identifier (or index)
	node *yaml.Node
}

// nestedInputs finds the runtime inputs below n.
func nestedInputs(n *yaml.Node, fqn string, path []string) []nestedInput {
	var out []nestedInput
	switch n.Kind {
	case yaml.ScalarNode:
		if IsRuntimeInput(n.Value) && len(path) > 0 {
			out = append(out, nestedInput{fqn: fqn, path: path, node: n})
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			out = append(out, nestedInputs(n.Content[i+1], fqn+"."+k, append(append([]string(nil), path...), k))...)
		}
	case yaml.SequenceNode:
		for i, el := range n.Content {
			seg := elementKey(el, i)
			out = append(out, nestedInputs(el, fqn+"."+seg, append(append([]string(nil), path...), seg))...)
		}
	}
	return out
}

// elementKey addresses a list element: by identifier when it has one, else by index.
func elementKey(el *yaml.Node, i int) string {
	if id := pipeline.Field(el, "identifier"); id != nil && id.Kind == yaml.ScalarNode {
		return id.Value
	}
	return fmt.Sprint(i)
}

// lookupPath follows a nestedInput path in a subtree given by an input set.
func lookupPath(n *yaml.Node, path []string) *yaml.Node {
	for _, seg := range path {
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			n = pipeline.Field(n, seg)
		case yaml.SequenceNode:
			var next *yaml.Node
			for i, el := range n.Content {
				if elementKey(el, i) == seg {
					next = el
				}
			}
			n = next
		default:
			return nil
		}
	}
	return n
}

// sourcesOfPickedArtifact: `sources: <+input>` beside a runtime primaryArtifactRef stands for
// the inputs of the source picked at run time (the reference writes it so in serviceInputs);
// a source whose fields are fixed has none, so nobody is asked for it.
func sourcesOfPickedArtifact(fqn string, inputs map[string]bool) bool {
	return strings.HasSuffix(fqn, ".artifacts.primary.sources") && inputs[parent(fqn)+".primaryArtifactRef"]
}

// mergeNested fills the runtime inputs inside a whole subtree from the subtree an input set
// gave (whole), a value given for the input's own FQN, or the input's default; the rest stay
// open.
func mergeNested(src pipeline.Source, nested []nestedInput, whole *yaml.Node, chosen map[string]*yaml.Node, values map[string]*yaml.Node, pending map[*yaml.Node]*yaml.Node, required bool) []Open {
	var open []Open
	at := map[string]bool{}
	for _, in := range nested {
		at[in.fqn] = true
	}
	for _, in := range nested {
		val := chosen[in.fqn]
		if val == nil {
			val = lookupPath(whole, in.path)
		}
		if val == nil && sourcesOfPickedArtifact(in.fqn, at) {
			continue
		}
		if val == nil || (val.Kind == yaml.ScalarNode && IsRuntimeInput(val.Value)) {
			spec, err := Parse(in.node.Value)
			if err != nil || spec.Default == nil {
				open = append(open, Open{FQN: in.fqn, Pos: src.Pos(in.node), Required: required})
				continue
			}
			val = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: *spec.Default}
		}
		values[in.fqn] = val
		pending[in.node] = val
	}
	return open
}
