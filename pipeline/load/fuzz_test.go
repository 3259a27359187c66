package load_test

import (
	"os"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// FuzzLoad: the loader never panics on any input, and every diagnostic has a position. It starts
// from every pipeline, template, entity, input set and trigger file of the repository.
func FuzzLoad(f *testing.F) {
	for _, p := range repositoryInputs(f) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		r := load.Bytes("fuzz.yaml", src, load.Options{})
		for _, d := range r.Diags {
			if d.Pos.File != "fuzz.yaml" && d.Pos.File != "--set" {
				t.Fatalf("diagnostic without the file: %+v", d)
			}
		}
	})
}
