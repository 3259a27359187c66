package pipeline

import (
	"bytes"
	"fmt"
	"strings"
)

// indentIssue is a line whose indentation breaks the YAML around it, found by reading the
// lines themselves: the YAML parser names the block it was in (often many lines above) rather
// than the line that broke it.
type indentIssue struct {
	line, col int
	hint      string
}

// indentLevel is a column that keys of an open block start at.
type indentLevel struct {
	col, line int
	key       string // the first key at this column in the block
}

// findIndentIssue returns the first line from line `from` on (1-based) whose indentation cannot
// be right: deeper than a key whose value is already on its line, or back to a column that no
// enclosing block uses.
func findIndentIssue(src []byte, from int) (indentIssue, bool) {
	lines := bytes.Split(src, []byte("\n"))
	stack := []indentLevel{{}}
	type prevLine struct {
		indent, num int
		key         string
		opens       bool // ends with `key:` (or `- key:`, `-`): a deeper line may follow
		scalar      bool // a `key: value` whose value is complete on its line
	}
	var prev *prevLine
	blockScalar := -1 // indentation of the key whose block scalar (| or >) is being skipped
	for i, raw := range lines {
		text := strings.TrimRight(string(raw), " \t\r")
		body := strings.TrimLeft(text, " ")
		if body == "" || strings.HasPrefix(body, "#") {
			continue
		}
		ind := len(text) - len(body)
		if blockScalar >= 0 {
			if ind > blockScalar {
				continue
			}
			blockScalar = -1
		}
		num := i + 1
		top := stack[len(stack)-1].col
		switch {
		case ind > top:
			if prev != nil && prev.scalar && looksLikeKey(body) && num >= from {
				return indentIssue{line: num, col: ind + 1, hint: fmt.Sprintf(
					"this line is indented deeper than `%s` on line %d, whose value is already given there: start it at column %d, as `%s` is, to make it a sibling, or move the value of `%s` below it",
					prev.key, prev.num, prev.indent+1, prev.key, prev.key)}, true
			}
			stack = append(stack, indentLevel{col: ind})
		case ind < top:
			var deeper indentLevel
			for len(stack) > 1 && stack[len(stack)-1].col > ind {
				deeper = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
			if out := stack[len(stack)-1]; out.col != ind && num >= from {
				return indentIssue{line: num, col: ind + 1, hint: fmt.Sprintf(
					"this line is indented to column %d, where no block around it starts: %s, or %s",
					ind+1, besides(out), besides(deeper))}, true
			}
		}
		p := &prevLine{indent: ind, num: num}
		content := body
		for strings.HasPrefix(content, "- ") || content == "-" {
			// A sequence item: its content starts a block of its own, two columns in.
			off := 2
			if content == "-" {
				p.opens = true
				content = ""
				break
			}
			rest := strings.TrimLeft(content[off:], " ")
			ind += len(content) - len(rest)
			stack = append(stack, indentLevel{col: ind})
			content = rest
			p.indent = ind
		}
		if content != "" {
			key, value, isKey := splitKey(content)
			p.key = key
			switch {
			case !isKey:
			case value == "":
				p.opens = true
			case isBlockScalar(value):
				blockScalar = p.indent
			case !strings.HasPrefix(value, "&") && !strings.HasPrefix(value, "!") && !opensFlow(value):
				p.scalar = true
			default:
				p.opens = true
			}
		}
		if top := &stack[len(stack)-1]; top.key == "" && p.key != "" {
			top.key, top.line = p.key, num
		}
		prev = p
	}
	return indentIssue{}, false
}

// besides describes a column keys start at, by its first key.
func besides(l indentLevel) string {
	if l.key == "" {
		return fmt.Sprintf("column %d", l.col+1)
	}
	return fmt.Sprintf("column %d to sit beside `%s` (line %d)", l.col+1, l.key, l.line)
}

// splitKey splits `key: value` (value without a trailing comment); isKey is false for a line
// that is no mapping entry (a plain scalar's continuation, a flow item).
func splitKey(s string) (key, value string, isKey bool) {
	if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") || strings.HasPrefix(s, "\"") || strings.HasPrefix(s, "'") {
		if i := strings.Index(s, "\": "); i > 0 && s[0] == '"' {
			return s[1:i], strings.TrimSpace(stripComment(s[i+3:])), true
		}
		if i := strings.Index(s, "': "); i > 0 && s[0] == '\'' {
			return s[1:i], strings.TrimSpace(stripComment(s[i+3:])), true
		}
		return "", "", false
	}
	if strings.HasSuffix(s, ":") {
		return strings.TrimSuffix(s, ":"), "", true
	}
	if i := strings.Index(s, ": "); i > 0 {
		return s[:i], strings.TrimSpace(stripComment(s[i+2:])), true
	}
	return "", "", false
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 && !strings.ContainsAny(s[:i], "\"'") {
		return s[:i]
	}
	return s
}

func looksLikeKey(s string) bool {
	_, _, ok := splitKey(strings.TrimPrefix(s, "- "))
	return ok || strings.HasPrefix(s, "- ")
}

func isBlockScalar(v string) bool {
	return len(v) > 0 && (v[0] == '|' || v[0] == '>') && strings.Trim(v[1:], "+-0123456789") == ""
}

// opensFlow reports whether a value opens a flow collection it does not close on its line.
func opensFlow(v string) bool {
	if v == "" || (v[0] != '[' && v[0] != '{') {
		return false
	}
	depth := 0
	for _, c := range v {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
	}
	return depth > 0
}
