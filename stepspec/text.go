package stepspec

import (
	"encoding/json"
	"fmt"
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
