package manifests

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// OpenShift templates are processed as `oc process --local -f TEMPLATE --param-file=FILE...`
// does, in process: the template's parameters take their values from the param files (later
// files win) or their own `value`, or are generated from their `from` expression; `${NAME}`
// in any string of the objects becomes the value, and a string that is exactly `${{NAME}}`
// becomes the value as JSON (a number, a boolean, a list). The template's `labels` go on every
// object. Written here rather than borrowed: OpenShift's own processing package pulls in its
// API machinery at versions other than the ones Gantry builds with.

// templateParam is one of a template's parameters.
type templateParam struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Required bool   `json:"required"`
	Generate string `json:"generate"`
	From     string `json:"from"`
}

// OpenshiftTemplate processes the template file with the param files into objects.
func OpenshiftTemplate(tmpl File, params []File) ([]Object, error) {
	docs, err := Split(tmpl.Path, []byte(tmpl.Text))
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 || docs[0].GetKind() != "Template" {
		return nil, fmt.Errorf("%s: an OpenshiftTemplate manifest is one object of kind Template (template.openshift.io/v1)", tmpl.Path)
	}
	t := docs[0].Object
	var decl []templateParam
	if raw, ok := t["parameters"]; ok {
		if err := remarshal(raw, &decl); err != nil {
			return nil, fmt.Errorf("%s: parameters: %v", tmpl.Path, err)
		}
	}
	values := map[string]string{}
	known := map[string]bool{}
	for _, p := range decl {
		known[p.Name] = true
	}
	for _, f := range params {
		if err := readParamFile(f, known, values); err != nil {
			return nil, err
		}
	}
	for _, p := range decl {
		if _, ok := values[p.Name]; ok {
			continue
		}
		switch {
		case p.Value != "":
			values[p.Name] = p.Value
		case p.Generate == "expression":
			v, err := generate(p.From)
			if err != nil {
				return nil, fmt.Errorf("%s: parameter %s: %v", tmpl.Path, p.Name, err)
			}
			values[p.Name] = v
		case p.Required:
			return nil, fmt.Errorf("%s: parameter %s is required and has no value; give it in a param file (%s=...)", tmpl.Path, p.Name, p.Name)
		default:
			values[p.Name] = ""
		}
	}
	objs, _ := t["objects"].([]any)
	labels, _, _ := unstructured.NestedStringMap(t, "labels")
	var out []Object
	for i, o := range objs {
		m, ok := substitute(o, values).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: objects[%d] is not an object", tmpl.Path, i)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: objects[%d] needs apiVersion, kind and metadata.name", tmpl.Path, i)
		}
		if len(labels) > 0 {
			l := u.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			for k, v := range labels {
				l[k] = v
			}
			u.SetLabels(l)
		}
		out = append(out, Object{File: tmpl.Path, Unstructured: u})
	}
	return out, nil
}

// remarshal converts decoded YAML into a typed value.
func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// readParamFile reads NAME=value lines (blank lines and # comments skipped, a value may be
// quoted) into values; a name the template does not declare is an error, as oc makes it.
func readParamFile(f File, known map[string]bool, values map[string]string) error {
	sc := bufio.NewScanner(strings.NewReader(f.Text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%s:%d: want NAME=value", f.Path, n)
		}
		if !known[name] {
			return fmt.Errorf("%s:%d: the template has no parameter %s", f.Path, n, name)
		}
		if u, err := strconv.Unquote(value); err == nil && len(value) > 1 && (value[0] == '"' || value[0] == '\'') {
			value = u
		} else if len(value) > 1 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = value[1 : len(value)-1]
		}
		values[name] = value
	}
	return sc.Err()
}

var (
	paramRef     = regexp.MustCompile(`\$\{([a-zA-Z0-9_]+)\}`)
	jsonParamRef = regexp.MustCompile(`^\$\{\{([a-zA-Z0-9_]+)\}\}$`)
)

// substitute replaces parameter references in every string of v.
func substitute(v any, values map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = substitute(e, values)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = substitute(e, values)
		}
		return x
	case string:
		if m := jsonParamRef.FindStringSubmatch(x); m != nil {
			if val, ok := values[m[1]]; ok {
				var decoded any
				if err := utiljson.Unmarshal([]byte(val), &decoded); err == nil {
					return decoded
				}
				return val
			}
			return x
		}
		return paramRef.ReplaceAllStringFunc(x, func(ref string) string {
			if val, ok := values[ref[2:len(ref)-1]]; ok {
				return val
			}
			return ref
		})
	}
	return v
}

// Character classes of OpenShift's parameter generator.
const (
	alphaChars  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digitChars  = "0123456789"
	symbolChars = "~!@#$%^&*()-_+={}[]\\|<,>.?/\"';:`"
)

var generatorPart = regexp.MustCompile(`(\[[^\]]+\]|\\[wdaA]|.)(\{(\d+)\})?`)

// generate makes a value from an expression such as `[a-zA-Z0-9]{12}` or `admin\d{3}`:
// bracketed ranges and \w \d \a \A classes, each repeated {n} times, other characters as they
// are.
func generate(expr string) (string, error) {
	if expr == "" {
		return "", fmt.Errorf("generate: expression needs `from`")
	}
	var b strings.Builder
	for _, m := range generatorPart.FindAllStringSubmatch(expr, -1) {
		count := 1
		if m[3] != "" {
			count, _ = strconv.Atoi(m[3])
		}
		var chars string
		switch tok := m[1]; {
		case tok == `\w`:
			chars = alphaChars + digitChars + "_"
		case tok == `\d`:
			chars = digitChars
		case tok == `\a`:
			chars = alphaChars
		case tok == `\A`:
			chars = symbolChars
		case strings.HasPrefix(tok, "[") && len(tok) > 2:
			var err error
			if chars, err = charRange(tok[1 : len(tok)-1]); err != nil {
				return "", fmt.Errorf("from %q: %v", expr, err)
			}
		default:
			b.WriteString(strings.Repeat(tok, count))
			continue
		}
		for range count {
			n, err := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
			if err != nil {
				return "", err
			}
			b.WriteByte(chars[n.Int64()])
		}
	}
	return b.String(), nil
}

// charRange expands a bracket's contents: a-z ranges, \w \d \a \A classes, single characters.
func charRange(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			switch s[i+1] {
			case 'w':
				b.WriteString(alphaChars + digitChars + "_")
			case 'd':
				b.WriteString(digitChars)
			case 'a':
				b.WriteString(alphaChars)
			case 'A':
				b.WriteString(symbolChars)
			default:
				b.WriteByte(s[i+1])
			}
			i++
		case i+2 < len(s) && s[i+1] == '-':
			if s[i] > s[i+2] {
				return "", fmt.Errorf("range %c-%c is backwards", s[i], s[i+2])
			}
			for c := s[i]; c <= s[i+2]; c++ {
				b.WriteByte(c)
			}
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("empty range")
	}
	return b.String(), nil
}
