package pipeline

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Origin is a file nodes were copied from and how they got into the pipeline.
type Origin struct {
	File string
	Src  []byte
	Via  string // "template smoke@v1 used at p.yaml:12:9"
}

// Origins records the nodes of one tree that were copied into it from other files (template
// bodies): each keeps its place in the file it came from, so a problem inside a template is
// reported in the template file, with the use site. The tree's own nodes are not recorded. A
// load keeps one per file it expands (File.Origins); copies made with Copy keep their origins.
type Origins struct {
	of map[*yaml.Node]*Origin
}

// NewOrigins returns an empty record.
func NewOrigins() *Origins { return &Origins{of: map[*yaml.Node]*Origin{}} }

// Of returns the origin of a copied node; nil for a node of the tree's own file (or a nil
// record).
func (o *Origins) Of(n *yaml.Node) *Origin {
	if o == nil || n == nil {
		return nil
	}
	return o.of[n]
}

// CopyFrom deep-copies n, a node of another file, recording every copy as coming from from.
func (o *Origins) CopyFrom(n *yaml.Node, from *Origin) *yaml.Node {
	return o.copy(n, func(*yaml.Node) *Origin { return from }, nil)
}

// Copy deep-copies n; the copies of copied nodes keep their origins. A nil record copies a tree
// that has no copied nodes.
func (o *Origins) Copy(n *yaml.Node) *yaml.Node { return o.copy(n, o.Of, nil) }

// CopyWith is Copy calling visit with each node and its copy, once the copy is complete.
func (o *Origins) CopyWith(n *yaml.Node, visit func(orig, cp *yaml.Node)) *yaml.Node {
	return o.copy(n, o.Of, visit)
}

func (o *Origins) copy(n *yaml.Node, origin func(*yaml.Node) *Origin, visit func(orig, cp *yaml.Node)) *yaml.Node {
	if n == nil {
		return nil
	}
	// One allocation for all the copies: template bodies are copied often, node by node.
	c := copier{o: o, origin: origin, visit: visit, slab: make([]yaml.Node, countNodes(n))}
	return c.copy(n)
}

type copier struct {
	o      *Origins
	origin func(*yaml.Node) *Origin
	visit  func(orig, cp *yaml.Node)
	slab   []yaml.Node
}

func (c *copier) copy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	cp := &c.slab[0]
	c.slab = c.slab[1:]
	*cp = *n
	if from := c.origin(n); from != nil && c.o != nil {
		c.o.of[cp] = from
	}
	if n.Alias != nil {
		cp.Alias = c.copy(n.Alias)
	}
	if len(n.Content) > 0 {
		cp.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			cp.Content[i] = c.copy(k)
		}
	}
	if c.visit != nil {
		c.visit(n, cp)
	}
	return cp
}

// countNodes counts the nodes a deep copy of n makes (aliased nodes once per alias).
func countNodes(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	count := 1 + countNodes(n.Alias)
	for _, k := range n.Content {
		count += countNodes(k)
	}
	return count
}

// CopyNode deep-copies a tree that has no copied nodes (a file as parsed).
func CopyNode(n *yaml.Node) *yaml.Node { return (*Origins)(nil).Copy(n) }

// Source is what positions are computed against: a file, its text, and the nodes copied into
// its tree from other files.
type Source struct {
	File    string
	Src     []byte
	Origins *Origins
}

// Pos returns the position of a node: in the source's file, or, for a copied node, in the
// file it was copied from, with the use site.
func (s Source) Pos(n *yaml.Node) diag.Pos {
	if n == nil {
		return diag.Pos{File: s.File}
	}
	if o := s.Origins.Of(n); o != nil {
		return diag.Pos{File: o.File, Line: n.Line, Col: n.Column, Via: o.Via}
	}
	return diag.Pos{File: s.File, Line: n.Line, Col: n.Column}
}

// OffsetPos is OffsetPos in the source's file, or in the file a copied node came from.
func (s Source) OffsetPos(n *yaml.Node, offset int) diag.Pos {
	if o := s.Origins.Of(n); o != nil {
		p := OffsetPos(o.File, o.Src, n, offset)
		p.Via = o.Via
		return p
	}
	return OffsetPos(s.File, s.Src, n, offset)
}

// NodePos returns the position of a node of a file that has no copied nodes (an entity, input
// set or template file as parsed). A pipeline's nodes are positioned by its Source.
func NodePos(file string, n *yaml.Node) diag.Pos { return Source{File: file}.Pos(n) }

// ViaUse describes a use site for Origin.Via.
func ViaUse(what string, at diag.Pos) string { return fmt.Sprintf("%s used at %s", what, at) }
