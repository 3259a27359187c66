package expressions

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/antchfx/xmlquery"
	"github.com/antchfx/xpath"
)

type functor func(args []any) (any, error)

// functorNamespaces are the roots that name function libraries rather than context paths.
var functorNamespaces = map[string]bool{"json": true, "xml": true, "regex": true, "shell": true, "secrets": true}

// functors are Harness's helper libraries (spec 9.2). All are pure functions of their arguments.
var functors = map[string]functor{
	"json.select": func(a []any) (any, error) {
		return args2(a, func(path string, doc any) (any, error) { return jsonPath(doc, path) })
	},
	"json.list": func(a []any) (any, error) {
		return args2(a, func(path string, doc any) (any, error) {
			v, err := jsonPath(doc, path)
			if err != nil || v == nil {
				return v, err
			}
			if l, ok := v.([]any); ok {
				return l, nil
			}
			return nil, fmt.Errorf("json.list: value at %q is %s, not a list", path, typeName(v))
		})
	},
	"json.object": func(a []any) (any, error) {
		if len(a) != 1 {
			return nil, fmt.Errorf("json.object takes 1 argument, got %d", len(a))
		}
		return parseJSON(a[0])
	},
	"json.format": func(a []any) (any, error) {
		if len(a) != 1 {
			return nil, fmt.Errorf("json.format takes 1 argument, got %d", len(a))
		}
		b, err := json.Marshal(normalize(a[0]))
		return string(b), err
	},
	"xml.select": func(a []any) (any, error) {
		if len(a) == 2 && a[1] == nil {
			return nil, nil
		}
		return strArgs(a, 2, func(s []string) (any, error) { return xmlSelect(s[0], s[1]) })
	},
	"regex.match": func(a []any) (any, error) {
		return strArgs(a, 2, func(s []string) (any, error) {
			re, err := compileRegex(s[0])
			if err != nil {
				return nil, err
			}
			return re.MatchString(s[1]), nil
		})
	},
	"regex.extract": func(a []any) (any, error) {
		if len(a) == 2 && a[1] == nil {
			return "", nil
		}
		return strArgs(a, 2, func(s []string) (any, error) {
			re, err := compileRegex(s[0])
			if err != nil {
				return nil, err
			}
			for _, m := range re.FindAllString(s[1], -1) {
				if m != "" {
					return m, nil
				}
			}
			return "", nil
		})
	},
	"regex.replace": func(a []any) (any, error) {
		return strArgs(a, 3, func(s []string) (any, error) {
			re, err := compileRegex(s[0])
			if err != nil {
				return nil, err
			}
			return re.ReplaceAllString(s[2], javaReplacement(s[1])), nil
		})
	},
	"shell.escape": func(a []any) (any, error) {
		return strArgs(a, 1, func(s []string) (any, error) { return escapeChars(s[0], shellSpecial), nil })
	},
	"shell.quote": func(a []any) (any, error) {
		return strArgs(a, 1, func(s []string) (any, error) {
			return "'" + strings.ReplaceAll(s[0], "'", `'\''`) + "'", nil
		})
	},
	"shell.doubleQuote": func(a []any) (any, error) {
		return strArgs(a, 1, func(s []string) (any, error) { return `"` + escapeChars(s[0], "\\\"$`") + `"`, nil })
	},
	"shell.enclose": func(a []any) (any, error) {
		return strArgs(a, 2, func(s []string) (any, error) { return s[0] + s[1] + s[0], nil })
	},
	"shell.escapeChars": func(a []any) (any, error) {
		return strArgs(a, 2, func(s []string) (any, error) { return escapeChars(s[0], s[1]), nil })
	},
	"secrets.getValue": func(a []any) (any, error) {
		return strArgs(a, 1, func(s []string) (any, error) {
			if !secretIDRe.MatchString(s[0]) {
				return nil, fmt.Errorf("secrets.getValue: %q is not a secret identifier (letters, digits, _ - $, optional org. or account. prefix)", s[0])
			}
			return SecretRef{ID: s[0]}, nil
		})
	},
}

const shellSpecial = " \t\n!\"#$&'()*,;<>?[\\]^`{|}~"

func escapeChars(s, chars string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(chars, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func strArgs(a []any, n int, f func([]string) (any, error)) (any, error) {
	if len(a) != n {
		return nil, fmt.Errorf("takes %d argument(s), got %d", n, len(a))
	}
	s := make([]string, n)
	for i := range a {
		var err error
		if s[i], err = asString(a[i], fmt.Sprintf("argument %d", i+1)); err != nil {
			return nil, err
		}
	}
	return f(s)
}

func args2(a []any, f func(path string, doc any) (any, error)) (any, error) {
	if len(a) != 2 {
		return nil, fmt.Errorf("takes 2 arguments (path, json), got %d", len(a))
	}
	path, err := asString(a[0], "path")
	if err != nil {
		return nil, err
	}
	doc, err := parseJSON(a[1])
	if err != nil {
		return nil, err
	}
	return f(path, doc)
}

// jsonPath reads a dotted path with optional [i] indexes (`build.id`, `$.items[0].name`).
func jsonPath(doc any, path string) (any, error) {
	path = strings.TrimPrefix(strings.TrimPrefix(path, "$"), ".")
	cur := doc
	for path != "" {
		var key string
		switch {
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, fmt.Errorf("json path: missing ] in %q", path)
			}
			key, path = strings.Trim(path[1:end], `"'`), path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			key, path = path[:end], path[end:]
		}
		path = strings.TrimPrefix(path, ".")
		if l, ok := cur.([]any); ok {
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(l) {
				return nil, nil
			}
			cur = l[i]
			continue
		}
		cur = index(cur, key)
		if cur == nil {
			return nil, nil
		}
	}
	return cur, nil
}

// xmlSelect evaluates an XPath against an XML text and gives its string value, as XPath's
// string() does: the text of the first node selected, or the number or boolean it computes.
func xmlSelect(path, text string) (any, error) {
	expr, err := xpath.Compile(path)
	if err != nil {
		return nil, fmt.Errorf("xml.select: XPath %q: %v", path, err)
	}
	doc, err := xmlquery.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("xml.select: the document is not XML: %v", err)
	}
	switch v := expr.Evaluate(xmlquery.CreateXPathNavigator(doc)).(type) {
	case *xpath.NodeIterator:
		if v.MoveNext() {
			return v.Current().Value(), nil
		}
		return nil, nil
	case float64:
		if v == float64(int64(v)) {
			return int64(v), nil
		}
		return v, nil
	default:
		return v, nil
	}
}
