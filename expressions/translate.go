package expressions

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// translation is a body rewritten from Harness/JEXL surface syntax into expr syntax. Inner
// expressions become placeholder identifiers (their values are bound at run time, never pasted
// as source) and posMap maps each byte of the translated source back to the original text.
type translation struct {
	src    string
	posMap []int
	inner  []*span
	strs   []strTemplate
}

// strTemplate is a string literal with expressions inside: literal pieces and inner indexes.
type strTemplate struct {
	parts []strPart
}

type strPart struct {
	lit   string
	inner int // index into translation.inner, or -1 for a literal piece
}

// JEXL word operators and literals that expr spells differently.
var wordOps = map[string]string{
	"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
	"div": "/", "mod": "%", "null": "nil",
}

// symbolic JEXL operators: regex/membership match, negated match, starts-with, ends-with.
var symOps = []struct{ jexl, expr string }{
	{"=~", " matches "}, {"!~", " not matches "}, {"=^", " startsWith "}, {"=$", " endsWith "},
}

type translator struct {
	src string
	out strings.Builder
	pos []int
	tr  *translation
}

func (t *translator) emit(s string, at int) {
	t.out.WriteString(s)
	for range len(s) {
		t.pos = append(t.pos, at)
	}
}

func translate(src string, s *span) *translation {
	t := &translator{src: src, tr: &translation{}}
	innerAt := map[int]*span{}
	for _, in := range s.inner {
		innerAt[in.start] = in
	}
	strAt := map[int]strLit{}
	for _, l := range s.strs {
		strAt[l.start] = l
	}
	prevSignificant := byte(0)
	for i := s.bodyStart; i < s.bodyEnd; {
		c := src[i]
		if in, ok := innerAt[i]; ok {
			t.emit(innerName(len(t.tr.inner)), i)
			t.tr.inner = append(t.tr.inner, in)
			i, prevSignificant = in.end, '_'
			continue
		}
		if c == '"' || c == '\'' {
			lit, _ := scanString(src, i)
			if l, ok := strAt[i]; ok {
				lit = l
			}
			if prevSignificant == '.' {
				// `issue."Customer Name"`: a quoted key after a dot is a bracket access.
				t.trimLastDot()
				t.emit("[", i)
				t.emitString(lit)
				t.emit("]", i)
			} else {
				t.emitString(lit)
			}
			i, prevSignificant = lit.end, '"'
			continue
		}
		if op, ok := symOp(src[i:s.bodyEnd]); ok {
			t.emit(op.expr, i)
			i += len(op.jexl)
			prevSignificant = '='
			continue
		}
		if c == '?' {
			if j := skipSpaces(src, i+1, s.bodyEnd); j < s.bodyEnd && src[j] == ':' {
				t.emit(" ?? ", i) // JEXL elvis `a ?: b`
				i, prevSignificant = j+1, '?'
				continue
			}
		}
		if isIdentStart(c) && (i == s.bodyStart || !isIdentChar(src[i-1])) {
			j := i
			for j < s.bodyEnd && isIdentChar(src[j]) {
				j++
			}
			word := src[i:j]
			if rep, ok := wordOps[word]; ok && prevSignificant != '.' {
				t.emit(" "+rep+" ", i)
			} else {
				t.emit(word, i)
			}
			i, prevSignificant = j, 'a'
			continue
		}
		_, size := utf8.DecodeRuneInString(src[i:])
		t.emit(src[i:i+size], i)
		if !isSpace(c) {
			prevSignificant = c
		}
		i += size
	}
	t.tr.src = t.out.String()
	t.tr.posMap = t.pos
	return t.tr
}

func (t *translator) trimLastDot() {
	s := t.out.String()
	k := strings.LastIndexByte(s, '.')
	t.out.Reset()
	t.out.WriteString(s[:k] + s[k+1:])
	t.pos = append(t.pos[:k], t.pos[k+1:]...)
}

// emitString re-quotes a JEXL string literal for expr, or binds it as a placeholder when it
// contains inner expressions.
func (t *translator) emitString(lit strLit) {
	body := t.src[lit.start+1 : lit.end-1]
	if len(lit.inner) == 0 {
		t.emit(strconv.Quote(unescape(body)), lit.start)
		return
	}
	var st strTemplate
	cur := lit.start + 1
	for _, in := range lit.inner {
		if in.start > cur {
			st.parts = append(st.parts, strPart{lit: unescape(t.src[cur:in.start]), inner: -1})
		}
		st.parts = append(st.parts, strPart{inner: len(t.tr.inner)})
		t.tr.inner = append(t.tr.inner, in)
		cur = in.end
	}
	if end := lit.end - 1; end > cur {
		st.parts = append(st.parts, strPart{lit: unescape(t.src[cur:end]), inner: -1})
	}
	t.emit(strName(len(t.tr.strs)), lit.start)
	t.tr.strs = append(t.tr.strs, st)
}

// unescape applies JEXL string escapes. Unknown escapes keep their backslash, so regular
// expressions such as "\d+" mean what the user wrote.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case '\\', '"', '\'':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteString(`\u`)
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func symOp(s string) (struct{ jexl, expr string }, bool) {
	for _, op := range symOps {
		if strings.HasPrefix(s, op.jexl) {
			return op, true
		}
	}
	return struct{ jexl, expr string }{}, false
}

func skipSpaces(s string, i, end int) int {
	for i < end && isSpace(s[i]) {
		i++
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
