package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestInputCacheKeepsContentSeenTwice(t *testing.T) {
	var c inputCache
	in := twentyStages()
	want, _ := ast.InterfaceToValue(in)
	first, _ := c.valueOf(in)
	second, _ := c.valueOf(in)
	third, _ := c.valueOf(in)
	for i, v := range []ast.Value{first, second, third} {
		if v.Compare(want) != 0 {
			t.Fatalf("conversion %d differs from ast.InterfaceToValue", i+1)
		}
	}
	if len(c.entries) != 1 {
		t.Fatalf("after three decisions over one pipeline the cache holds %d entries, want 1", len(c.entries))
	}
	pipeline := func(v ast.Value) ast.Value { return v.(ast.Object).Get(ast.StringTerm("pipeline")).Value }
	if pipeline(second) != pipeline(third) {
		t.Fatal("the third decision converted the pipeline again instead of reusing the second's")
	}

	// The cache holds its own copy: changing the caller's map afterwards changes nothing cached,
	// and the changed pipeline converts to its new content.
	in["pipeline"].(map[string]any)["timeout"] = "3d"
	changed, _ := c.valueOf(in)
	got := changed.(ast.Object).Get(ast.StringTerm("pipeline")).Get(ast.StringTerm("timeout"))
	if got == nil || got.Value.Compare(ast.String("3d")) != 0 {
		t.Fatalf("changed pipeline converted with timeout %v, want 3d", got)
	}
	if pipeline(third).(ast.Object).Get(ast.StringTerm("timeout")).Value.Compare(ast.String("2h")) != 0 {
		t.Fatal("the cached value changed with the caller's map")
	}
}

func TestInputCacheNeverConfusesContent(t *testing.T) {
	var c inputCache
	// Same shape, different types: each must convert as itself.
	for _, in := range []any{
		[]any{1, "a"}, []any{1.0, "a"}, []any{json.Number("1"), "a"}, []any{int64(1), "a"},
		[]any{true}, []any{"true"}, []any{nil}, []any{map[string]any{}}, []any{[]any{}},
		map[string]any{"a": []any{"b"}}, map[string]any{"a": "b"}, map[string]any{"b": []any{"a"}},
	} {
		for range 3 {
			got, err := c.convert(in)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ast.InterfaceToValue(in)
			if got.Compare(want) != 0 || ast.TypeName(got) != ast.TypeName(want) {
				t.Fatalf("%#v converted to %v, want %v", in, got, want)
			}
		}
	}

	// A hash collision: an entry under the hash of x made from other content is not used.
	x, other := map[string]any{"stage": "prod"}, map[string]any{"stage": "dev"}
	h, _ := hashOf(x)
	otherValue, _ := ast.InterfaceToValue(other)
	c.entries[h] = &cachedInput{native: other, value: otherValue}
	got, _ := c.convert(x)
	if want, _ := ast.InterfaceToValue(x); got.Compare(want) != 0 {
		t.Fatalf("a colliding entry answered for other content: %v", got)
	}
}

func TestInputCacheIsBounded(t *testing.T) {
	c := inputCache{limit: 2}
	for i := range 10 {
		in := map[string]any{"n": i}
		c.convert(in)
		c.convert(in)
	}
	if len(c.entries) != 2 || len(c.order) != 2 || len(c.seen) > 8 {
		t.Fatalf("a cache of 2 holds %d entries (%d in order), %d seen", len(c.entries), len(c.order), len(c.seen))
	}
	if _, err := c.convert([]any{make(chan int)}); err == nil {
		t.Fatal("a value OPA cannot convert was accepted")
	}
}

// Decisions over a pipeline decided before follow its changes: a plain-text secret added to a
// pipeline seen twice is denied.
func TestDecisionsFollowChangedPipelines(t *testing.T) {
	e := starterLibrary(t)
	sets, in := e.OnRunSets(Scope{}), twentyStages()
	for range 3 {
		d, err := e.Evaluate(context.Background(), sets, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range d.Messages() {
			if strings.Contains(m, "plain-text secret") {
				t.Fatalf("denied before the secret was added: %s", m)
			}
		}
	}
	p := in["pipeline"].(map[string]any)
	p["variables"] = append(p["variables"].([]any), map[string]any{"name": "db_password", "type": "String", "value": "hunter2"})
	d, err := e.Evaluate(context.Background(), sets, in)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range d.Messages() {
		found = found || strings.Contains(m, "db_password holds a plain-text secret")
	}
	if !found {
		t.Fatalf("the added secret was not denied: %v", d.Messages())
	}
}

// Decisions running at once share cached values (run under -race).
func TestConcurrentDecisionsShareCachedInputs(t *testing.T) {
	e := starterLibrary(t)
	sets := e.OnRunSets(Scope{})
	want, err := e.Evaluate(context.Background(), sets, twentyStages())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			in := twentyStages()
			for range 5 {
				d, err := e.Evaluate(context.Background(), sets, in)
				if err == nil && strings.Join(d.Messages(), "\n") != strings.Join(want.Messages(), "\n") {
					err = fmt.Errorf("decision %v, want %v", d.Messages(), want.Messages())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// toValue converts as ast.InterfaceToValue does, for random JSON documents whose objects repeat
// keys at every depth (shared key terms) and mix every scalar type.
func TestToValueConvertsAsOPA(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	keys := []string{"step", "spec", "type", "identifier", "", "é"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rnd.IntN(9); {
		case depth > 4 || n == 0:
			return []any{nil, true, false, "x", "", 3, int64(-4), 2.5, json.Number("7"), json.Number("1e3")}[rnd.IntN(10)]
		case n < 4:
			list := make([]any, rnd.IntN(4))
			for i := range list {
				list[i] = gen(depth + 1)
			}
			return list
		default:
			m := map[string]any{}
			for range rnd.IntN(5) {
				m[keys[rnd.IntN(len(keys))]] = gen(depth + 1)
			}
			return m
		}
	}
	for i := range 500 {
		in := gen(0)
		got, err := toValue(in)
		want, wantErr := ast.InterfaceToValue(in)
		if (err != nil) != (wantErr != nil) || err == nil && (got.Compare(want) != 0 || got.Hash() != want.Hash() || got.String() != want.String()) {
			t.Fatalf("document %d: %#v converted to %v (%v), want %v (%v)", i, in, got, err, want, wantErr)
		}
	}
}
