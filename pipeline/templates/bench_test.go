package templates_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/pipeline/templates"
)

// stageTemplate is template i of the benchmark: a Custom stage of three steps with two inputs.
func stageTemplate(i int) string {
	return fmt.Sprintf(`template:
  name: t%d
  identifier: t%d
  versionLabel: v1
  type: Stage
  spec:
    type: Custom
    spec:
      execution:
        steps:
          - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: <+input>}}}}
          - step: {type: ShellScript, name: b, identifier: b, spec: {shell: Sh, source: {type: Inline, spec: {script: echo <+stage.variables.region>}}}}
          - stepGroup:
              name: g
              identifier: g
              steps:
                - step: {type: Wait, name: w, identifier: w, spec: {duration: 10s}}
    variables:
      - name: region
        type: String
        value: <+input>.allowedValues(eu,us)
`, i, i)
}

// benchFiles writes 5 stage templates and a pipeline of n stages linking them, and the same
// pipeline written out in full.
func benchFiles(b *testing.B, n int) (linked, full string) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, "templates", fmt.Sprintf("t%d.yaml", i)), []byte(stageTemplate(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var l, f strings.Builder
	head := "pipeline:\n  name: p\n  identifier: p\n  stages:\n"
	l.WriteString(head)
	f.WriteString(head)
	for i := range n {
		fmt.Fprintf(&l, `    - stage:
        name: s%d
        identifier: s%d
        template:
          templateRef: account.t%d
          versionLabel: v1
          templateInputs:
            type: Custom
            spec:
              execution:
                steps:
                  - step: {identifier: a, type: ShellScript, spec: {source: {spec: {script: echo %d}}}}
            variables:
              - {name: region, type: String, value: eu}
`, i, i, i%5, i)
		fmt.Fprintf(&f, `    - stage:
        name: s%d
        identifier: s%d
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: echo %d}}}}
              - step: {type: ShellScript, name: b, identifier: b, spec: {shell: Sh, source: {type: Inline, spec: {script: echo <+stage.variables.region>}}}}
              - stepGroup:
                  name: g
                  identifier: g
                  steps:
                    - step: {type: Wait, name: w, identifier: w, spec: {duration: 10s}}
        variables:
          - {name: region, type: String, value: eu}
`, i, i, i)
	}
	linked, full = filepath.Join(dir, "linked.yaml"), filepath.Join(dir, "full.yaml")
	if err := os.WriteFile(linked, []byte(l.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(f.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return linked, full
}

// BenchmarkLoadTemplated200 loads (finds templates, expands, validates, compiles) a pipeline
// of 200 stages linking 5 stage templates; BenchmarkLoadInline200 loads the same pipeline
// written out in full, its baseline.
func BenchmarkLoadTemplated200(b *testing.B) { benchLoad(b, true) }

func BenchmarkLoadInline200(b *testing.B) { benchLoad(b, false) }

func benchLoad(b *testing.B, linked bool) {
	l, f := benchFiles(b, 200)
	path := f
	if linked {
		path = l
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := load.File(path, load.Options{ForRun: true})
		if err != nil || !r.OK() {
			b.Fatalf("%v\n%s", err, r.Diags.Render(r.Sources))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/load")
}

// BenchmarkExpand200 is the expansion alone: finding the 5 templates and expanding 200 links.
func BenchmarkExpand200(b *testing.B) {
	l, _ := benchFiles(b, 200)
	src, err := os.ReadFile(l)
	if err != nil {
		b.Fatal(err)
	}
	dirs := []string{filepath.Join(filepath.Dir(l), "templates")}
	b.ResetTimer()
	for b.Loop() {
		f, _ := pipeline.ParseYAML(l, src)
		lib, _ := templates.Load(dirs, "")
		if _, d := templates.Expand(l, pipeline.NewOrigins(), f.Root, lib); d.HasErrors() {
			b.Fatal(d)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/expand")
}
