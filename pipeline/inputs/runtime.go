// Package inputs reads runtime inputs (`<+input>` with its methods, spec 9.7), input sets and
// overlay input sets (spec 12), and merges their values into a pipeline by FQN.
package inputs

import (
	"fmt"
	"regexp"
	"strings"
)

// RuntimeInput is a parsed `<+input>.default(..).allowedValues(..).regex(..).executionInput()`.
type RuntimeInput struct {
	Default       *string
	AllowedValues []string
	SelectOneFrom []string
	// SelectManyFrom allows any non-empty subset of these values, given comma-separated.
	SelectManyFrom []string
	Regex          string
	ExecutionInput bool
}

const inputPrefix = "<+input>"

// IsRuntimeInput reports whether a field value is a runtime input.
func IsRuntimeInput(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), inputPrefix) }

// ParseError is a grammar error at a byte offset of the field value.
type ParseError struct {
	Offset  int
	Message string
	Hint    string
}

func (e *ParseError) Error() string { return e.Message }

var inputMethods = []string{"allowedValues", "default", "executionInput", "regex", "selectManyFrom", "selectOneFrom"}

// Parse reads a runtime-input value. Methods may come in any order, each at most once.
func Parse(s string) (*RuntimeInput, error) {
	lead := len(s) - len(strings.TrimLeft(s, " \t"))
	s = strings.TrimRight(s, " \t\r\n")
	if !strings.HasPrefix(s[lead:], inputPrefix) {
		return nil, &ParseError{Offset: lead, Message: "not a runtime input"}
	}
	in := &RuntimeInput{}
	seen := map[string]bool{}
	i := lead + len(inputPrefix)
	for i < len(s) {
		if s[i] != '.' {
			return nil, &ParseError{Offset: i, Message: fmt.Sprintf("unexpected %q after <+input>", s[i:]),
				Hint: "runtime inputs look like <+input>.default(x).allowedValues(a,b); wrap other text in its own field"}
		}
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		name := s[i+1 : j]
		if j >= len(s) || s[j] != '(' {
			return nil, &ParseError{Offset: i + 1, Message: fmt.Sprintf("expected (...) after .%s", name)}
		}
		arg, end, ok := readArg(s, j)
		if !ok {
			return nil, &ParseError{Offset: j, Message: fmt.Sprintf(".%s( has no closing )", name)}
		}
		if seen[name] {
			return nil, &ParseError{Offset: i + 1, Message: fmt.Sprintf(".%s() appears twice", name)}
		}
		seen[name] = true
		switch name {
		case "default":
			v := unquote(strings.TrimSpace(arg))
			if strings.HasPrefix(strings.TrimSpace(arg), "*") {
				return nil, &ParseError{Offset: j + 1, Message: "a default value may not start with * unless quoted",
					Hint: `write .default(\'*value\')`}
			}
			in.Default = &v
		case "allowedValues", "selectOneFrom", "selectManyFrom":
			vals := splitValues(arg)
			if len(vals) == 0 {
				return nil, &ParseError{Offset: j + 1, Message: fmt.Sprintf(".%s() needs at least one value", name)}
			}
			switch name {
			case "allowedValues":
				in.AllowedValues = vals
			case "selectOneFrom":
				in.SelectOneFrom = vals
			default:
				in.SelectManyFrom = vals
			}
		case "regex":
			if _, err := regexp.Compile(arg); err != nil {
				return nil, &ParseError{Offset: j + 1, Message: fmt.Sprintf("invalid regex %q: %v", arg, err)}
			}
			in.Regex = arg
		case "executionInput":
			if strings.TrimSpace(arg) != "" {
				return nil, &ParseError{Offset: j + 1, Message: ".executionInput() takes no value"}
			}
			in.ExecutionInput = true
		default:
			return nil, &ParseError{Offset: i + 1, Message: fmt.Sprintf("unknown runtime input method .%s()", name),
				Hint: "known methods: " + strings.Join(inputMethods, ", ")}
		}
		i = end
	}
	if in.Default != nil {
		if allowed := in.Allowed(); allowed != nil && !contains(allowed, *in.Default) {
			return nil, &ParseError{Offset: lead, Message: fmt.Sprintf("default %q is not one of the allowed values %s", *in.Default, strings.Join(allowed, ", "))}
		}
		if err := in.checkAllowed(*in.Default); in.SelectManyFrom != nil && err != nil {
			return nil, &ParseError{Offset: lead, Message: "default: " + err.Error()}
		}
		if in.Regex != "" && !fullMatch(in.Regex, *in.Default) {
			return nil, &ParseError{Offset: lead, Message: fmt.Sprintf("default %q does not match regex %s", *in.Default, in.Regex)}
		}
	}
	return in, nil
}

// Allowed returns the values a field may take, or nil when any value is allowed.
func (in *RuntimeInput) Allowed() []string {
	if in.AllowedValues != nil {
		return in.AllowedValues
	}
	return in.SelectOneFrom
}

// Check validates a supplied literal value (spec 9.7): exact membership in the allowed values,
// and a full match of the regex.
func (in *RuntimeInput) Check(value string) error {
	if err := in.checkAllowed(value); err != nil {
		return err
	}
	if in.Regex != "" && !fullMatch(in.Regex, value) {
		return fmt.Errorf("value %q does not match regex %s (the whole value must match)", value, in.Regex)
	}
	return nil
}

// checkAllowed checks membership: one allowed value, or for selectManyFrom a comma-separated
// selection of them.
func (in *RuntimeInput) checkAllowed(value string) error {
	if in.SelectManyFrom != nil {
		for _, v := range strings.Split(value, ",") {
			if v = strings.TrimSpace(v); !contains(in.SelectManyFrom, v) {
				return fmt.Errorf("value %q is not allowed; select one or more of: %s (comma-separated)", v, strings.Join(in.SelectManyFrom, ", "))
			}
		}
		return nil
	}
	if allowed := in.Allowed(); allowed != nil && !contains(allowed, value) {
		return fmt.Errorf("value %q is not allowed; allowed values: %s", value, strings.Join(allowed, ", "))
	}
	return nil
}

func fullMatch(pattern, s string) bool {
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	return err == nil && re.MatchString(s)
}

// readArg reads the text between the parenthesis at s[open] and its match. Nested parentheses
// (common in regexes) and \'quoted\' values are kept whole.
func readArg(s string, open int) (string, int, bool) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], `\'`):
			if end := strings.Index(s[i+2:], `\'`); end >= 0 {
				i += end + 3
			}
		case s[i] == '\\':
			i++
		case s[i] == '(':
			depth++
		case s[i] == ')':
			depth--
			if depth == 0 {
				return s[open+1 : i], i + 1, true
			}
		}
	}
	return "", 0, false
}

// splitValues splits a comma list; \'a,b\' or 'a,b' keeps commas inside one value.
func splitValues(arg string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(arg); i++ {
		switch {
		case strings.HasPrefix(arg[i:], `\'`):
			quoted = !quoted
			i++
		case arg[i] == '\'':
			quoted = !quoted
		case arg[i] == ',' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(arg[i])
		}
	}
	if last := strings.TrimSpace(cur.String()); last != "" || len(out) > 0 {
		out = append(out, last)
	}
	return out
}

func unquote(s string) string {
	for _, q := range []string{`\'`, `'`, `"`} {
		if len(s) >= 2*len(q) && strings.HasPrefix(s, q) && strings.HasSuffix(s, q) {
			return s[len(q) : len(s)-len(q)]
		}
	}
	return s
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// String writes the runtime input back in the form Parse reads; values holding commas,
// parentheses or quotes are written \'quoted\'.
func (in *RuntimeInput) String() string {
	var b strings.Builder
	b.WriteString(inputPrefix)
	quote := func(v string) string {
		if strings.ContainsAny(v, ",()'\" ") {
			return `\'` + v + `\'`
		}
		return v
	}
	list := func(name string, vals []string) {
		if vals == nil {
			return
		}
		q := make([]string, len(vals))
		for i, v := range vals {
			q[i] = quote(v)
		}
		fmt.Fprintf(&b, ".%s(%s)", name, strings.Join(q, ","))
	}
	if in.Default != nil {
		fmt.Fprintf(&b, ".default(%s)", quote(*in.Default))
	}
	list("allowedValues", in.AllowedValues)
	list("selectOneFrom", in.SelectOneFrom)
	list("selectManyFrom", in.SelectManyFrom)
	if in.Regex != "" {
		fmt.Fprintf(&b, ".regex(%s)", in.Regex)
	}
	if in.ExecutionInput {
		b.WriteString(".executionInput()")
	}
	return b.String()
}
