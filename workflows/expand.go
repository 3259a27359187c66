package workflows

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/expressions"
	"github.com/gantry-cd/gantry/plan"
)

// MaxIterations bounds one strategy's expansion (the platform limit of spec 6.2).
const MaxIterations = 10000

// iteration is one expanded child of a looped node.
type iteration struct {
	Index     int
	Postfix   string         // "_0", "_0_1", "_eu"
	Matrix    map[string]any // axis values (matrix only)
	Item      any            // repeat.items element
	Partition []any          // repeat.partitionSize chunk
	HasItem   bool
}

// loopPlan is a resolved strategy: its iterations and how many may run at once (0: all).
type loopPlan struct {
	iterations  []iteration
	concurrency int
	skipQueued  bool
}

// expand resolves a strategy at the moment its node starts (spec 6.2-6.4): expressions in
// axes, items, counts and nodeName are rendered with scope.
func expand(st *plan.Strategy, scope *expressions.Scope) (*loopPlan, error) {
	lp := &loopPlan{skipQueued: st.OnFailure == "SkipQueued"}
	mc, err := intField(st.MaxConcurrency, scope, "maxConcurrency", 0)
	if err != nil {
		return nil, err
	}
	lp.concurrency = min(mc, MaxIterations)
	switch {
	case len(st.Axes) > 0:
		lp.iterations, err = expandMatrix(st, scope)
	case st.Times != "" || st.Items != nil:
		lp.iterations, err = expandRepeat(st, scope)
	default:
		var n int
		n, err = intField(st.Parallelism, scope, "parallelism", 1)
		if err == nil && n < 1 {
			err = fmt.Errorf("parallelism must be at least 1, got %d", n)
		}
		for i := 0; i < n && err == nil; i++ {
			lp.iterations = append(lp.iterations, iteration{Index: i, Postfix: "_" + strconv.Itoa(i)})
		}
	}
	if err != nil {
		return nil, err
	}
	if len(lp.iterations) > MaxIterations {
		return nil, fmt.Errorf("the strategy expands to %d iterations, more than the limit of %d", len(lp.iterations), MaxIterations)
	}
	return lp, nil
}

func intField(text string, scope *expressions.Scope, what string, def int) (int, error) {
	if text == "" {
		return def, nil
	}
	v, err := expressions.RenderString(text, scope, expressions.Options{})
	if err != nil {
		return 0, fmt.Errorf("%s: %v", what, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a whole number of at least 0, got %q", what, v)
	}
	return n, nil
}

// list resolves an axis or items value: a list, a YAML list in a string, or an expression
// rendering to either. Scalars become strings; maps stay maps.
func list(v any, scope *expressions.Scope, what string) ([]any, error) {
	if s, ok := v.(string); ok {
		if expressions.Has(s) {
			r, err := expressions.Render(s, expressions.Text, scope, expressions.Options{})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", what, err)
			}
			v = r
		}
		if s, ok := v.(string); ok {
			var l []any
			if err := yaml.Unmarshal([]byte(s), &l); err != nil || l == nil {
				return nil, fmt.Errorf("%s must be a list, got %q", what, s)
			}
			v = l
		}
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list, got %s", what, expressions.TypeName(v))
	}
	out := make([]any, len(l))
	for i, e := range l {
		if _, isMap := e.(map[string]any); isMap {
			out[i] = e
		} else {
			out[i] = expressions.ToString(e)
		}
	}
	return out, nil
}

var labelRe = regexp.MustCompile(`[^a-zA-Z0-9]`)

func expandMatrix(st *plan.Strategy, scope *expressions.Scope) ([]iteration, error) {
	axes := make([][]any, len(st.Axes))
	for i, a := range st.Axes {
		l, err := list(a.Values, scope, "matrix axis "+a.Key)
		if err != nil {
			return nil, err
		}
		axes[i] = l
	}
	excludes := exclusions(st.Exclude)
	var out []iteration
	idx := make([]int, len(axes))
	for {
		if len(axes) == 0 || anyEmpty(axes) {
			break
		}
		m := map[string]any{}
		path := make([]string, len(idx))
		for i, a := range st.Axes {
			m[a.Key] = axes[i][idx[i]]
			path[i] = strconv.Itoa(idx[i])
		}
		if !excluded(m, excludes) {
			out = append(out, iteration{Index: len(out), Postfix: "_" + strings.Join(path, "_"), Matrix: m})
		}
		// Depth-first: the last axis varies fastest (spec 6.2.1).
		k := len(idx) - 1
		for k >= 0 {
			idx[k]++
			if idx[k] < len(axes[k]) {
				break
			}
			idx[k] = 0
			k--
		}
		if k < 0 {
			break
		}
		if len(out) > MaxIterations {
			break
		}
	}
	if st.NodeName != "" {
		seen := map[string]int{}
		for i := range out {
			sc := iterationScope(scope, out[i], len(out))
			v, err := expressions.RenderString(st.NodeName, sc, expressions.Options{})
			if err != nil {
				return nil, fmt.Errorf("nodeName: %v", err)
			}
			label := labelRe.ReplaceAllString(v, "_")
			if len(label) > 126 {
				label = label[:126]
			}
			postfix := "_" + label
			if n, dup := seen[postfix]; dup {
				seen[postfix] = n + 1
				postfix += "_" + strconv.Itoa(n)
			} else {
				seen[postfix] = 0
			}
			out[i].Postfix = postfix
		}
	}
	return out, nil
}

func anyEmpty(axes [][]any) bool {
	for _, a := range axes {
		if len(a) == 0 {
			return true
		}
	}
	return false
}

func exclusions(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// excluded reports whether some exclude entry matches every one of its keys (string equality).
func excluded(m map[string]any, excludes []map[string]any) bool {
	for _, ex := range excludes {
		match := true
		for _, k := range sortedKeys(ex) {
			if expressions.ToString(m[k]) != expressions.ToString(ex[k]) {
				match = false
				break
			}
		}
		if match && len(ex) > 0 {
			return true
		}
	}
	return false
}

func expandRepeat(st *plan.Strategy, scope *expressions.Scope) ([]iteration, error) {
	if st.Items == nil {
		n, err := intField(st.Times, scope, "repeat.times", 0)
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, fmt.Errorf("repeat.times must be at least 1, got %d", n)
		}
		out := make([]iteration, n)
		for i := range out {
			out[i] = iteration{Index: i, Postfix: "_" + strconv.Itoa(i)}
		}
		return out, nil
	}
	items, err := list(st.Items, scope, "repeat.items")
	if err != nil {
		return nil, err
	}
	pct := st.Unit == "Percentage"
	bound := func(text, what string, def int) (int, error) {
		if text == "" {
			return def, nil
		}
		n, err := intField(text, scope, what, 0)
		if err != nil {
			return 0, err
		}
		if pct {
			n = int(math.Round(float64(n) / 100 * float64(len(items))))
		}
		return min(n, len(items)), nil
	}
	start, err := bound(st.Start, "repeat.start", 0)
	if err != nil {
		return nil, err
	}
	end, err := bound(st.End, "repeat.end", len(items))
	if err != nil {
		return nil, err
	}
	if start > end {
		start = end
	}
	items = items[start:end] // end exclusive; omitted end runs to the last item (spec 6.3 Decision)
	var out []iteration
	if st.PartitionSize != "" {
		size, err := intField(st.PartitionSize, scope, "repeat.partitionSize", 1)
		if err != nil {
			return nil, err
		}
		if pct {
			size = int(math.Round(float64(size) / 100 * float64(len(items))))
		}
		size = max(size, 1)
		for i := 0; i < len(items); i += size {
			chunk := items[i:min(i+size, len(items))]
			out = append(out, iteration{Index: len(out), Postfix: "_" + strconv.Itoa(len(out)), Partition: chunk, Item: chunk, HasItem: true})
		}
		return out, nil
	}
	for i, it := range items {
		if m, ok := it.(map[string]any); ok && st.ItemsAsMatrix {
			out = append(out, iteration{Index: i, Postfix: "_" + strconv.Itoa(i), Matrix: m})
			continue
		}
		out = append(out, iteration{Index: i, Postfix: "_" + strconv.Itoa(i), Item: it, HasItem: true})
	}
	return out, nil
}

// iterationScope is scope with the loop roots of one iteration bound (spec 6.7).
func iterationScope(scope *expressions.Scope, it iteration, total int) *expressions.Scope {
	return expressions.NewScope(iterationRoot(scope.Data, "", it, total), scope.Current())
}

// iterationRoot returns a copy of root with the loop expressions of one iteration of the node
// with base identifier id: strategy.*, matrix.*, repeat.* (merged over enclosing loops).
func iterationRoot(root map[string]any, id string, it iteration, total int) map[string]any {
	out := make(map[string]any, len(root)+3)
	for k, v := range root {
		out[k] = v
	}
	parent, _ := root["strategy"].(map[string]any)
	matrix := map[string]any{}
	if pm, ok := root["matrix"].(map[string]any); ok {
		for k, v := range pm {
			matrix[k] = v
		}
	}
	for k, v := range it.Matrix {
		matrix[k] = v
	}
	repeat := map[string]any{}
	if it.HasItem {
		repeat["item"] = it.Item
	}
	if it.Partition != nil {
		repeat["partition"] = it.Partition
	}
	globalIdx, globalTotal := it.Index, total
	if parent != nil {
		// Numbers that crossed a child workflow boundary arrive as float64.
		if pi, ok := number(parent["currentGlobalIteration"]); ok {
			pt, _ := number(parent["totalGlobalIteration"])
			globalIdx, globalTotal = pi*total+it.Index, pt*total
		}
	}
	level := map[string]any{
		"iteration": it.Index, "iterations": total, "totalIterations": total,
		"identifierPostFix": it.Postfix, "matrix": it.Matrix, "repeat": repeat,
	}
	nodes := map[string]any{}
	if parent != nil {
		if pn, ok := parent["node"].(map[string]any); ok {
			for k, v := range pn {
				nodes[k] = v
			}
		}
	}
	if id != "" {
		nodes[id] = level
	}
	strategy := map[string]any{"node": nodes, "currentGlobalIteration": globalIdx, "totalGlobalIteration": globalTotal}
	for k, v := range level {
		strategy[k] = v
	}
	out["strategy"] = strategy
	out["matrix"] = matrix
	out["repeat"] = repeat
	return out
}

func number(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}
