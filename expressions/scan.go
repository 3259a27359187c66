package expressions

import (
	"fmt"
	"strings"
)

// span is one `<+...>` found in a text: the body between the delimiters, the expressions nested in
// it, and the string literals of the body that contain nested expressions.
type span struct {
	start, end int // byte offsets of "<+" and just past the closing ">"
	bodyStart  int
	bodyEnd    int
	inner      []*span
	strs       []strLit // string literals in the body that contain inner expressions
}

// strLit is a quoted string inside a body, from its opening to just past its closing quote.
type strLit struct {
	start, end int
	inner      []*span
}

// SyntaxError is an error at a byte offset of the source text.
type SyntaxError struct {
	Offset  int
	Message string
}

func (e *SyntaxError) Error() string { return e.Message }

// scanTemplate finds the top-level expressions of a text. Text outside them is literal.
func scanTemplate(src string) ([]*span, error) {
	var out []*span
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "<+")
		if j < 0 {
			break
		}
		s, err := scanExpr(src, i+j)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		i = s.end
	}
	return out, nil
}

// scanExpr scans the expression opening at src[start:]. A '>' closes it when it sits outside
// quotes and brackets, is not part of '>=' and follows a non-space character: `<+a> > 5` closes
// after `a`, while in `<+x.length() > 5>` the spaced '>' is the operator. When no '>' qualifies,
// the last unbracketed '>' closes the expression, so `<+a == 1 ? "x" : "y" >` still works.
func scanExpr(src string, start int) (*span, error) {
	if s, ok := scanBody(src, start, start+2, -1); ok {
		return s, nil
	}
	if last := lastCandidate(src, start+2); last >= 0 {
		if s, ok := scanBody(src, start, start+2, last); ok {
			return s, nil
		}
	}
	// Neither reading closes it: the reference engine's own, where every '>' outside quotes
	// and brackets closes, spaced or not (`<+<+a> > + <+ <+b>>` is two expressions).
	if s, ok := scanBody(src, start, start+2, anyClose); ok {
		return s, nil
	}
	return nil, &SyntaxError{Offset: start, Message: "unterminated expression: `<+` has no closing `>`"}
}

// scanBody scans from bodyStart; with forceEnd >= 0 the '>' at that offset closes the body,
// with anyClose any '>' but `>=` does, and with -1 the first that follows a non-space.
func scanBody(src string, start, bodyStart, forceEnd int) (*span, bool) {
	s := &span{start: start, bodyStart: bodyStart}
	depth := 0
	for i := bodyStart; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "<+"):
			in, err := scanExpr(src, i)
			if err != nil {
				return nil, false
			}
			s.inner = append(s.inner, in)
			i = in.end
			continue
		case c == '"' || c == '\'':
			lit, ok := scanString(src, i)
			if !ok {
				return nil, false
			}
			if len(lit.inner) > 0 {
				s.strs = append(s.strs, lit)
			}
			i = lit.end
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '>' && depth <= 0:
			if i == forceEnd || (forceEnd == -1 && closes(src, bodyStart, i)) || (forceEnd == anyClose && !operatorGE(src, i)) {
				s.bodyEnd, s.end = i, i+1
				return s, true
			}
		}
		i++
	}
	return nil, false
}

// anyClose is scanBody's forceEnd for the reading where any '>' but `>=` closes.
const anyClose = -2

func closes(src string, bodyStart, i int) bool {
	if operatorGE(src, i) {
		return false
	}
	return i == bodyStart || !isSpace(src[i-1])
}

// operatorGE: `>=` is an operator, but `>==` is not: in `<+a>==5` the '>' closes and `==`
// compares.
func operatorGE(src string, i int) bool {
	return i+1 < len(src) && src[i+1] == '=' && (i+2 >= len(src) || src[i+2] != '=')
}

// lastCandidate returns the offset of the last '>' outside quotes and brackets, or -1.
func lastCandidate(src string, from int) int {
	last, depth := -1, 0
	for i := from; i < len(src); i++ {
		switch c := src[i]; {
		case c == '"' || c == '\'':
			if lit, ok := scanString(src, i); ok {
				i = lit.end - 1
			}
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '>' && depth <= 0 && !(i+1 < len(src) && src[i+1] == '='):
			last = i
		}
	}
	return last
}

// scanString scans a quoted string at src[i], collecting expressions nested inside it.
func scanString(src string, i int) (strLit, bool) {
	q := src[i]
	lit := strLit{start: i}
	for j := i + 1; j < len(src); {
		switch {
		case src[j] == '\\':
			j += 2
			continue
		case src[j] == q:
			lit.end = j + 1
			return lit, true
		case strings.HasPrefix(src[j:], "<+"):
			in, err := scanExpr(src, j)
			if err != nil {
				return lit, false
			}
			lit.inner = append(lit.inner, in)
			j = in.end
			continue
		}
		j++
	}
	return lit, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isIdentChar(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// placeholder names bind inner values into the translated program; users cannot write them
// because identifiers starting with "__" are rejected.
// innerName and strName name an expression's inner values in its environment; the first
// names are made once, as every evaluation sets them.
func innerName(i int) string {
	if i < len(innerNames) {
		return innerNames[i]
	}
	return fmt.Sprintf("__in%d__", i)
}

func strName(i int) string {
	if i < len(strNames) {
		return strNames[i]
	}
	return fmt.Sprintf("__str%d__", i)
}

var innerNames, strNames = names("__in%d__"), names("__str%d__")

func names(format string) []string {
	out := make([]string, 16)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}
