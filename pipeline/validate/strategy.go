package validate

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/inputs"
)

var matrixKeywords = map[string]bool{"exclude": true, "maxConcurrency": true, "nodeName": true}

// strategy checks a looping strategy (spec 6.1-6.4). It reports whether the node loops, and
// whether all its iterations run at once (for barrier checks).
func (c *checker) strategy(n *yaml.Node) (looped, concurrent bool) {
	if n == nil {
		return false, false
	}
	if n.Kind == yaml.ScalarNode && inputs.IsRuntimeInput(n.Value) {
		return true, true
	}
	var s pipeline.Strategy
	c.dec.Decode(n, &s, "strategy")
	if s.Node == nil {
		return false, false
	}
	kinds := 0
	for _, k := range []string{"matrix", "repeat", "parallelism"} {
		if pipeline.Field(s.Node, k) != nil {
			kinds++
		}
	}
	if kinds != 1 {
		c.diags.Errorf(c.pos(s.Node), "strategy", "strategy needs exactly one of matrix, repeat or parallelism; found %d", kinds)
		return false, false
	}
	c.integer(s.Node, "maxConcurrency", s.MaxConcurrency, 0, false, "strategy.maxConcurrency")
	c.enum(s.Node, "onFailure", s.OnFailure, []string{"RunAll", "SkipQueued"}, "strategy.onFailure")
	concurrency := atoiOr(s.MaxConcurrency, 0)
	iterations := -1
	switch {
	case s.Matrix != nil:
		iterations, concurrency = c.matrix(s.Matrix, concurrency)
	case s.Repeat != nil:
		r := s.Repeat
		switch {
		case r.Times != "" && r.Items != nil:
			c.diags.Errorf(c.pos(r.Node), "strategy", "repeat takes either times or items, not both")
		case r.Times == "" && r.Items == nil:
			c.diags.Errorf(c.pos(r.Node), "strategy", "repeat needs times or items")
		}
		c.integer(r.Node, "times", r.Times, 1, false, "repeat.times")
		c.integer(r.Node, "maxConcurrency", r.MaxConcurrency, 0, false, "repeat.maxConcurrency")
		c.integer(r.Node, "start", r.Start, 0, false, "repeat.start")
		c.integer(r.Node, "end", r.End, 0, false, "repeat.end")
		c.integer(r.Node, "partitionSize", r.PartitionSize, 1, false, "repeat.partitionSize")
		c.enum(r.Node, "unit", r.Unit, []string{"Count", "Percentage"}, "repeat.unit")
		if r.Items != nil && r.Items.Kind == yaml.ScalarNode && !dynamic(r.Items.Value) {
			c.diags.Errorf(c.pos(r.Items), "strategy", "repeat.items must be a list or an expression that resolves to a list")
		}
		if r.Items != nil && r.Items.Kind == yaml.SequenceNode {
			iterations = len(r.Items.Content)
		}
		if !dynamic(r.Times) && r.Times != "" {
			iterations = atoiOr(r.Times, -1)
		}
		if r.MaxConcurrency != "" {
			concurrency = atoiOr(r.MaxConcurrency, 0)
		}
	default:
		c.integer(s.Node, "parallelism", s.Parallelism, 1, false, "parallelism")
		iterations = atoiOr(s.Parallelism, -1)
	}
	return true, concurrency == 0 || (iterations > 0 && concurrency >= iterations)
}

// matrix checks axes and exclusions (spec 6.2) and returns the number of combinations (-1 when
// it depends on expressions) and maxConcurrency.
func (c *checker) matrix(m *yaml.Node, concurrency int) (int, int) {
	if m.Kind == yaml.ScalarNode && dynamic(m.Value) {
		return -1, concurrency
	}
	if m.Kind != yaml.MappingNode {
		c.diags.Errorf(c.pos(m), "strategy", "matrix must be a mapping of axis names to value lists")
		return -1, concurrency
	}
	axes := map[string]bool{}
	combos := 1
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if matrixKeywords[k.Value] {
			continue
		}
		axes[k.Value] = true
		switch {
		case v.Kind == yaml.SequenceNode:
			if len(v.Content) == 0 {
				c.diags.Errorf(c.pos(v), "strategy", "matrix axis %q has no values", k.Value).SetHint("give at least one value, e.g. %s: [a, b]", k.Value)
			}
			combos *= len(v.Content)
		case v.Kind == yaml.ScalarNode && dynamic(v.Value):
			combos = -1 << 30
		case v.Kind == yaml.ScalarNode && strings.HasPrefix(strings.TrimSpace(v.Value), "["):
			var list []any
			if err := yaml.Unmarshal([]byte(v.Value), &list); err != nil {
				c.diags.Errorf(c.pos(v), "strategy", "matrix axis %q is not a valid list: %v", k.Value, err)
			} else if len(list) == 0 {
				c.diags.Errorf(c.pos(v), "strategy", "matrix axis %q has no values", k.Value)
			} else {
				combos *= len(list)
			}
		default:
			c.diags.Errorf(c.pos(v), "strategy", "matrix axis %q must be a list or an expression that resolves to a list", k.Value).
				SetHint("write %s: [a, b]", k.Value)
		}
	}
	if len(axes) == 0 {
		c.diags.Errorf(c.pos(m), "strategy", "matrix has no axes").SetHint("add an axis, e.g. region: [eu-west-1, us-east-1]")
	}
	if mc := pipeline.Field(m, "maxConcurrency"); mc != nil {
		c.integer(m, "maxConcurrency", mc.Value, 0, false, "matrix.maxConcurrency")
		concurrency = atoiOr(mc.Value, concurrency)
	}
	if ex := pipeline.Field(m, "exclude"); ex != nil && !(ex.Kind == yaml.ScalarNode && dynamic(ex.Value)) {
		if ex.Kind != yaml.SequenceNode {
			c.diags.Errorf(c.pos(ex), "strategy", "matrix.exclude must be a list of partial combinations")
		} else {
			for _, e := range ex.Content {
				if e.Kind != yaml.MappingNode {
					c.diags.Errorf(c.pos(e), "strategy", "each exclude entry must map axis names to values")
					continue
				}
				for i := 0; i+1 < len(e.Content); i += 2 {
					if !axes[e.Content[i].Value] {
						c.diags.Errorf(c.pos(e.Content[i]), "strategy", "exclude key %q is not a matrix axis", e.Content[i].Value).
							SetHint("axes: %s", strings.Join(sortedKeys(axes), ", "))
					}
				}
			}
		}
	}
	if combos < 0 {
		combos = -1
	}
	return combos, concurrency
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return n
}
