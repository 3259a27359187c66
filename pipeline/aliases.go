package pipeline

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// A YAML alias stands for the whole node it names, so a few hundred bytes of nested aliases
// can stand for billions of nodes: every reader that follows aliases (decoding, values,
// template copies) would allocate them all. A document may stand for at most
// AliasBaseNodes plus AliasNodesPerNode per node written in it once its aliases are followed;
// a real file's anchors repeat a block a few times, far below that.
const (
	AliasBaseNodes    = 100_000
	AliasNodesPerNode = 10
)

// CheckExpansion walks the document as its readers would, aliases followed, and stops once it
// has seen more nodes than the limit: the walk is bounded by the limit, not by the expansion.
// The error is at the alias the document's walk was following when the limit was passed, as
// written where the walk met it (the node itself when no alias is followed). It returns nil for a document within the limit.
func CheckExpansion(file string, root *yaml.Node) *diag.Diagnostic {
	written := countWritten(root)
	limit := AliasBaseNodes + AliasNodesPerNode*written
	w := &expansion{left: limit}
	if w.visit(root) {
		return nil
	}
	d := diag.Errorf(NodePos(file, w.blame), "alias-expansion",
		"with its aliases followed the document stands for more than %d YAML nodes (%d written; the limit is %d plus %d per node written): refused before it is read",
		limit, written, AliasBaseNodes, AliasNodesPerNode).
		WithHint("an anchor that is repeated inside other repeated anchors multiplies; write the repeated part out, or nest fewer aliases")
	return &d
}

// countWritten counts the nodes of the document as written: an alias is one node.
func countWritten(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	count := 1
	for _, c := range n.Content {
		count += countWritten(c)
	}
	return count
}

// expansion is a bounded walk of a document with its aliases followed.
type expansion struct {
	left    int
	aliases []*yaml.Node // the aliases being followed, the one the document's own walk met first
	blame   *yaml.Node
}

func (w *expansion) visit(n *yaml.Node) bool {
	if n == nil {
		return true
	}
	if w.left--; w.left < 0 {
		w.blame = n
		if len(w.aliases) > 0 {
			w.blame = w.aliases[0]
		}
		return false
	}
	if n.Kind == yaml.AliasNode {
		w.aliases = append(w.aliases, n)
		ok := w.visit(n.Alias)
		w.aliases = w.aliases[:len(w.aliases)-1]
		return ok
	}
	for _, c := range n.Content {
		if !w.visit(c) {
			return false
		}
	}
	return true
}
