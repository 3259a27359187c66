package triggers

import (
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// decode reads a validated trigger's raw part; validation already reported any problem.
func decode(n *yaml.Node, out any) bool {
	if n == nil {
		return false
	}
	var l diag.List
	d := &pipeline.Decoder{File: "trigger", Diags: &l}
	d.Decode(n, out, "trigger")
	return !l.HasErrors()
}
