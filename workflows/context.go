package workflows

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
)

// The execution context is the expression data of spec 9.3: {"pipeline": {...}} with stages and
// steps keyed by identifier under their FQN containers. Workflows own it; it crosses the stage
// child boundary as JSON.

func unresolvedMode(s string) expressions.Options {
	switch s {
	case "verbatim":
		return expressions.Options{Unresolved: expressions.UnresolvedVerbatim}
	case "fail":
		return expressions.Options{Unresolved: expressions.UnresolvedFail}
	}
	return expressions.Options{Unresolved: expressions.UnresolvedNull}
}

// evalWhen evaluates a compiled condition at a node's FQN (spec 4.4): it must be a boolean.
func evalWhen(data map[string]any, fqn, cond string) (bool, error) {
	if cond == "" {
		return true, nil
	}
	v, err := expressions.Render(cond, expressions.Condition, expressions.NewScope(data, fqn), expressions.Options{})
	if err != nil {
		return false, fmt.Errorf("when condition %q: %v", cond, err)
	}
	b, _ := v.(bool)
	return b, nil
}

// renderVariables renders variables in order into a map, so a later variable can read an
// earlier one through the container it is stored in.
func renderVariables(vars []plan.Variable, into map[string]any, data map[string]any, fqn string) error {
	for _, v := range vars {
		val, err := expressions.Render(v.Value, expressions.Text, expressions.NewScope(data, fqn), expressions.Options{})
		if err != nil {
			return fmt.Errorf("variable %s: %v", v.Name, err)
		}
		if sr, ok := val.(expressions.SecretRef); ok {
			val = sr.String()
		} else if strings.EqualFold(v.Type, "Secret") {
			// A Secret variable's value is a secret identifier (spec 10.1).
			val = expressions.SecretRef{ID: expressions.ToString(val)}.String()
		}
		into[v.Name] = val
	}
	return nil
}

// renderSpec renders every string in a step spec. skip names fields rendered later by the
// step itself (Http output variables and assertion see the response).
func renderSpec(v any, scope *expressions.Scope, opts expressions.Options, path string, skip func(string) bool) (any, error) {
	switch x := v.(type) {
	case string:
		if !expressions.Has(x) || skip(path) {
			return x, nil
		}
		out, err := expressions.Render(x, expressions.Text, scope, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", strings.TrimPrefix(path, "."), err)
		}
		switch o := out.(type) {
		case nil:
			return nil, nil
		case string, bool, int64, float64:
			return o, nil
		}
		return expressions.ToString(out), nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			r, err := renderSpec(x[k], scope, opts, path+"."+k, skip)
			if err != nil {
				return nil, err
			}
			m[k] = r
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			r, err := renderSpec(e, scope, opts, path+"[]", skip)
			if err != nil {
				return nil, err
			}
			l[i] = r
		}
		return l, nil
	}
	return v, nil
}

// specView is a rendered spec as expressions read it (spec 11.3): name/value lists such as
// environmentVariables become maps keyed by name.
func specView(spec any) any {
	m, ok := spec.(map[string]any)
	if !ok {
		return spec
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if l, ok := v.([]any); ok && isNamedList(l) {
			vm := map[string]any{}
			for _, e := range l {
				em := e.(map[string]any)
				vm[fmt.Sprint(em["name"])] = em["value"]
			}
			out[k] = vm
			continue
		}
		out[k] = v
	}
	return out
}

func isNamedList(l []any) bool {
	if len(l) == 0 {
		return false
	}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"]; !ok {
			return false
		}
		if _, ok := m["identifier"]; ok {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// child returns m[key] as a map, creating it.
func child(m map[string]any, key string) map[string]any {
	if c, ok := m[key].(map[string]any); ok {
		return c
	}
	c := map[string]any{}
	m[key] = c
	return c
}
