package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// Every example pipeline and input set validates cleanly: no errors and no warnings.
func TestExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	sets, _ := filepath.Glob("../../examples/inputsets/*.yaml")
	triggers, _ := filepath.Glob("../../examples/triggers/*.yaml")
	files = append(append(files, sets...), triggers...)
	if len(files) < 12 {
		t.Fatalf("want at least 12 examples, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := load.File(f, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Diags) > 0 {
				t.Fatalf("unexpected diagnostics:\n%s", r.Diags.Render(r.Sources))
			}
		})
	}
}

// Each broken example names its expected diagnostic in a "# want: line:col: message" header;
// the validator must report exactly that, at that position. A "# strict:" second line validates
// it with --strict, and checks that without it the file is valid (warnings only).
func TestInvalidExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/invalid/*.yaml")
	if len(files) < 20 {
		t.Fatalf("want at least 20 invalid examples, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(src), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("first line must be '# want: line:col: message'")
			}
			strict := strings.HasPrefix(strings.SplitN(string(src), "\n", 3)[1], "# strict:")
			if strict && !load.Bytes(f, src, load.Options{}).OK() {
				t.Fatalf("without --strict the file should be valid (unknown keys are warnings)")
			}
			r := load.Bytes(f, src, load.Options{Strict: strict})
			if r.OK() {
				t.Fatalf("file validated, want error %q", want)
			}
			var got []string
			for _, d := range r.Diags.Errors() {
				line := d.String()
				got = append(got, line)
				if line == f+":"+want {
					return
				}
			}
			t.Fatalf("want %s:%s\ngot:\n%s", f, want, strings.Join(got, "\n"))
		})
	}
}

func TestInputSetsMergeForRun(t *testing.T) {
	r, err := load.File("../../examples/11-runtime-inputs.yaml", load.Options{
		InputSets: []string{"../../examples/inputsets/prod-hotfix.yaml"},
		Sets:      []string{"pipeline.variables.note=from the command line"},
		ForRun:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("unexpected errors:\n%s", r.Diags.Render(r.Sources))
	}
	want := map[string]any{
		"pipeline.variables.tier":                 "gold",   // hotfix's <+input> does not erase prod's gold
		"pipeline.variables.version":              "v1.2.3", // the later input set wins
		"pipeline.variables.note":                 "from the command line",
		"pipeline.stages.deploy.variables.region": "eu-west-1",
		"pipeline.stages.deploy.timeout":          "1h", // .default(1h)
	}
	for fqn, v := range want {
		if r.Values[fqn] != v {
			t.Errorf("%s = %#v, want %#v", fqn, r.Values[fqn], v)
		}
	}
	if got := r.Merged.Variables[1].Value; got != "v1.2.3" {
		t.Errorf("merged pipeline variable version = %q", got)
	}
	if len(r.Open) != 1 || !r.Open[0].ExecutionInput {
		t.Errorf("want only the execution input open, got %+v", r.Open)
	}
}

func TestMissingRequiredInputForRun(t *testing.T) {
	r, err := load.File("../../examples/11-runtime-inputs.yaml", load.Options{ForRun: true})
	if err != nil {
		t.Fatal(err)
	}
	// version is required; region is optional, but its allowedValues refuse the empty value an
	// optional variable would otherwise take (spec C92).
	errs := r.Diags.Errors()
	if len(errs) != 2 || !strings.Contains(errs[0].String(), "runtime input pipeline.variables.version has no value") ||
		!strings.Contains(errs[1].String(), "runtime input pipeline.stages.deploy.variables.region has no value") {
		t.Fatalf("want missing-input errors naming version and region, got:\n%s", r.Diags.Render(r.Sources))
	}
	if !strings.HasPrefix(errs[0].String(), "../../examples/11-runtime-inputs.yaml:13:14:") {
		t.Errorf("error should point at the field: %s", errs[0])
	}
}

func TestBadInputValueIsReportedAtItsSource(t *testing.T) {
	r, err := load.File("../../examples/11-runtime-inputs.yaml", load.Options{Sets: []string{
		"pipeline.variables.tier=bronze", "pipeline.variables.version=xv12"}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Diags.Errors()
	if len(got) != 2 {
		t.Fatalf("want 2 errors, got:\n%s", r.Diags.Render(r.Sources))
	}
	if !strings.Contains(got[0].String(), `--set:1:25: --set: pipeline.variables.tier: value "bronze" is not allowed`) {
		t.Errorf("got %s", got[0])
	}
	if !strings.Contains(got[1].String(), `value "xv12" does not match regex`) {
		t.Errorf("got %s", got[1])
	}
}

// C49: invalid loop counts are rejected before a run.
func TestInvalidLoopCounts(t *testing.T) {
	for _, strategy := range []string{"{parallelism: 0}", "{repeat: {times: 0}}", "{matrix: {os: []}}", "{matrix: {os: [a], exclude: [{arch: b}]}}"} {
		src := `pipeline:
  name: p
  identifier: p
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, strategy: ` + strategy + `, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
`
		if r := load.Bytes("c49.yaml", []byte(src), load.Options{}); r.OK() {
			t.Errorf("strategy %s was accepted", strategy)
		}
	}
}
