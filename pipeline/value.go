package pipeline

import "gopkg.in/yaml.v3"

// Value converts a YAML node into plain data: mappings to map[string]any, sequences to []any,
// scalars to strings (null to nil). Strings keep expressions for rendering at run time.
func Value(n *yaml.Node) any {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return Value(n.Content[0])
	case yaml.AliasNode:
		return Value(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = Value(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, x := range n.Content {
			l = append(l, Value(x))
		}
		return l
	}
	if n.Tag == "!!null" {
		return nil
	}
	return n.Value
}
