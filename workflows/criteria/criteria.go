// Package criteria decides an approval step's approval and rejection criteria against a
// ticket's fields or a script's outputs (docs/tickets.md): KeyValues conditions (equals, not
// equals, in, not in; all of them, or any) or a Jexl expression. It is pure and deterministic:
// workflow code calls it on each read.
package criteria

import (
	"fmt"
	"strings"

	"github.com/gantry-cd/gantry/expressions"
)

// Criteria are a step's approval or rejection criteria as rendered at the step's start: a Jexl
// expression keeps its <+issue...>, <+ticket...> or <+output...> references.
type Criteria struct {
	Type       string      `json:"type"` // Jexl or KeyValues
	Expression string      `json:"expression,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	MatchAny   bool        `json:"matchAny,omitempty"`
}

// Condition compares a field with a value.
type Condition struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
}

// Empty reports criteria that can never be met: no conditions and no expression.
func (c *Criteria) Empty() bool {
	return c == nil || c.Type == "KeyValues" && len(c.Conditions) == 0 || c.Type == "Jexl" && strings.TrimSpace(c.Expression) == ""
}

// String is the criteria as people read them.
func (c *Criteria) String() string {
	if c.Type == "Jexl" {
		return c.Expression
	}
	var parts []string
	for _, cond := range c.Conditions {
		parts = append(parts, cond.Key+" "+cond.Operator+" "+cond.Value)
	}
	sep := " and "
	if c.MatchAny {
		sep = " or "
	}
	return strings.Join(parts, sep)
}

// Decision is what one evaluation found: whether the criteria are met and, when they are not,
// what is missing (each unmet condition with the value it saw, or the expression).
type Decision struct {
	Met   bool
	Unmet []string
}

// Evaluate decides the criteria. fields holds what they read, under name (issue, ticket or
// output): a field's value is text, or a ServiceNow field's {value, displayValue}. A Jexl
// expression that cannot be evaluated is an error naming it.
func Evaluate(c *Criteria, name string, fields map[string]any) (Decision, error) {
	if c.Empty() {
		return Decision{Unmet: []string{"no conditions"}}, nil
	}
	if c.Type == "Jexl" {
		t, err := expressions.Compile(c.Expression, expressions.Condition)
		if err != nil {
			return Decision{}, fmt.Errorf("Jexl criteria %q: %v", c.Expression, err)
		}
		v, err := t.Eval(expressions.NewScope(map[string]any{name: fields}, ""), expressions.Options{})
		if err != nil {
			return Decision{}, fmt.Errorf("Jexl criteria %q: %v", c.Expression, err)
		}
		if b, ok := v.(bool); ok && b {
			return Decision{Met: true}, nil
		}
		return Decision{Unmet: []string{c.Expression}}, nil
	}
	var d Decision
	met := 0
	for _, cond := range c.Conditions {
		ok, saw := holds(cond, fields[cond.Key])
		if ok {
			met++
			continue
		}
		d.Unmet = append(d.Unmet, fmt.Sprintf("%s %s %s (now %q)", cond.Key, cond.Operator, cond.Value, saw))
	}
	d.Met = met == len(c.Conditions) || c.MatchAny && met > 0
	if d.Met {
		d.Unmet = nil
	}
	return d, nil
}

// holds reports whether a field meets a condition, and the value it compared. A ServiceNow
// field meets it by its display value or its stored value (state "Implement" or "-1").
func holds(c Condition, field any) (bool, string) {
	values := []string{text(field)}
	if m, ok := field.(map[string]any); ok {
		values = []string{text(m["displayValue"]), text(m["value"])}
	}
	want := strings.TrimSpace(c.Value)
	in := func(v string) bool {
		for _, x := range strings.Split(want, ",") {
			if strings.EqualFold(strings.TrimSpace(x), v) {
				return true
			}
		}
		return false
	}
	matched := false
	for _, v := range values {
		v = strings.TrimSpace(v)
		switch c.Operator {
		case "equals", "not equals":
			matched = matched || strings.EqualFold(v, want)
		case "in", "not in":
			matched = matched || in(v)
		}
	}
	if strings.HasPrefix(c.Operator, "not") {
		return !matched, values[0]
	}
	return matched, values[0]
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}
