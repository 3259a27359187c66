// Command refcorpus measures how Gantry judges pipelines the reference accepts. It walks folders
// of YAML (checkouts of public repositories holding Harness pipelines), keeps each pipeline file
// that the reference's published schema (harness/harness-schema v0/pipeline.json) accepts, loads
// it as `gantry validate` does (services, environments, connectors and templates beside it), and
// prints each file's verdict — ok, unsupported or error, with the codes — then the totals. An
// error on a schema-valid pipeline is a false error unless the reference rejects it too; each
// one left is named.
//
//	go run ./hack/refcorpus [-strict] PATH/TO/v0/pipeline.json DIR...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

func main() {
	strict := flag.Bool("strict", false, "load as `gantry validate --strict` does")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: refcorpus [-strict] PATH/TO/v0/pipeline.json DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 2 {
		flag.Usage()
		os.Exit(2)
	}
	schema, err := compileSchema(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	counts := map[string]int{}
	reasons := map[string]int{}
	for _, dir := range flag.Args()[1:] {
		for _, f := range pipelineFiles(dir) {
			verdict, codes := judge(schema, f, *strict)
			counts[verdict]++
			if verdict == "error" || verdict == "unsupported" {
				for _, c := range codes {
					reasons[verdict+" "+c]++
				}
			}
			fmt.Printf("%-18s %s %s\n", verdict, f, strings.Join(codes, ","))
		}
	}
	fmt.Printf("\nschema-valid pipelines: %d; ok %d, unsupported %d, error %d (schema-invalid, left out: %d)\n",
		counts["ok"]+counts["unsupported"]+counts["error"], counts["ok"], counts["unsupported"], counts["error"], counts["schema-invalid"])
	for _, r := range slices.Sorted(maps.Keys(reasons)) {
		fmt.Printf("  %4d %s\n", reasons[r], r)
	}
}

// compileSchema compiles the reference's schema as draft 7 (it names no draft) with ECMAScript
// patterns (it uses lookahead). The schema breaks draft 7's metaschema in places (empty `enum`
// and `allOf` lists, arrays where a schema belongs), which validators such as Python's
// jsonschema do not check, so it is compiled against a metaschema that accepts it; its empty
// lists are rewritten to what they mean: `enum: []` accepts nothing, `allOf: []` asks nothing.
func compileSchema(path string) (*jsonschema.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	const meta, url = "file:///reference/lenient-meta.json", "file:///reference/pipeline.json"
	if m, ok := doc.(map[string]any); ok {
		m["$schema"] = meta
	}
	mend(doc, meta)
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(ecmaRegexp)
	if err := c.AddResource(meta, map[string]any{"$schema": "http://json-schema.org/draft-07/schema#"}); err != nil {
		return nil, err
	}
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// mender rewrites, in every schema reachable from the root (through subschema keywords and
// $ref), what draft 7 cannot compile: a subschema's own `$schema` (pointed at the lenient
// metaschema), empty `enum` and `allOf` lists, and a property or keyword whose schema is none.
type mender struct {
	root any
	meta string
	seen map[string]bool
}

func mend(root any, meta string) {
	m := &mender{root: root, meta: meta, seen: map[string]bool{}}
	m.schema(root)
}

// schema mends one schema and what it reaches; a value that is no schema becomes {} (anything).
func (m *mender) schema(v any) any {
	x, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return v
		}
		return map[string]any{}
	}
	for k, val := range x {
		if val == nil {
			delete(x, k) // `minLength: null` and the like say nothing
		}
	}
	if _, ok := x["$schema"]; ok {
		x["$schema"] = m.meta
	}
	if l, ok := x["enum"].([]any); ok && len(l) == 0 {
		delete(x, "enum")
		x["not"] = map[string]any{}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := x[k].([]any); ok {
			if len(l) == 0 {
				delete(x, k)
				continue
			}
			for i := range l {
				l[i] = m.schema(l[i])
			}
		} else if _, present := x[k]; present {
			delete(x, k)
		}
	}
	for _, k := range []string{"properties", "patternProperties", "definitions"} {
		if k == "definitions" {
			continue // namespaces of schemas, reached through $ref
		}
		if props, ok := x[k].(map[string]any); ok {
			for name := range props {
				props[name] = m.schema(props[name])
			}
		} else if _, present := x[k]; present {
			delete(x, k)
		}
	}
	for _, k := range []string{"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "additionalItems"} {
		if sub, present := x[k]; present {
			x[k] = m.schema(sub)
		}
	}
	if items, present := x["items"]; present {
		if l, ok := items.([]any); ok {
			for i := range l {
				l[i] = m.schema(l[i])
			}
		} else {
			x["items"] = m.schema(items)
		}
	}
	if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/") && !m.seen[ref] {
		m.seen[ref] = true
		m.schema(m.at(ref))
	}
	return x
}

// at resolves a local JSON pointer (#/definitions/...).
func (m *mender) at(ref string) any {
	cur := m.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		mm, _ := cur.(map[string]any)
		cur = mm[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return cur
}

// pipelineFiles are the YAML files under dir whose root key is `pipeline`.
func pipelineFiles(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		if src, err := os.ReadFile(path); err == nil && pipeline.RootKey(src) == "pipeline" {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// judge checks a file against the schema and, when it passes, loads it: ok, unsupported or error,
// with the distinct codes of what blocks a run.
func judge(schema *jsonschema.Schema, file string, strict bool) (string, []string) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "unreadable", nil
	}
	var doc any
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
		return "schema-invalid", []string{"yaml"}
	}
	if err := schema.Validate(jsonValue(doc)); err != nil {
		return "schema-invalid", nil
	}
	r, err := load.File(file, load.Options{Strict: strict})
	if err != nil {
		return "unreadable", nil
	}
	seen := map[string]bool{}
	var codes []string
	worst := "ok"
	for _, d := range r.Diags {
		switch d.Severity {
		case diag.Error:
			worst = "error"
		case diag.Unsupported:
			if worst == "ok" {
				worst = "unsupported"
			}
		default:
			continue
		}
		if !seen[d.Code] {
			seen[d.Code] = true
			codes = append(codes, d.Code)
		}
	}
	sort.Strings(codes)
	return worst, codes
}

// jsonValue turns a decoded YAML document into the values a JSON schema validates: string keys,
// and timestamps back to their text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
		return x
	case time.Time:
		return x.Format(time.RFC3339)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

// ecmaRegexp compiles a schema pattern as the ECMAScript regular expression JSON Schema says it is.
func ecmaRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return (*ecmaPattern)(re), nil
}

type ecmaPattern regexp2.Regexp

func (p *ecmaPattern) MatchString(s string) bool {
	ok, err := (*regexp2.Regexp)(p).MatchString(s)
	return err == nil && ok
}

func (p *ecmaPattern) String() string { return (*regexp2.Regexp)(p).String() }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "refcorpus:", err)
	os.Exit(1)
}
