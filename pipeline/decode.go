package pipeline

import (
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/reference"
)

// Decoder turns yaml.Node trees into the typed model. Unlike yaml.Unmarshal it reports unknown
// keys (warnings, as the reference ignores them) and rejects missing required fields (tag
// `gantry:"required"`), reports every problem with its line and column, and records each
// object's mapping node in its `Node` field so validators can point at any key later.
//
// Leaf fields are strings on purpose: almost every Harness field may hold an expression or a
// runtime input, so typed checks (durations, numbers, enums) belong to the validators.
type Decoder struct {
	File string
	// Origins are the nodes copied into the file's tree from templates (nil: none).
	Origins *Origins
	Diags   *diag.List
}

var (
	nodePtrType = reflect.TypeOf((*yaml.Node)(nil))
	stringType  = reflect.TypeOf("")
)

// holdsString reports whether t is a string or a pointer to one.
func holdsString(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.String || t.Kind() == reflect.Interface
}

// Pos returns the position of a node in the decoder's file.
func (d *Decoder) Pos(n *yaml.Node) diag.Pos { return Source{File: d.File, Origins: d.Origins}.Pos(n) }

// Decode fills out (a pointer to a struct, slice or string) from n. what names the object in
// messages ("stage", "step spec").
func (d *Decoder) Decode(n *yaml.Node, out any, what string) {
	d.decode(n, reflect.ValueOf(out).Elem(), what)
}

func (d *Decoder) decode(n *yaml.Node, v reflect.Value, what string) {
	n = resolveAlias(n)
	if n == nil {
		return
	}
	if v.Type() == nodePtrType {
		if !isNull(n) { // `when:` with no value is no condition, as the reference reads it
			v.Set(reflect.ValueOf(n))
		}
		return
	}
	// The reference lets a runtime input stand for a whole list or object (`<+input>`); its
	// value arrives with the inputs, and the merged pipeline is decoded again.
	if n.Kind == yaml.ScalarNode && IsRuntimeInput(n.Value) && !holdsString(v.Type()) {
		return
	}
	// A type that reads its own YAML (a list that may also be an expression) is given the node.
	if v.CanAddr() {
		if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
			if !isNull(n) {
				if err := u.UnmarshalYAML(n); err != nil {
					d.Diags.Errorf(d.Pos(n), "type", "%s %v", what, err)
				}
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), what)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.Diags.Errorf(d.Pos(n), "type", "%s must be a single value, got %s", what, kindName(n)).
				SetHint("quote the value or remove the nested structure")
			return
		}
		if !isNull(n) {
			v.SetString(n.Value)
		}
	case reflect.Slice:
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.Diags.Errorf(d.Pos(n), "type", "%s must be a list, got %s", what, kindName(n)).
				SetHint("write each entry on its own line starting with '- '")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), what)
		}
		v.Set(s)
	case reflect.Map:
		d.decodeMap(n, v, what)
	case reflect.Struct:
		d.decodeStruct(n, v, what)
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.Diags.Errorf(d.Pos(n), "type", "%s: %v", what, err)
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic(fmt.Sprintf("pipeline: decoder cannot fill %s", v.Type()))
	}
}

func (d *Decoder) decodeMap(n *yaml.Node, v reflect.Value, what string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Diags.Errorf(d.Pos(n), "type", "%s must be a mapping of keys to values, got %s", what, kindName(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, elem, what+"."+k.Value)
		m.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
	v.Set(m)
}

func (d *Decoder) decodeStruct(n *yaml.Node, v reflect.Value, what string) {
	if isNull(n) {
		// An object key with no value is the empty object, as the reference reads `spec:`; its
		// required fields are still required.
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	}
	if n.Kind != yaml.MappingNode {
		d.Diags.Errorf(d.Pos(n), "type", "%s must be a mapping, got %s", what, kindName(n))
		return
	}
	fields := structFields(v.Type())
	if f, ok := fields.byName["-node"]; ok {
		v.FieldByIndex(f).Set(reflect.ValueOf(n))
	}
	seen := map[string]bool{}
	runs := d.runsType(n, v.Type())
	unexpanded := Unexpanded(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if unexpanded && k.Value == "template" {
			continue // the link to a template that was not found, reported by the expander
		}
		if !runs && k.Value == "spec" {
			seen[k.Value] = true // shaped by a type Gantry does not run: reported once, at the type
			continue
		}
		idx, ok := fields.byName[k.Value]
		if !ok && reference.HasField(RefName(v.Type()), k.Value) {
			if what, ok := reference.Significant[k.Value]; ok && val.Kind == yaml.ScalarNode && val.Value == "true" {
				d.Diags.Unsupportedf(d.Pos(k), "unsupported-field", "`%s: true` asks for %s, which Gantry does not run yet", k.Value, what)
				continue
			}
			d.Diags.Warnf(d.Pos(k), "reference-field-ignored", "%s: `%s` is a field of the reference that Gantry does not act on yet; it is ignored", what, k.Value)
			continue
		}
		if !ok || k.Value == "-node" {
			d.Diags.Add(unknownKey(d.Pos(k), k.Value, what, fields.names, reference.IsClosed(RefName(v.Type()))))
			continue
		}
		if seen[k.Value] {
			d.Diags.Errorf(d.Pos(k), "duplicate-key", "key %q appears twice in %s", k.Value, what).
				SetHint("remove one of them; YAML keeps only the last")
			continue
		}
		seen[k.Value] = true
		d.decode(val, v.FieldByIndex(idx), k.Value)
	}
	for _, name := range fields.required {
		if !seen[name] && !(unexpanded && name != "identifier" && name != "name") {
			d.Diags.Errorf(d.Pos(n), "missing-field", "%s is missing required field %q", what, name).
				SetHint("add `%s:` to this %s", name, what)
		}
	}
}

// unknownKey reports a key the object does not define. The reference's parser ignores such keys
// wherever its schema leaves the object open, and real pipelines carry them, so it is a warning
// (an error under --strict, see diag.List.Strict); in an object the schema closes it is an error.
func unknownKey(pos diag.Pos, key, what string, known []string, closed bool) diag.Diagnostic {
	dg := diag.Warnf(pos, diag.UnknownKey, "unknown key %q in %s; ignored, as the reference ignores it", key, what)
	if closed {
		dg = diag.Errorf(pos, diag.UnknownKey, "unknown key %q in %s, which the reference's schema closes to the keys it defines", key, what)
	}
	if s := Closest(key, known); s != "" {
		return dg.WithHint("did you mean %q?", s)
	}
	return dg.WithHint("allowed keys: %s", strings.Join(known, ", "))
}

type fieldSet struct {
	byName   map[string][]int // key → field index path (through inlined structs)
	names    []string
	required []string
}

var fieldCache sync.Map // reflect.Type -> fieldSet

// structFields reads yaml tags; a `yaml:"-"` field named Node receives the mapping node. An
// embedded struct tagged `yaml:",inline"` contributes its keys (and its Node) as if declared
// in the outer struct: the shapes the reference repeats (Typed, Entity) are written once.
func structFields(t reflect.Type) fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(fieldSet)
	}
	fs := fieldSet{byName: map[string][]int{}}
	addFields(&fs, t, nil)
	sort.Strings(fs.names)
	fieldCache.Store(t, fs)
	return fs
}

func addFields(fs *fieldSet, t reflect.Type, at []int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int(nil), at...), i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Anonymous && opts == "inline" && f.Type.Kind() == reflect.Struct {
			addFields(fs, f.Type, idx)
			continue
		}
		if name == "-" || name == "" {
			if f.Name == "Node" && f.Type == nodePtrType {
				fs.byName["-node"] = idx
			}
			continue
		}
		fs.byName[name] = idx
		fs.names = append(fs.names, name)
		if f.Tag.Get("gantry") == "required" {
			fs.required = append(fs.required, name)
		}
	}
}

// RefName is the name reference.Fields knows a decoded Go type by: package and type name, with
// the type arguments of a generic shape named the same way ("pipeline.Typed[stepspec.WaitSpec]").
func RefName(t reflect.Type) string {
	name := t.Name()
	if open := strings.IndexByte(name, '['); open >= 0 {
		args := strings.Split(name[open+1:len(name)-1], ",")
		for i, a := range args {
			args[i] = path.Base(a)
		}
		name = name[:open] + "[" + strings.Join(args, ",") + "]"
	}
	return path.Base(t.PkgPath()) + "." + name
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return resolveAlias(n.Content[0])
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// Closest returns the candidate nearest to s (edit distance at most 2, or a case-insensitive
// match), for "did you mean" hints.
func Closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Field returns the value node of key in mapping n, or nil.
func Field(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Key returns the key node of key in mapping n, or n itself when absent (for positions).
func Key(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return n
}

// ValueAt returns the value node of key for positions: the value if present, else the mapping.
func ValueAt(n *yaml.Node, key string) *yaml.Node {
	if v := Field(n, key); v != nil {
		return v
	}
	return n
}
