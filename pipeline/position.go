package pipeline

import (
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
)

// OffsetPos returns the file position of a byte offset inside a scalar's value, so an error in
// the middle of an expression is reported at its own line and column. Block scalars (`|`, `>`)
// start on the line after the key; each value line is found in the source to get its indent.
// Escapes in double-quoted scalars can shift the column slightly; the line is always right for
// literal blocks and plain or single-quoted values. A node copied from another file is
// positioned by its Source.
func OffsetPos(file string, src []byte, n *yaml.Node, offset int) diag.Pos {
	if offset > len(n.Value) {
		offset = len(n.Value)
	}
	before := n.Value[:offset]
	lineInValue := strings.Count(before, "\n")
	colInLine := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		line := n.Line + 1 + lineInValue
		return diag.Pos{File: file, Line: line, Col: indentOf(src, line) + colInLine + 1}
	}
	quote := 0
	if n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle {
		quote = 1
	}
	if lineInValue == 0 {
		return diag.Pos{File: file, Line: n.Line, Col: n.Column + quote + colInLine}
	}
	line := n.Line + lineInValue
	return diag.Pos{File: file, Line: line, Col: indentOf(src, line) + colInLine + 1}
}

func indentOf(src []byte, line int) int {
	lines := strings.SplitN(string(src), "\n", line+1)
	if line-1 >= len(lines) || line < 1 {
		return 0
	}
	l := lines[line-1]
	return len(l) - len(strings.TrimLeft(l, " \t"))
}
