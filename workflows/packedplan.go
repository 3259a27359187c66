package workflows

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gantry-cd/gantry/plan"
)

// planInline is the largest plan, as JSON, that an execution's input carries as it is. A larger
// one (a pipeline of thousands of stages) travels compressed: plans repeat themselves, so a
// 5,000-stage plan of 2.2 MB, over Temporal's 2 MiB payload limit, takes about a tenth of it.
const planInline = 256 << 10

// planUnpacked bounds what a compressed plan may inflate to, so that no input makes a worker
// allocate more than this for it.
const planUnpacked = 64 << 20

// pipelineInputFields is PipelineInput without its JSON methods.
type pipelineInputFields PipelineInput

// packedInput is PipelineInput on the wire: the plan as JSON, or compressed in PlanZ.
type packedInput struct {
	pipelineInputFields
	Plan  json.RawMessage `json:"plan,omitempty"`
	PlanZ []byte          `json:"planZ,omitempty"`
}

// MarshalJSON writes the input with its plan compressed when the plan is large.
func (in PipelineInput) MarshalJSON() ([]byte, error) {
	w := packedInput{pipelineInputFields: pipelineInputFields(in)}
	w.pipelineInputFields.Plan = nil
	if in.Plan != nil {
		raw, err := json.Marshal(in.Plan)
		if err != nil {
			return nil, err
		}
		if len(raw) <= planInline {
			w.Plan = raw
		} else {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			_, _ = zw.Write(raw)
			if err := zw.Close(); err != nil {
				return nil, err
			}
			w.PlanZ = z.Bytes()
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an input written by MarshalJSON, or by a Gantry that never compressed.
func (in *PipelineInput) UnmarshalJSON(b []byte) error {
	var w packedInput
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*in = PipelineInput(w.pipelineInputFields)
	raw := []byte(w.Plan)
	if len(w.PlanZ) > 0 {
		zr, err := zlib.NewReader(bytes.NewReader(w.PlanZ))
		if err != nil {
			return fmt.Errorf("the execution's compressed plan: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, planUnpacked+1)); err != nil {
			return fmt.Errorf("the execution's compressed plan: %w", err)
		}
		if len(raw) > planUnpacked {
			return fmt.Errorf("the execution's compressed plan inflates past %d MiB", planUnpacked>>20)
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		in.Plan = nil
		return nil
	}
	in.Plan = new(plan.Plan)
	return json.Unmarshal(raw, in.Plan)
}
