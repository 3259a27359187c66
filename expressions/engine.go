// Package expressions renders Harness `<+...>` expressions (spec 9) on top of
// github.com/expr-lang/expr. A body is translated from the JEXL surface into expr syntax, parsed
// by expr, patched so that references, operators and Java-style methods follow Harness
// semantics, then compiled once and cached by source text. Evaluation is deterministic and free
// of side effects (no clock, no randomness, no I/O), so workflow code may call it.
package expressions

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Mode says how a text is read.
type Mode int

const (
	// Text is a field value: literal text with `<+...>` expressions spliced in. A field that is
	// exactly one expression keeps its typed value.
	Text Mode = iota
	// Condition is a JEXL boolean expression whose `<+...>` parts are bound as values, so
	// `<+httpResponseBody>.contains("ok")` and `<+a> == "x" || <+b> > 2` work (when.condition,
	// Http assertion, strategy.when).
	Condition
)

// Unresolved says what a reference that resolves to nothing becomes (spec 9.9).
type Unresolved int

const (
	UnresolvedNull     Unresolved = iota // null as a value, "null" inside text
	UnresolvedVerbatim                   // the expression's source text is kept (Http, approvals)
	UnresolvedFail                       // strict: evaluation fails naming the missing path
)

// Options tune one evaluation.
type Options struct {
	Unresolved Unresolved
}

// MaxDepth bounds recursive resolution of values that contain expressions (spec 9.1).
const MaxDepth = 15

// Template is a compiled text. It is immutable and safe for concurrent use.
type Template struct {
	src   string
	mode  Mode
	parts []part
	whole bool
}

type part struct {
	lit  string
	expr *compiled
}

type compiled struct {
	src   string // the whole `<+...>` (or the condition text)
	prog  *vm.Program
	tr    *translation
	inner []*compiled
	refs  []Reference
}

// Error is a compile or evaluation error at a byte offset of the source text.
type Error struct {
	Offset  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Column returns the 1-based character column of the error within a one-line source.
func (e *Error) Column(src string) int {
	if e.Offset > len(src) {
		return utf8.RuneCountInString(src) + 1
	}
	return utf8.RuneCountInString(src[:e.Offset]) + 1
}

// UnresolvedError is returned in strict mode for a reference that resolves to nothing.
type UnresolvedError struct{ Path string }

func (e *UnresolvedError) Error() string {
	return fmt.Sprintf("unresolved expression <+%s>: nothing in the execution context has this path", e.Path)
}

type cacheKey struct {
	mode Mode
	src  string
}

var cache sync.Map // cacheKey -> *Template

// Compile parses every expression of src and caches the result by text. Errors carry the byte
// offset of the problem in src.
func Compile(src string, mode Mode) (*Template, error) {
	key := cacheKey{mode, src}
	if t, ok := cache.Load(key); ok {
		return t.(*Template), nil
	}
	t, err := compileTemplate(src, mode)
	if err != nil {
		return nil, err
	}
	cache.Store(key, t)
	return t, nil
}

// Has reports whether a text contains an expression.
func Has(src string) bool { return strings.Contains(src, "<+") }

func compileTemplate(src string, mode Mode) (*Template, error) {
	t := &Template{src: src, mode: mode}
	if mode == Condition {
		// The whole condition is one body: scan it as if it were closed by a final '>'.
		closed := src + ">"
		s, ok := scanBody(closed, 0, 0, len(src))
		if !ok {
			return nil, &Error{Offset: 0, Message: "condition has an unterminated `<+` expression"}
		}
		if strings.TrimSpace(src) == "" {
			return nil, &Error{Offset: 0, Message: "condition is empty"}
		}
		c, err := compileSpan(closed, s)
		if err != nil {
			return nil, err
		}
		c.src = src
		t.parts, t.whole = []part{{expr: c}}, true
		return t, nil
	}
	spans, err := scanTemplate(src)
	if err != nil {
		var se *SyntaxError
		errors.As(err, &se)
		return nil, &Error{Offset: se.Offset, Message: se.Message}
	}
	cur := 0
	for _, s := range spans {
		if s.start > cur {
			t.parts = append(t.parts, part{lit: src[cur:s.start]})
		}
		c, err := compileSpan(src, s)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, part{expr: c})
		cur = s.end
	}
	if cur < len(src) {
		t.parts = append(t.parts, part{lit: src[cur:]})
	}
	t.whole = len(t.parts) == 1 && t.parts[0].expr != nil
	return t, nil
}

func compileSpan(src string, s *span) (*compiled, error) {
	tr := translate(src, s)
	c := &compiled{src: src[s.start:s.end], tr: tr}
	if strings.TrimSpace(tr.src) == "" {
		return nil, &Error{Offset: s.start, Message: "empty expression `<+>`"}
	}
	for _, in := range tr.inner {
		ic, err := compileSpan(src, in)
		if err != nil {
			return nil, err
		}
		c.inner = append(c.inner, ic)
	}
	p := &patcher{}
	prog, err := expr.Compile(tr.src, compileOptions(p)...)
	if p.err != nil {
		err = p.err
	}
	if err != nil {
		return nil, tr.errorAt(err, s)
	}
	c.prog = prog
	c.refs = tr.references(p.refs, s)
	return c, nil
}

// errorAt maps an expr error back to an offset in the original text.
func (tr *translation) errorAt(err error, s *span) *Error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &Error{Offset: s.start, Message: err.Error()}
	}
	off := runeToByte(tr.src, fe.From)
	orig := s.bodyEnd
	if off < len(tr.posMap) {
		orig = tr.posMap[off]
	}
	return &Error{Offset: orig, Message: cleanMessage(fe.Message)}
}

func runeToByte(s string, runes int) int {
	n := 0
	for i := range s {
		if n == runes {
			return i
		}
		n++
	}
	return len(s)
}

// cleanMessage removes the internal names of translated programs from expr's messages.
func cleanMessage(m string) string {
	m = strings.ReplaceAll(m, "__ref(__s, ", "")
	m = placeholderRe.ReplaceAllString(m, "<inner expression>")
	if i := strings.Index(m, " (1:"); i >= 0 {
		m = m[:i]
	}
	return m
}

var (
	runtimeOnce  sync.Once
	runtimeFuncs []expr.Option
)

func compileOptions(p *patcher) []expr.Option {
	runtimeOnce.Do(func() { runtimeFuncs = buildRuntime() })
	opts := []expr.Option{
		expr.DisableAllBuiltins(),
		expr.MaxNodes(2000),
		expr.Patch(p),
	}
	return append(opts, runtimeFuncs...)
}

// Eval evaluates the template. A Text template that is exactly one expression returns the typed
// value; otherwise the rendered string. A Condition returns a bool.
func (t *Template) Eval(scope *Scope, opts Options) (any, error) {
	return t.eval(&state{scope: scope, opts: opts})
}

func (t *Template) eval(st *state) (any, error) {
	if t.mode == Condition {
		v, err := t.parts[0].expr.run(st)
		if err != nil {
			return nil, err
		}
		b, err := truthy(v)
		if err != nil {
			return nil, &Error{Offset: 0, Message: "condition " + err.Error()}
		}
		return b, nil
	}
	if t.whole {
		st.missing = ""
		v, err := t.parts[0].expr.run(st)
		if err == nil && v == nil && st.missing != "" && st.opts.Unresolved == UnresolvedVerbatim {
			return t.src, nil
		}
		return normalize(v), err
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		st.missing = ""
		v, err := p.expr.run(st)
		if err != nil {
			return nil, err
		}
		if v == nil && st.missing != "" && st.opts.Unresolved == UnresolvedVerbatim {
			b.WriteString(p.expr.src)
			continue
		}
		b.WriteString(ToString(v))
	}
	return b.String(), nil
}

// Source returns the text the template was compiled from.
func (t *Template) Source() string { return t.src }

// state is one evaluation's bookkeeping, handed to runtime functions as the __s variable.
type state struct {
	scope   *Scope
	opts    Options
	depth   int
	missing string
}

// vms and envs are reused across evaluations: a fresh VM and environment map per expression
// were most of an evaluation's cost. An evaluation may nest others (inner expressions, values
// that hold expressions); each takes its own.
var (
	vms  = sync.Pool{New: func() any { return new(vm.VM) }}
	envs = sync.Pool{New: func() any { return make(map[string]any, 4) }}
)

func (c *compiled) run(st *state) (any, error) {
	env := envs.Get().(map[string]any)
	defer func() {
		clear(env)
		envs.Put(env)
	}()
	env[scopeVar] = st
	var vals []any
	if len(c.inner) > 0 {
		vals = make([]any, len(c.inner))
	}
	for i, in := range c.inner {
		v, err := in.run(st)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		env[innerName(i)] = v
	}
	for i, s := range c.tr.strs {
		var b strings.Builder
		for _, p := range s.parts {
			if p.inner < 0 {
				b.WriteString(p.lit)
			} else {
				b.WriteString(ToString(vals[p.inner]))
			}
		}
		env[strName(i)] = b.String()
	}
	machine := vms.Get().(*vm.VM)
	out, err := machine.Run(c.prog, env)
	vms.Put(machine)
	if err != nil {
		var ue *UnresolvedError
		if errors.As(err, &ue) {
			return nil, ue
		}
		var fe *file.Error
		if errors.As(err, &fe) {
			off := runeToByte(c.tr.src, fe.From)
			orig := 0
			if off < len(c.tr.posMap) {
				orig = c.tr.posMap[off]
			}
			msg := fe.Message
			if fe.Prev != nil {
				msg = fe.Prev.Error()
			}
			return nil, &Error{Offset: orig, Message: cleanMessage(msg)}
		}
		return nil, err
	}
	return out, nil
}

// Render compiles (cached) and evaluates a text.
func Render(src string, mode Mode, scope *Scope, opts Options) (any, error) {
	t, err := Compile(src, mode)
	if err != nil {
		return nil, err
	}
	return t.Eval(scope, opts)
}

// RenderString renders a text to a string.
func RenderString(src string, scope *Scope, opts Options) (string, error) {
	v, err := Render(src, Text, scope, opts)
	if err != nil {
		return "", err
	}
	return ToString(v), nil
}
