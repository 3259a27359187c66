package policies

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// inputCache keeps the OPA values of the large parts of recent inputs (the pipeline of an
// on-run decision, a Policy step's payload), keyed by their content. Converting a 20-stage
// pipeline into OPA's values costs about as much as evaluating the whole starter library over
// it, and a pipeline is decided again on every run, every webhook delivery and every retry
// with the same content. A hit is checked for equality with the content it was made from, so a
// hash collision only costs a conversion; OPA values are immutable, so decisions running at
// once share them.
type inputCache struct {
	mu      sync.Mutex
	entries map[uint64]*cachedInput
	order   []uint64 // insertion order, oldest first, for eviction
	limit   int
	// seen holds the content seen once and not kept yet.
	seen      map[uint64]bool
	seenOrder []uint64
}

type cachedInput struct {
	native any // a private copy of the content
	value  ast.Value
}

// inputCacheSize bounds the cache: the pipelines a busy engine runs over and over, at a few
// hundred KiB each.
const inputCacheSize = 64

var inputSeed = maphash.MakeSeed()

// valueOf converts an input as ast.InterfaceToValue does, reusing the conversion of each large
// top-level field seen before.
func (c *inputCache) valueOf(input any) (ast.Value, error) {
	top, ok := input.(map[string]any)
	if !ok {
		return c.convert(input)
	}
	kvs := make([][2]*ast.Term, 0, len(top))
	for k, v := range top {
		val, err := c.convert(v)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, [2]*ast.Term{ast.StringTerm(k), ast.NewTerm(val)})
	}
	return ast.NewObject(kvs...), nil
}

// convert converts one value, through the cache when it is a map or a list of plain JSON
// values.
func (c *inputCache) convert(x any) (ast.Value, error) {
	switch x.(type) {
	case map[string]any, []any:
	default:
		return ast.InterfaceToValue(x)
	}
	h, ok := hashOf(x)
	if !ok {
		return ast.InterfaceToValue(x)
	}
	c.mu.Lock()
	e := c.entries[h]
	c.mu.Unlock()
	if e != nil && equal(e.native, x) {
		return e.value, nil
	}
	v, err := toValue(x)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries, c.seen = map[uint64]*cachedInput{}, map[uint64]bool{}
	}
	// Content seen once is only remembered; the second time it is kept. A stream of pipelines
	// that never come back costs a hash each, not a copy.
	if !c.seen[h] {
		c.seen[h] = true
		c.seenOrder = evict(append(c.seenOrder, h), c.seen, 4*c.size())
		return v, nil
	}
	if _, there := c.entries[h]; !there {
		c.order = evict(append(c.order, h), c.entries, c.size())
	}
	c.entries[h] = &cachedInput{native: copyOf(x), value: v}
	return v, nil
}

func (c *inputCache) size() int {
	if c.limit == 0 {
		return inputCacheSize
	}
	return c.limit
}

// evict drops the oldest keys of order from m while there are more than limit.
func evict[V any](order []uint64, m map[uint64]V, limit int) []uint64 {
	for len(order) > limit {
		delete(m, order[0])
		order = order[1:]
	}
	return order
}

// hashOf hashes a plain JSON value (what YAML and JSON decode into); false for anything else.
// An object's hash does not depend on the order its fields are visited in.
func hashOf(x any) (uint64, bool) {
	switch x := x.(type) {
	case nil:
		return 1, true
	case bool:
		if x {
			return 2, true
		}
		return 3, true
	case string:
		return maphash.String(inputSeed, x), true
	case json.Number:
		return maphash.String(inputSeed, string(x)) ^ 0x9e3779b97f4a7c15, true
	case int:
		return mix(uint64(x)), true
	case int64:
		return mix(uint64(x)), true
	case float64:
		return mix(math.Float64bits(x)) ^ 0x5bd1e995, true
	case []any:
		sum := uint64(len(x)) + 0x243f6a8885a308d3
		for _, e := range x {
			eh, ok := hashOf(e)
			if !ok {
				return 0, false
			}
			sum = mix(sum ^ eh)
		}
		return sum, true
	case map[string]any:
		sum := uint64(len(x)) + 0x13198a2e03707344
		for k, v := range x {
			vh, ok := hashOf(v)
			if !ok {
				return 0, false
			}
			sum += mix(maphash.String(inputSeed, k) ^ mix(vh))
		}
		return sum, true
	}
	return 0, false
}

// mix is the finalizer of SplitMix64: every bit of x moves every bit of the result.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// equal reports whether two plain JSON values are the same, types included (a cached value
// must convert exactly as the new one would).
func equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bb, ok := b.(string)
		return ok && a == bb
	case json.Number:
		bb, ok := b.(json.Number)
		return ok && a == bb
	case int:
		bb, ok := b.(int)
		return ok && a == bb
	case int64:
		bb, ok := b.(int64)
		return ok && a == bb
	case float64:
		bb, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(bb)
	case []any:
		bb, ok := b.([]any)
		if !ok || len(a) != len(bb) {
			return false
		}
		for i := range a {
			if !equal(a[i], bb[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bb, ok := b.(map[string]any)
		if !ok || len(a) != len(bb) {
			return false
		}
		for k, v := range a {
			w, ok := bb[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// copyOf copies the maps and lists of a plain JSON value, so the caller may change its own.
func copyOf(x any) any {
	switch x := x.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyOf(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = copyOf(v)
		}
		return out
	}
	return x
}

// toValue converts a plain JSON value as ast.InterfaceToValue does, with fewer allocations: a
// key such as "identifier", "type" or "spec" that every step repeats becomes one term shared by
// all the objects of the conversion, and the value terms of an object or list are allocated
// in one block. Converting is most of an on-run decision over a pipeline not seen before; a
// 20-stage pipeline makes about 500 objects.
func toValue(x any) (ast.Value, error) {
	c := converter{keys: map[string]*ast.Term{}}
	return c.value(x)
}

type converter struct {
	keys map[string]*ast.Term
}

func (c *converter) value(x any) (ast.Value, error) {
	switch x := x.(type) {
	case string:
		return ast.String(x), nil
	case []any:
		terms := make([]ast.Term, len(x))
		ptrs := make([]*ast.Term, len(x))
		for i, e := range x {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			terms[i].Value, ptrs[i] = v, &terms[i]
		}
		return ast.NewArray(ptrs...), nil
	case map[string]any:
		values := make([]ast.Term, len(x))
		kvs := make([][2]*ast.Term, 0, len(x))
		for k, e := range x {
			key := c.keys[k]
			if key == nil {
				key = ast.StringTerm(k)
				c.keys[k] = key
			}
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			i := len(kvs)
			values[i].Value = v
			kvs = append(kvs, [2]*ast.Term{key, &values[i]})
		}
		return ast.NewObject(kvs...), nil
	}
	return ast.InterfaceToValue(x)
}
