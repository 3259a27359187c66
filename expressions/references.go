package expressions

import (
	"github.com/expr-lang/expr/ast"
)

// Reference is a path an expression reads, as far as it is written out: `<+a.b.c>` reads a, b,
// c; `<+a.b.get("c")>` and `<+a.b[<+x>].c>` read a, b. Validation checks such paths against
// what a pipeline defines before it runs.
type Reference struct {
	Path   []string
	Offset int // byte offset of the path's first segment in the template's text
}

// References returns the paths every expression of the template reads, inner expressions
// included, in the order they are written.
func (t *Template) References() []Reference {
	var out []Reference
	var visit func(c *compiled)
	visit = func(c *compiled) {
		out = append(out, c.refs...)
		for _, in := range c.inner {
			visit(in)
		}
	}
	for _, p := range t.parts {
		if p.expr != nil {
			visit(p.expr)
		}
	}
	return out
}

// references turns the patcher's reference calls into paths of their static segments.
func (tr *translation) references(calls []*ast.CallNode, s *span) []Reference {
	var out []Reference
	seen := map[*ast.CallNode]bool{}
	for _, c := range calls {
		if seen[c] {
			continue
		}
		seen[c] = true
		var path []string
		for _, a := range c.Arguments[1:] {
			str, ok := a.(*ast.StringNode)
			if !ok {
				break
			}
			path = append(path, str.Value)
		}
		if len(path) == 0 {
			continue // a bound inner value
		}
		off := runeToByte(tr.src, c.Location().From)
		at := s.bodyStart
		if off < len(tr.posMap) {
			at = tr.posMap[off]
		}
		out = append(out, Reference{Path: path, Offset: at})
	}
	return out
}
