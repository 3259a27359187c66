package pipeline

import (
	"fmt"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Nodes copied into a pipeline from another file (a template) keep their place in that file:
// CopyNode adds origin×originStride to their line numbers, and NodePos and OffsetPos read it
// back, so a problem inside a template is reported in the template file, with the use site.
const originStride = 1 << 24

// Origin is a file nodes were copied from and how they got into the pipeline.
type Origin struct {
	File string
	Src  []byte
	Via  string // "template smoke@v1 used at p.yaml:12:9"
}

// origins is process-wide and append-only: its size is bounded by the distinct (file, use
// site) pairs ever expanded, since an origin is registered once per pair.
var origins = struct {
	sync.RWMutex
	list  []Origin
	index map[string]int
}{index: map[string]int{}}

// RegisterOrigin returns the id of an origin, registering it on first use.
func RegisterOrigin(o Origin) int {
	key := o.File + "\x00" + o.Via
	origins.Lock()
	defer origins.Unlock()
	if id, ok := origins.index[key]; ok {
		origins.list[id-1].Src = o.Src
		return id
	}
	origins.list = append(origins.list, o)
	origins.index[key] = len(origins.list)
	return len(origins.list)
}

// originOf decodes a line number: the origin (if the node was copied) and the line in it.
func originOf(line int) (Origin, int, bool) {
	if line < originStride {
		return Origin{}, line, false
	}
	origins.RLock()
	defer origins.RUnlock()
	id := line / originStride
	if id > len(origins.list) {
		return Origin{}, line % originStride, false
	}
	return origins.list[id-1], line % originStride, true
}

// Line is a node's line in the file it came from.
func Line(n *yaml.Node) int { return n.Line % originStride }

// CopyNode deep-copies n; with origin > 0 every copied node is marked as coming from it.
func CopyNode(n *yaml.Node, origin int) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if origin > 0 && c.Line > 0 {
		c.Line = origin*originStride + c.Line%originStride
	}
	if n.Alias != nil {
		c.Alias = CopyNode(n.Alias, origin)
	}
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = CopyNode(k, origin)
		}
	}
	return &c
}

// NodePos returns the position of a node: in file, or in the file it was copied from.
func NodePos(file string, n *yaml.Node) diag.Pos {
	if n == nil {
		return diag.Pos{File: file}
	}
	if o, line, ok := originOf(n.Line); ok {
		return diag.Pos{File: o.File, Line: line, Col: n.Column, Via: o.Via}
	}
	return diag.Pos{File: file, Line: n.Line, Col: n.Column}
}

// ViaUse describes a use site for Origin.Via.
func ViaUse(what string, at diag.Pos) string { return fmt.Sprintf("%s used at %s", what, at) }
