package stepspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Text is a spec's scalar: a string in the YAML (it may hold an expression), and once
// rendered a string, or the number or boolean an expression rendered to.
type Text string

// UnmarshalJSON reads a rendered scalar of any JSON type as its text; null is "".
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v != nil {
		*t = Text(fmt.Sprint(v))
	}
	return nil
}

// Decode reads a step's rendered spec (the JSON its activity receives) into its spec type S,
// the type the front end decoded the YAML into. An empty spec is S's zero value.
func Decode[S any](raw []byte) (S, error) {
	var s S
	if len(raw) == 0 {
		return s, nil
	}
	err := json.Unmarshal(raw, &s)
	return s, err
}

// Bool is the value as a boolean: true for any spelling strconv.ParseBool reads as true.
func (t Text) Bool() bool {
	b, _ := strconv.ParseBool(strings.TrimSpace(string(t)))
	return b
}

// List is a spec's list of names or paths: a YAML sequence, or an expression that renders to
// a list or to a comma-separated string (the reference allows both where it takes a list).
type List []string

// UnmarshalJSON reads a rendered list: an array of scalars, or a string of comma-separated
// entries (in brackets or not); empty entries are dropped.
func (l *List) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var out List
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch x := v.(type) {
	case nil:
	case string:
		// An expression that rendered a list as text may keep its brackets: [a, b].
		for _, s := range strings.Split(strings.Trim(strings.TrimSpace(x), "[]"), ",") {
			add(s)
		}
	case []any:
		for _, e := range x {
			if e != nil {
				add(fmt.Sprint(e))
			}
		}
	default:
		return fmt.Errorf("a list must be an array or a comma-separated string, got %v", v)
	}
	*l = out
	return nil
}

// UnmarshalYAML reads a sequence of scalars, or one expression (`<+...>`) standing for the
// list; a plain scalar is refused, as the reference refuses it.
func (l *List) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		out := make(List, 0, len(n.Content))
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				return fmt.Errorf("must be a list of single values, got a nested structure at line %d", e.Line)
			}
			out = append(out, e.Value)
		}
		*l = out
		return nil
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "<+") {
			*l = List{n.Value}
			return nil
		}
	}
	return fmt.Errorf("must be a list (one entry per line starting with '- '), or an expression")
}

// Choices are an approver input's values: a YAML sequence or one string of comma-separated
// values (the reference's schema types them as a string), rendered the same ways. The YAML
// reader keeps what it can read; validation words a nested structure itself.
type Choices List

// UnmarshalJSON reads rendered choices as a List.
func (c *Choices) UnmarshalJSON(b []byte) error { return (*List)(c).UnmarshalJSON(b) }

// UnmarshalYAML reads a sequence of scalars, or a scalar as comma-separated values.
func (c *Choices) UnmarshalYAML(n *yaml.Node) error {
	var out Choices
	switch n.Kind {
	case yaml.ScalarNode:
		for _, s := range strings.Split(n.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			if e.Kind == yaml.ScalarNode {
				out = append(out, e.Value)
			}
		}
	}
	*c = out
	return nil
}
