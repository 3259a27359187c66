package expressions

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// SecretRef is an opaque reference to a secret (`secrets.getValue("id")`). Expressions never see
// the plaintext: a reference rendered into text becomes its canonical expression again, which
// only the activity that runs the step resolves (ResolveSecrets), so the value never reaches
// workflow history.
type SecretRef struct{ ID string }

func (s SecretRef) String() string { return `<+secrets.getValue("` + s.ID + `")>` }

// ToString renders a value the way Harness does in interpolated text: null as "null", integral
// numbers without a fraction (spec 10.1 Decision), lists and maps as JSON.
func ToString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case SecretRef:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	if n, ok := toNumber(v); ok {
		return ToString(n)
	}
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// normalize turns typed Go containers into []any / map[string]any for JSON and walking.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case nil, string, bool, int64, float64, SecretRef, []any, map[string]any:
		return v
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		for _, k := range rv.MapKeys() {
			out[fmt.Sprint(k.Interface())] = normalize(rv.MapIndex(k).Interface())
		}
		return out
	}
	if n, ok := toNumber(v); ok {
		return n
	}
	return v
}

// toNumber converts numbers and numeric strings; ints stay int64 so integer arithmetic is exact.
func toNumber(v any) (any, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		return x, true
	case string:
		s := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && s != "" && !strings.ContainsAny(s, "xXnN") {
			return f, true
		}
		return nil, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), true
	case reflect.Float32:
		return rv.Float(), true
	}
	return nil, false
}

func asFloat(n any) float64 {
	if i, ok := n.(int64); ok {
		return float64(i)
	}
	return n.(float64)
}

func isString(v any) bool { _, ok := v.(string); return ok }

// truthy converts a condition operand. Booleans and the strings "true"/"false" (any case) are
// accepted (spec 4.4 Decision); anything else is an error so a bad condition is reported, not
// silently treated as false.
func truthy(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("expected a boolean, got string %q", x)
	case nil:
		return false, fmt.Errorf("expected a boolean, got null (unresolved expression?)")
	}
	return false, fmt.Errorf("expected a boolean, got %s %s", typeName(v), ToString(v))
}

// TypeName names a value's type in messages and in `gantry eval` output.
func TypeName(v any) string { return typeName(v) }

func typeName(v any) string {
	switch normalize(v).(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int:
		return "integer"
	case float64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	case SecretRef:
		return "secret"
	}
	return fmt.Sprintf("%T", v)
}

// equal implements JEXL-style ==: numbers compare numerically (numeric strings included),
// a string equals a boolean only when it spells it (spec 4.4 Decision), null equals only null.
func equal(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if ab, ok := a.(bool); ok {
		return boolEq(ab, b)
	}
	if bb, ok := b.(bool); ok {
		return boolEq(bb, a)
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return sa == sb
		}
	}
	na, okA := toNumber(a)
	nb, okB := toNumber(b)
	if okA && okB {
		return asFloat(na) == asFloat(nb)
	}
	if isString(a) || isString(b) {
		return ToString(a) == ToString(b)
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func boolEq(b bool, other any) bool {
	switch o := other.(type) {
	case bool:
		return b == o
	case string:
		s := strings.ToLower(strings.TrimSpace(o))
		return (s == "true" && b) || (s == "false" && !b)
	}
	return false
}

func compare(a, b any, op string) (bool, error) {
	na, okA := toNumber(a)
	nb, okB := toNumber(b)
	if !okA || !okB {
		return false, fmt.Errorf("%s compares numbers, got %s and %s", op, typeName(a), typeName(b))
	}
	x, y := asFloat(na), asFloat(nb)
	switch op {
	case "<":
		return x < y, nil
	case "<=":
		return x <= y, nil
	case ">":
		return x > y, nil
	}
	return x >= y, nil
}

// add follows JEXL: two strings concatenate, numbers (and numeric strings next to a number)
// add, and anything else concatenates, so "/tmp/" + <+pipeline.sequenceId> just works.
func add(a, b any) (any, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("+ has a null operand (an unresolved reference?): %s and %s", typeName(a), typeName(b))
	}
	if isString(a) && isString(b) {
		return a.(string) + b.(string), nil
	}
	na, okA := toNumber(a)
	nb, okB := toNumber(b)
	if okA && okB {
		ia, aInt := na.(int64)
		ib, bInt := nb.(int64)
		if aInt && bInt {
			return ia + ib, nil
		}
		return asFloat(na) + asFloat(nb), nil
	}
	return ToString(a) + ToString(b), nil
}

func arith(a, b any, op string) (any, error) {
	na, okA := toNumber(a)
	nb, okB := toNumber(b)
	if !okA || !okB {
		return nil, fmt.Errorf("%s needs numbers, got %s and %s", op, typeName(a), typeName(b))
	}
	ia, aInt := na.(int64)
	ib, bInt := nb.(int64)
	if aInt && bInt {
		switch op {
		case "-":
			return ia - ib, nil
		case "*":
			return ia * ib, nil
		case "/", "%":
			if ib == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			if op == "/" {
				return ia / ib, nil
			}
			return ia % ib, nil
		}
	}
	x, y := asFloat(na), asFloat(nb)
	switch op {
	case "-":
		return x - y, nil
	case "*":
		return x * y, nil
	case "/":
		if y == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return x / y, nil
	}
	if y == 0 {
		return nil, fmt.Errorf("division by zero")
	}
	return math.Mod(x, y), nil
}

// sortedKeys returns map keys in order, so nothing depends on Go's map iteration order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
