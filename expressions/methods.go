package expressions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

type method func(recv any, args []any) (any, error)

// methods are the Java methods Harness users call on values (spec 9.2). Each checks its receiver
// type, so `<+x>.length()` on a list is an error that names the problem, not a silent null.
var methods map[string]method

func init() {
	methods = map[string]method{
		// java.lang.String
		"contains":   containsMethod,
		"startsWith": strMethod2(strings.HasPrefix),
		"endsWith":   strMethod2(strings.HasSuffix),
		"equals": func(r any, a []any) (any, error) {
			return want(a, 1, func() (any, error) { return equal(r, a[0]), nil })
		},
		"equalsIgnoreCase": strMethod2(strings.EqualFold),
		"indexOf":          indexOfMethod,
		"lastIndexOf":      strMethodArgs(1, func(s string, a []string) any { return runeIndex(s, strings.LastIndex(s, a[0])) }),
		"charAt":           charAtMethod,
		"substring":        substringMethod,
		"split":            splitMethod,
		"replace":          strMethodArgs(2, func(s string, a []string) any { return strings.ReplaceAll(s, a[0], a[1]) }),
		"replaceAll":       regexReplaceMethod(-1),
		"replaceFirst":     regexReplaceMethod(1),
		"toLowerCase":      strMethodArgs(0, func(s string, _ []string) any { return strings.ToLower(s) }),
		"toUpperCase":      strMethodArgs(0, func(s string, _ []string) any { return strings.ToUpper(s) }),
		"trim":             strMethodArgs(0, func(s string, _ []string) any { return strings.TrimSpace(s) }),
		"strip":            strMethodArgs(0, func(s string, _ []string) any { return strings.TrimSpace(s) }),
		"length":           lengthMethod,
		"isEmpty": func(r any, a []any) (any, error) {
			return want(a, 0, func() (any, error) { return sizeOf(r) == 0, nil })
		},
		"isBlank":  strMethodArgs(0, func(s string, _ []string) any { return strings.TrimSpace(s) == "" }),
		"matches":  matchesMethod,
		"concat":   strMethodArgs(1, func(s string, a []string) any { return s + a[0] }),
		"toString": func(r any, a []any) (any, error) { return want(a, 0, func() (any, error) { return ToString(r), nil }) },
		// numbers
		"intValue":    numberMethod(func(f float64) any { return int64(f) }),
		"longValue":   numberMethod(func(f float64) any { return int64(f) }),
		"doubleValue": numberMethod(func(f float64) any { return f }),
		// lists and maps
		"size": func(r any, a []any) (any, error) {
			return want(a, 0, func() (any, error) { return int64(sizeOf(r)), nil })
		},
		"get":         getMethod,
		"keySet":      mapMethod(func(m map[string]any) any { return toAnyList(sortedKeys(m)) }),
		"values":      mapMethod(func(m map[string]any) any { return mapValues(m) }),
		"containsKey": containsKeyMethod,
	}
}

func want(args []any, n int, f func() (any, error)) (any, error) {
	if len(args) != n {
		return nil, fmt.Errorf("takes %d argument(s), got %d", n, len(args))
	}
	return f()
}

func asString(v any, what string) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case SecretRef:
		return "", fmt.Errorf("secret values cannot be inspected in expressions")
	case nil:
		return "", fmt.Errorf("%s is null", what)
	}
	if _, ok := toNumber(v); ok {
		return ToString(v), nil
	}
	if b, ok := v.(bool); ok {
		return ToString(b), nil
	}
	return "", fmt.Errorf("%s must be a string, got %s", what, typeName(v))
}

func strMethodArgs(n int, f func(s string, args []string) any) method {
	return func(r any, a []any) (any, error) {
		if len(a) != n {
			return nil, fmt.Errorf("takes %d argument(s), got %d", n, len(a))
		}
		s, err := asString(r, "receiver")
		if err != nil {
			return nil, err
		}
		sa := make([]string, n)
		for i := range a {
			if sa[i], err = asString(a[i], "argument"); err != nil {
				return nil, err
			}
		}
		return f(s, sa), nil
	}
}

func strMethod2(f func(a, b string) bool) method {
	return strMethodArgs(1, func(s string, a []string) any { return f(s, a[0]) })
}

func containsMethod(r any, a []any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("takes 1 argument, got %d", len(a))
	}
	return containsValue(r, a[0])
}

func containsValue(r, x any) (any, error) {
	switch c := normalize(r).(type) {
	case []any:
		for _, e := range c {
			if equal(e, x) {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		_, ok := c[ToString(x)]
		return ok, nil
	}
	s, err := asString(r, "receiver")
	if err != nil {
		return nil, err
	}
	sub, err := asString(x, "argument")
	if err != nil {
		return nil, err
	}
	return strings.Contains(s, sub), nil
}

func indexOfMethod(r any, a []any) (any, error) {
	if l, ok := normalize(r).([]any); ok {
		return want(a, 1, func() (any, error) {
			for i, e := range l {
				if equal(e, a[0]) {
					return int64(i), nil
				}
			}
			return int64(-1), nil
		})
	}
	return strMethodArgs(1, func(s string, x []string) any { return runeIndex(s, strings.Index(s, x[0])) })(r, a)
}

// runeIndex converts a byte index into a character index, as Java counts.
func runeIndex(s string, byteIdx int) any {
	if byteIdx < 0 {
		return int64(-1)
	}
	return int64(utf8.RuneCountInString(s[:byteIdx]))
}

func intArg(v any, what string) (int, error) {
	n, ok := toNumber(v)
	if !ok {
		return 0, fmt.Errorf("%s must be a number, got %s", what, typeName(v))
	}
	return int(asFloat(n)), nil
}

func charAtMethod(r any, a []any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("takes 1 argument, got %d", len(a))
	}
	s, err := asString(r, "receiver")
	if err != nil {
		return nil, err
	}
	i, err := intArg(a[0], "index")
	if err != nil {
		return nil, err
	}
	rs := []rune(s)
	if i < 0 || i >= len(rs) {
		return nil, fmt.Errorf("index %d out of range for length %d", i, len(rs))
	}
	return string(rs[i]), nil
}

func substringMethod(r any, a []any) (any, error) {
	if len(a) != 1 && len(a) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 arguments, got %d", len(a))
	}
	s, err := asString(r, "receiver")
	if err != nil {
		return nil, err
	}
	rs := []rune(s)
	begin, err := intArg(a[0], "begin index")
	if err != nil {
		return nil, err
	}
	end := len(rs)
	if len(a) == 2 {
		if end, err = intArg(a[1], "end index"); err != nil {
			return nil, err
		}
	}
	if begin < 0 || end > len(rs) || begin > end {
		return nil, fmt.Errorf("substring(%d, %d) out of range for length %d", begin, end, len(rs))
	}
	return string(rs[begin:end]), nil
}

func splitMethod(r any, a []any) (any, error) {
	if len(a) != 1 && len(a) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 arguments, got %d", len(a))
	}
	s, err := asString(r, "receiver")
	if err != nil {
		return nil, err
	}
	sep, err := asString(a[0], "separator")
	if err != nil {
		return nil, err
	}
	re, err := compileRegex(sep)
	if err != nil {
		return nil, err
	}
	limit := -1
	if len(a) == 2 {
		if limit, err = intArg(a[1], "limit"); err != nil {
			return nil, err
		}
		if limit == 0 {
			limit = -1
		}
	}
	parts := re.Split(s, limit)
	if len(a) == 1 || limit < 0 {
		// Java drops trailing empty strings when no positive limit is given.
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
	}
	return toAnyList(parts), nil
}

func regexReplaceMethod(n int) method {
	return func(r any, a []any) (any, error) {
		if len(a) != 2 {
			return nil, fmt.Errorf("takes 2 arguments, got %d", len(a))
		}
		s, err := asString(r, "receiver")
		if err != nil {
			return nil, err
		}
		pat, err := asString(a[0], "pattern")
		if err != nil {
			return nil, err
		}
		rep, err := asString(a[1], "replacement")
		if err != nil {
			return nil, err
		}
		re, err := compileRegex(pat)
		if err != nil {
			return nil, err
		}
		rep = javaReplacement(rep)
		if n < 0 {
			return re.ReplaceAllString(s, rep), nil
		}
		done := false
		return re.ReplaceAllStringFunc(s, func(m string) string {
			if done {
				return m
			}
			done = true
			return re.ReplaceAllString(m, rep)
		}), nil
	}
}

// javaReplacement turns Java's $1 group references into Go's ${1}.
var javaGroupRe = regexp.MustCompile(`\$(\d+)`)

func javaReplacement(s string) string { return javaGroupRe.ReplaceAllString(s, "$${$1}") }

func lengthMethod(r any, a []any) (any, error) {
	if len(a) != 0 {
		return nil, fmt.Errorf("takes no arguments")
	}
	if _, err := asString(r, "receiver"); err != nil {
		if _, isList := normalize(r).([]any); !isList {
			return nil, err
		}
	}
	return int64(sizeOf(r)), nil
}

func matchesMethod(r any, a []any) (any, error) {
	return strMethodArgsErr(r, a, func(s, pat string) (any, error) {
		re, err := compileRegex(`^(?:` + pat + `)$`)
		if err != nil {
			return nil, err
		}
		return re.MatchString(s), nil
	})
}

func strMethodArgsErr(r any, a []any, f func(s, arg string) (any, error)) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("takes 1 argument, got %d", len(a))
	}
	s, err := asString(r, "receiver")
	if err != nil {
		return nil, err
	}
	arg, err := asString(a[0], "argument")
	if err != nil {
		return nil, err
	}
	return f(s, arg)
}

func numberMethod(f func(float64) any) method {
	return func(r any, a []any) (any, error) {
		n, ok := toNumber(r)
		if !ok {
			return nil, fmt.Errorf("receiver must be a number, got %s", typeName(r))
		}
		return want(a, 0, func() (any, error) { return f(asFloat(n)), nil })
	}
}

func sizeOf(v any) int {
	switch x := normalize(v).(type) {
	case nil:
		return 0
	case string:
		return utf8.RuneCountInString(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return len(ToString(v))
}

func getMethod(r any, a []any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("takes 1 argument, got %d", len(a))
	}
	return index(r, a[0]), nil
}

// index reads a map key or list element; a missing one is null, as JEXL returns.
func index(r, k any) any {
	switch c := r.(type) {
	case map[string]any:
		if s, ok := k.(string); ok {
			return c[s]
		}
		return c[ToString(k)]
	case []any:
		i, err := intArg(k, "index")
		if err != nil || i < 0 || i >= len(c) {
			return nil
		}
		return c[i]
	case nil:
		return nil
	case string, bool, int, int64, float64, SecretRef:
		return nil
	}
	return index(normalize(r), k)
}

func mapMethod(f func(map[string]any) any) method {
	return func(r any, a []any) (any, error) {
		m, ok := normalize(r).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("receiver must be a map, got %s", typeName(r))
		}
		return want(a, 0, func() (any, error) { return f(m), nil })
	}
}

func containsKeyMethod(r any, a []any) (any, error) {
	m, ok := normalize(r).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("receiver must be a map, got %s", typeName(r))
	}
	return want(a, 1, func() (any, error) { _, ok := m[ToString(a[0])]; return ok, nil })
}

func mapValues(m map[string]any) any {
	out := make([]any, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func toAnyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

var regexCache sync.Map // pattern -> *regexp.Regexp

// compileRegex compiles Java-style patterns with Go's RE2 engine, caching them: patterns come
// from pipeline text and are reused on every evaluation.
func compileRegex(p string) (*regexp.Regexp, error) {
	if re, ok := regexCache.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", p, err)
	}
	regexCache.Store(p, re)
	return re, nil
}

// parseJSON accepts a JSON string or an already structured value.
func parseJSON(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return normalize(v), nil
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return out, nil
}
