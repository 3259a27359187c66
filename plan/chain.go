package plan

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Chain is what a `type: Pipeline` stage runs: another pipeline's plan, compiled before the
// run with the stage's inputs applied. An input that is an expression of the parent is a
// placeholder in Plan until the stage starts: Inputs maps each placeholder to the parent's
// expression, and the stage puts the rendered value in its place (Bind).
type Chain struct {
	Pipeline string            `json:"pipeline"`
	Org      string            `json:"org,omitempty"`
	Project  string            `json:"project,omitempty"`
	File     string            `json:"file"`
	Plan     *Plan             `json:"plan"`
	Inputs   map[string]string `json:"inputs,omitempty"`
	Outputs  []Output          `json:"outputs,omitempty"`
}

// Output is one output of a chained pipeline: Value is an expression read in the child's
// context when it ends.
type Output struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ChainPlaceholder is the placeholder of the i-th parent expression in a chained pipeline's
// inputs. It is an expression itself, so that the child's checks accept it wherever an
// expression may stand.
func ChainPlaceholder(i int) string { return fmt.Sprintf("<+gantry.chainInput.i%d>", i) }

// Bind returns a copy of the chained plan with each placeholder replaced by its value.
func (c *Chain) Bind(values map[string]string) (*Plan, error) {
	raw, err := json.Marshal(c.Plan)
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		var out Plan
		return &out, json.Unmarshal(raw, &out)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	pairs := make([]string, 0, 2*len(values))
	for k, v := range values {
		pairs = append(pairs, k, v)
	}
	r := strings.NewReplacer(pairs...)
	tree = replaceStrings(tree, r)
	if raw, err = json.Marshal(tree); err != nil {
		return nil, err
	}
	var out Plan
	return &out, json.Unmarshal(raw, &out)
}

func replaceStrings(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return r.Replace(x)
	case map[string]any:
		for k, e := range x {
			x[k] = replaceStrings(e, r)
		}
	case []any:
		for i, e := range x {
			x[i] = replaceStrings(e, r)
		}
	}
	return v
}

// Chains lists the pipelines a plan's Pipeline stages run, in stage order.
func Chains(p *Plan) []*Chain {
	var out []*Chain
	Walk(p.Stages, nil, func(n *Node, _ []string) {
		if n.Chain != nil && n.Chain.Plan != nil {
			out = append(out, n.Chain)
		}
	})
	return out
}
