package load_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
)

// inputRoots are the root keys of the files Gantry reads: pipelines, templates, entities,
// input sets and triggers.
var inputRoots = []string{"pipeline", "template", "service", "environment", "environmentGroup",
	"infrastructureDefinition", "connector", "inputSet", "overlayInputSet", "trigger"}

// repositoryInputs are every YAML file of the repository whose root is one of inputRoots:
// examples, fixtures, scaffolds and test data.
func repositoryInputs(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".gantry" || d.Name() == ".test-output") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); d.IsDir() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err == nil && slices.Contains(inputRoots, pipeline.RootKey(src)) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 60 {
		t.Fatalf("found %d input files in the repository; the walk is broken", len(out))
	}
	return out
}

// Every pipeline, template, entity, input set and trigger file of the repository loads without
// a panic, concurrently (make test runs this under the race detector), for a plain validate and
// for a run, and every diagnostic names its file.
func TestLoadEveryRepositoryFile(t *testing.T) {
	files := repositoryInputs(t)
	var wg sync.WaitGroup
	for _, f := range files {
		for _, forRun := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s (for run %v): panic: %v", f, forRun, p)
					}
				}()
				r, err := load.File(f, load.Options{ForRun: forRun})
				if err != nil {
					t.Errorf("%s: %v", f, err)
					return
				}
				for _, d := range r.Diags {
					if d.Pos.File == "" {
						t.Errorf("%s: diagnostic without a file: %+v", f, d)
					}
				}
			}()
		}
	}
	wg.Wait()
}

// Every expression in the repository's pipelines (examples, scaffolds, fixtures) names what its
// pipeline defines: the reference check raises nothing on pipelines that run, so a warning it
// raises elsewhere is worth reading. The invalid examples are left out.
func TestRepositoryPipelinesReferenceWhatTheyDefine(t *testing.T) {
	for _, f := range repositoryInputs(t) {
		if strings.Contains(filepath.ToSlash(f), "examples/invalid/") {
			continue
		}
		r, err := load.File(f, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range r.Diags {
			if d.Code == diag.UnknownReference && d.Severity == diag.Warning {
				t.Errorf("%s", d)
			}
		}
	}
}
