package load_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// FuzzLoad: the loader never panics on any input, and every diagnostic has a position.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	bad, _ := filepath.Glob("../../examples/invalid/*.yaml")
	for _, p := range append(files, bad...) {
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
