package expressions

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
)

// buildRuntime declares the functions the patcher calls. Each takes plain values, so evaluation
// needs nothing but the scope.
func buildRuntime() []expr.Option {
	fns := map[string]func(a ...any) (any, error){
		"__ref": func(a ...any) (any, error) { return a[0].(*state).ref(a[1:]) },
		"__get": func(a ...any) (any, error) { return index(a[0], plainSegment(a[1])), nil },
		"__cat": func(a ...any) (any, error) {
			var b strings.Builder
			for _, x := range a {
				b.WriteString(ToString(x))
			}
			return gluedName(b.String()), nil
		},
		"__m": func(a ...any) (any, error) {
			name := a[1].(string)
			v, err := methods[name](a[0], a[2:])
			if err != nil {
				return nil, fmt.Errorf("%s(): %v", name, err)
			}
			return v, nil
		},
		"__cfg": func(a ...any) (any, error) { return a[0].(*state).configFile(a[1], a[2].(string), a[3:]) },
		"__fn": func(a ...any) (any, error) {
			name := a[0].(string)
			v, err := functors[name](a[1:])
			if err != nil {
				return nil, fmt.Errorf("%s(): %v", name, err)
			}
			return v, nil
		},
		"__add": func(a ...any) (any, error) { return add(a[0], a[1]) },
		"__sub": func(a ...any) (any, error) { return arith(a[0], a[1], "-") },
		"__mul": func(a ...any) (any, error) { return arith(a[0], a[1], "*") },
		"__div": func(a ...any) (any, error) { return arith(a[0], a[1], "/") },
		"__mod": func(a ...any) (any, error) { return arith(a[0], a[1], "%") },
		"__neg": func(a ...any) (any, error) { return arith(int64(0), a[0], "-") },
		"__num": func(a ...any) (any, error) {
			if n, ok := toNumber(a[0]); ok {
				return n, nil
			}
			return nil, fmt.Errorf("unary + needs a number, got %s", typeName(a[0]))
		},
		"__eq":   func(a ...any) (any, error) { return equal(a[0], a[1]), nil },
		"__ne":   func(a ...any) (any, error) { return !equal(a[0], a[1]), nil },
		"__lt":   func(a ...any) (any, error) { return compare(a[0], a[1], "<") },
		"__le":   func(a ...any) (any, error) { return compare(a[0], a[1], "<=") },
		"__gt":   func(a ...any) (any, error) { return compare(a[0], a[1], ">") },
		"__ge":   func(a ...any) (any, error) { return compare(a[0], a[1], ">=") },
		"__bool": func(a ...any) (any, error) { return truthy(a[0]) },
		"__elvis": func(a ...any) (any, error) {
			if a[0] == nil || a[0] == false {
				return a[1], nil
			}
			return a[0], nil
		},
		"__match":      func(a ...any) (any, error) { return matchOp(a[0], a[1]) },
		"__startsWith": func(a ...any) (any, error) { return strOp(a[0], a[1], strings.HasPrefix) },
		"__endsWith":   func(a ...any) (any, error) { return strOp(a[0], a[1], strings.HasSuffix) },
		"__in":         func(a ...any) (any, error) { return containsValue(a[1], a[0]) },
		"__containsOp": func(a ...any) (any, error) { return containsValue(a[0], a[1]) },
		"__empty":      func(a ...any) (any, error) { return want(a, 1, func() (any, error) { return sizeOf(a[0]) == 0, nil }) },
		"__size": func(a ...any) (any, error) {
			return want(a, 1, func() (any, error) { return int64(sizeOf(a[0])), nil })
		},
	}
	opts := make([]expr.Option, 0, len(fns))
	for name, fn := range fns {
		opts = append(opts, expr.Function(name, fn))
	}
	return opts
}

// matchOp is JEXL's =~: regex match for a string pattern (whole value, as Java's matches), and
// membership for a list.
func matchOp(v, pat any) (any, error) {
	if l, ok := normalize(pat).([]any); ok {
		return containsValue(l, v)
	}
	if v == nil {
		return false, nil
	}
	s, err := asString(v, "left side of =~")
	if err != nil {
		return nil, err
	}
	p, err := asString(pat, "pattern")
	if err != nil {
		return nil, err
	}
	re, err := compileRegex(`^(?:` + p + `)$`)
	if err != nil {
		return nil, err
	}
	return re.MatchString(s), nil
}

func strOp(a, b any, f func(s, x string) bool) (any, error) {
	if a == nil || b == nil {
		return false, nil
	}
	s, err := asString(a, "left side")
	if err != nil {
		return nil, err
	}
	x, err := asString(b, "right side")
	if err != nil {
		return nil, err
	}
	return f(s, x), nil
}

// ref resolves a reference. String values holding expressions are resolved again, up to
// MaxDepth levels; deeper chains count as unresolved. As in the reference engine, such a value
// is first evaluated as an expression (`'v' + <+company>` is "vharness", `<+a> + 2 * <+b>` a
// number); a value that is no expression, or does not resolve as one, is rendered as text
// (`Hello <+company>`, `<+f><+g>`).
func (st *state) ref(segs []any) (any, error) {
	_, glued := segs[0].(gluedName)
	glued = glued && len(segs) == 1
	for i := range segs {
		segs[i] = plainSegment(segs[i])
	}
	v := st.scope.resolve(segs)
	if v == nil && glued {
		// An inner value glued to text that names nothing is that text, as in the reference
		// engine: <+ <+a>==5 ? <+<+f>harness> : ... > is "abcharness".
		return segs[0], nil
	}
	if v == nil {
		if paths := st.scope.ambiguousStep(segs); paths != nil {
			return nil, fmt.Errorf("<+%s> matches %d steps in different step groups (%s); write the step's full path",
				PathString(segs), len(paths), strings.Join(paths, ", "))
		}
		if st.missing == "" {
			st.missing = PathString(segs)
		}
		if st.opts.Unresolved == UnresolvedFail {
			return nil, &UnresolvedError{Path: PathString(segs)}
		}
		return nil, nil
	}
	s, ok := v.(string)
	if !ok || !strings.Contains(s, "<+") {
		return v, nil
	}
	if st.depth >= MaxDepth {
		st.missing = PathString(segs)
		if st.opts.Unresolved == UnresolvedFail {
			return nil, fmt.Errorf("expression chain deeper than %d levels at <+%s>", MaxDepth, PathString(segs))
		}
		return nil, nil
	}
	t, err := Compile(s, Text)
	if err != nil {
		return nil, fmt.Errorf("value of <+%s> holds a broken expression: %v", PathString(segs), err)
	}
	if !t.whole {
		if c, err := Compile(s, Condition); err == nil {
			probe := &state{scope: st.scope, opts: st.opts, depth: st.depth + 1}
			if v, err := c.parts[0].expr.run(probe); err == nil && probe.missing == "" {
				return normalize(v), nil
			}
		}
	}
	inner := &state{scope: st.scope, opts: st.opts, depth: st.depth + 1}
	out, err := t.eval(inner)
	if inner.missing != "" && st.missing == "" {
		st.missing = inner.missing
	}
	return out, err
}

// gluedName is a path segment written as an inner value glued to text: `<+<+f>harness>`,
// `deploy<+strategy.identifierPostFix>`.
type gluedName string

func plainSegment(v any) any {
	if g, ok := v.(gluedName); ok {
		return string(g)
	}
	return v
}
