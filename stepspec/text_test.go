package stepspec

import "testing"

// A rendered scalar reads as its text whatever JSON type the expression rendered to.
func TestTextReadsAnyScalar(t *testing.T) {
	for raw, want := range map[string]Text{`{"v":"10"}`: "10", `{"v":10}`: "10", `{"v":12.5}`: "12.5", `{"v":true}`: "true", `{"v":null}`: "", `{}`: ""} {
		got, err := Decode[struct {
			V Text `json:"v"`
		}]([]byte(raw))
		if err != nil || got.V != want {
			t.Errorf("%s: %q %v, want %q", raw, got.V, err, want)
		}
	}
	if _, err := Decode[struct {
		V Text `json:"v"`
	}]([]byte(`{"v":[1]}`)); err != nil {
		t.Errorf("a list is text too (fmt's form): %v", err)
	}
}
