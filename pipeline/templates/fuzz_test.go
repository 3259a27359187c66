package templates_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// FuzzExpand expands arbitrary pipeline text against the example templates: it must never
// panic or loop, whatever links, inputs and overrides the text holds.
func FuzzExpand(f *testing.F) {
	for _, name := range []string{"pipeline.yaml", "pipeline-template.yaml"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "examples", "templates", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	f.Add(pipelineOf("              - step:\n                  identifier: x\n                  name: x\n                  template: {templateRef: account.smoke_check, templateInputs: {spec: [1, 2]}}\n"))
	f.Add("pipeline:\n  template: {templateRef: account.checks, templateOverrides: {when: x}}\n")
	lib, diags := templates.Load([]string{filepath.Join("..", "..", "examples", "templates", "templates")}, "")
	if diags.HasErrors() {
		f.Fatal(diags)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, _ := pipeline.ParseYAML("p.yaml", []byte(src))
		if file.Root == nil {
			return
		}
		templates.Expand("p.yaml", pipeline.NewOrigins(), file.Root, lib)
		file.Decode()
	})
}
