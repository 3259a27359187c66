package expressions

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// patcher rewrites the parsed expr tree into calls of Gantry's runtime functions, so that
// references resolve through the execution context (spec 9.3, 9.4), operators follow JEXL's
// loose typing, and Java-style methods work on plain values. expr still parses, checks, compiles
// and runs the program; this only changes what the nodes mean.
type patcher struct {
	err  *file.Error
	refs []*ast.CallNode // the references built, for Template.References
}

const scopeVar = "__s"

var placeholderRe = regexp.MustCompile(`__(?:in|str)\d+__`)

func (p *patcher) fail(n ast.Node, format string, args ...any) {
	if p.err == nil {
		p.err = &file.Error{Location: n.Location(), Message: fmt.Sprintf(format, args...)}
	}
}

func call(fn string, at ast.Node, args ...ast.Node) *ast.CallNode {
	c := &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: args}
	c.SetLocation(at.Location())
	c.Callee.SetLocation(at.Location())
	return c
}

func str(s string, at ast.Node) ast.Node {
	n := &ast.StringNode{Value: s}
	n.SetLocation(at.Location())
	return n
}

// isRef reports whether n is a reference built by the patcher: __ref(__s, seg...).
func isRef(n ast.Node) (*ast.CallNode, bool) {
	c, ok := n.(*ast.CallNode)
	if !ok {
		return nil, false
	}
	id, ok := c.Callee.(*ast.IdentifierNode)
	return c, ok && id.Value == "__ref"
}

// staticName returns the single static segment of a one-segment reference (`json`, `empty`).
func staticName(n ast.Node) (string, bool) {
	c, ok := isRef(n)
	if !ok || len(c.Arguments) != 2 {
		return "", false
	}
	s, ok := c.Arguments[1].(*ast.StringNode)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// segment turns a property or identifier name into a path segment; names glued to inner
// expressions (`deploy<+strategy.identifierPostFix>`) become a concatenation of their parts.
func segment(name string, at ast.Node) ast.Node {
	locs := placeholderRe.FindAllStringIndex(name, -1)
	if len(locs) == 0 {
		return str(name, at)
	}
	if len(locs) == 1 && locs[0][0] == 0 && locs[0][1] == len(name) {
		id := &ast.IdentifierNode{Value: name}
		id.SetLocation(at.Location())
		return id
	}
	var parts []ast.Node
	cur := 0
	for _, l := range locs {
		if l[0] > cur {
			parts = append(parts, str(name[cur:l[0]], at))
		}
		id := &ast.IdentifierNode{Value: name[l[0]:l[1]]}
		id.SetLocation(at.Location())
		parts = append(parts, id)
		cur = l[1]
	}
	if cur < len(name) {
		parts = append(parts, str(name[cur:], at))
	}
	return call("__cat", at, parts...)
}

var binaryFuncs = map[string]string{
	"+": "__add", "-": "__sub", "*": "__mul", "/": "__div", "%": "__mod",
	"==": "__eq", "!=": "__ne", "<": "__lt", "<=": "__le", ">": "__gt", ">=": "__ge",
	"??": "__elvis", "matches": "__match", "startsWith": "__startsWith", "endsWith": "__endsWith",
	"in": "__in", "contains": "__containsOp",
}

func (p *patcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if placeholderRe.MatchString(n.Value) && placeholderRe.FindString(n.Value) == n.Value {
			return // a bound inner value
		}
		if strings.HasPrefix(n.Value, "__") && !placeholderRe.MatchString(n.Value) {
			p.fail(n, "identifiers starting with __ are reserved")
			return
		}
		ref := call("__ref", n, &ast.IdentifierNode{Value: scopeVar}, segment(n.Value, n))
		p.refs = append(p.refs, ref)
		*node = ref
	case *ast.MemberNode:
		if n.Method {
			return // handled by the enclosing CallNode
		}
		prop := n.Property
		if s, ok := prop.(*ast.StringNode); ok {
			prop = segment(s.Value, s)
		}
		if ref, ok := isRef(n.Node); ok {
			ref.Arguments = append(ref.Arguments, prop)
			*node = ref
			return
		}
		*node = call("__get", n, n.Node, prop)
	case *ast.CallNode:
		p.visitCall(node, n)
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "and", "||", "or":
			n.Left = call("__bool", n.Left, n.Left)
			n.Right = call("__bool", n.Right, n.Right)
		default:
			fn, ok := binaryFuncs[n.Operator]
			if !ok {
				p.fail(n, "operator %q is not supported in expressions", n.Operator)
				return
			}
			*node = call(fn, n, n.Left, n.Right)
		}
	case *ast.UnaryNode:
		switch n.Operator {
		case "!", "not":
			n.Node = call("__bool", n.Node, n.Node)
		case "-":
			*node = call("__neg", n, n.Node)
		case "+":
			*node = call("__num", n, n.Node)
		}
	case *ast.ConditionalNode:
		n.Cond = call("__bool", n.Cond, n.Cond)
	case *ast.SliceNode:
		p.fail(n, "slices like a[1:2] are not supported; use substring() or get()")
	case *ast.SequenceNode, *ast.VariableDeclaratorNode:
		p.fail(n, "statements and assignments are not allowed in expressions")
	case *ast.PredicateNode, *ast.PointerNode, *ast.BuiltinNode:
		p.fail(n, "this construct is not supported in expressions")
	}
}

func (p *patcher) visitCall(node *ast.Node, n *ast.CallNode) {
	if m, ok := n.Callee.(*ast.MemberNode); ok && m.Method {
		name := m.Property.(*ast.StringNode).Value
		if ns, ok := staticName(m.Node); ok && ns == configFileRoot {
			if _, known := configFileFunctions[name]; !known {
				p.fail(m, "unknown function configFile.%s(); known: configFile.getAsBase64, configFile.getAsString", name)
				return
			}
			// Reads the stage's config files: the context's configFile object, with the state
			// to render expressions inside the file.
			*node = call("__cfg", n, append([]ast.Node{&ast.IdentifierNode{Value: scopeVar}, m.Node, str(name, m)}, n.Arguments...)...)
			return
		}
		if ns, ok := staticName(m.Node); ok && functorNamespaces[ns] {
			fn := ns + "." + name
			if _, known := functors[fn]; !known {
				p.fail(m, "unknown function %s(); known: %s", fn, strings.Join(functorNames(ns), ", "))
				return
			}
			*node = call("__fn", n, append([]ast.Node{str(fn, m)}, n.Arguments...)...)
			return
		}
		if _, known := methods[name]; !known {
			p.fail(m.Property, "unknown method %s(); known methods: %s", name, strings.Join(methodNames(), ", "))
			return
		}
		*node = call("__m", n, append([]ast.Node{m.Node, str(name, m)}, n.Arguments...)...)
		return
	}
	if name, ok := staticName(n.Callee); ok {
		fn, known := globalFuncs[name]
		if !known {
			p.fail(n, "unknown function %s(); known functions: empty, size", name)
			return
		}
		*node = call(fn, n, n.Arguments...)
		return
	}
	if id, ok := n.Callee.(*ast.IdentifierNode); ok && strings.HasPrefix(id.Value, "__") {
		return // already one of ours
	}
	p.fail(n, "this value cannot be called like a function")
}

var globalFuncs = map[string]string{"empty": "__empty", "size": "__size"}

func methodNames() []string {
	out := make([]string, 0, len(methods))
	for k := range methods {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func functorNames(ns string) []string {
	var out []string
	for k := range functors {
		if strings.HasPrefix(k, ns+".") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
