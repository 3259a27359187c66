package validate

import (
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/inputs"
)

// getValueRe finds a secret named by a literal in an expression: secrets.getValue("id").
var getValueRe = regexp.MustCompile(`secrets\.getValue\(\s*["']([^"']+)["']\s*\)`)

// SecretStore is every place a run's secrets can come from, when they can all be listed.
type SecretStore interface {
	Has(id string) bool
	// Where says how to add secret id to the store.
	Where(id string) string
}

// SecretReferences checks the secrets a pipeline names with secrets.getValue against a store
// that can list what it holds, so that a misspelt name is caught before the run rather than
// failing its step: each one the store does not hold is an unknown-reference at its line and
// column. Only a caller that knows every place a secret can come from asks this.
func SecretReferences(src pipeline.Source, p *pipeline.Pipeline, store SecretStore) diag.List {
	if p == nil || p.Node == nil {
		return nil
	}
	var diags diag.List
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind != yaml.ScalarNode {
			for _, c := range n.Content {
				walk(c)
			}
			return
		}
		if inputs.IsRuntimeInput(n.Value) {
			return
		}
		for _, m := range getValueRe.FindAllStringSubmatchIndex(n.Value, -1) {
			id := n.Value[m[2]:m[3]]
			if store.Has(id) {
				continue
			}
			diags.Warnf(src.OffsetPos(n, m[0]), diag.UnknownReference,
				"secret %s is not in the secret store, so the step that reads it would fail", quote(id)).
				SetHint("%s", store.Where(id))
		}
	}
	walk(p.Node)
	return diags
}
