package stepspec

import (
	"strings"
	"testing"
)

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

// A rendered list is an array or a comma-separated string (an expression that rendered to
// text); empty entries are dropped.
func TestListReadsArrayOrCommaSeparatedText(t *testing.T) {
	for raw, want := range map[string]string{`{"l":["a"," b",""]}`: "a|b", `{"l":"a, b,,c"}`: "a|b|c", `{"l":"[a, b]"}`: "a|b", `{"l":[1,true]}`: "1|true", `{"l":null}`: "", `{}`: ""} {
		got, err := Decode[struct {
			L List `json:"l"`
		}]([]byte(raw))
		if err != nil || strings.Join(got.L, "|") != want {
			t.Errorf("%s: %q %v, want %q", raw, got.L, err, want)
		}
	}
	if _, err := Decode[struct {
		L List `json:"l"`
	}]([]byte(`{"l":{"a":1}}`)); err == nil {
		t.Error("an object read as a list")
	}
	for text, want := range map[Text]bool{"true": true, " TRUE ": true, "1": true, "false": false, "": false, "<+x>": false} {
		if text.Bool() != want {
			t.Errorf("Text(%q).Bool() = %v", text, !want)
		}
	}
}
