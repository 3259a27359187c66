package workflows

import (
	"encoding/json"

	"github.com/gantry-cd/gantry/stepspec"
)

// specOf reads a builtin step's spec (the plan's rendered map) into its stepspec type S, the
// type the front end decoded the YAML into. Marshalling a map is deterministic (sorted keys).
func specOf[S any](spec any) (S, error) {
	var s S
	b, err := json.Marshal(spec)
	if err != nil {
		return s, err
	}
	return stepspec.Decode[S](b)
}
