package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gantry-cd/gantry/"

// layers lists Gantry's layers from the bottom up, as docs/architecture.md draws them; a
// package may import packages of its own layer and of the layers below. A package is placed
// by the longest prefix listed; internal/ (test servers and fixtures) is outside the order.
var layers = []struct {
	name     string
	packages []string
}{
	{"leaves", []string{"status", "expressions", "plan/duration", "pipeline/diag", "pipeline/reference",
		"manifests", "metrics", "policies", "devserver", "activities/objstore", "activities/container/wire"}},
	{"plan", []string{"plan", "identity", "codec"}},
	{"contract", []string{"activities"}}, // the activities package itself: names, inputs, results
	{"front end", []string{"pipeline"}},
	{"activities", []string{"activities/"}},
	{"workflows", []string{"workflows"}},
	{"control", []string{"starter", "access", "triggers"}},
	{"processes", []string{"worker", "webui", "server"}},
	{"commands", []string{"cli", "cmd", "hack", "e2e"}},
}

// neverLinks names what a layer must not depend on even indirectly: workflow code runs in
// Temporal's deterministic sandbox and reaches activities only by name.
var neverLinks = map[string]string{"workflows": "activities"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func layerOf(t *testing.T, path string) (int, bool) {
	rel, ok := strings.CutPrefix(path, module)
	if !ok || rel == "internal" || strings.HasPrefix(rel, "internal/") {
		return 0, false
	}
	best, at := -1, ""
	for i, l := range layers {
		for _, p := range l.packages {
			match := rel == p || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/")
			if strings.HasSuffix(p, "/") {
				match = strings.HasPrefix(rel, p)
			}
			if match && len(p) > len(at) {
				best, at = i, p
			}
		}
	}
	if best < 0 {
		t.Errorf("package %s is in no layer: add it to the table in internal/layering and to docs/architecture.md", rel)
		return 0, false
	}
	return best, true
}

func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var all []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("read go list's output: %v", err)
		}
		all = append(all, p)
	}
	if len(all) < 20 {
		t.Fatalf("go list found %d packages; expected the whole module", len(all))
	}
	return all
}

// No package imports one of a layer above its own.
func TestNoImportReachesUp(t *testing.T) {
	for _, p := range packages(t) {
		from, ok := layerOf(t, p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			to, ok := layerOf(t, imp)
			if ok && to > from {
				t.Errorf("%s (layer %q) imports %s (layer %q, above it): move what both need to a layer below",
					strings.TrimPrefix(p.ImportPath, module), layers[from].name, strings.TrimPrefix(imp, module), layers[to].name)
			}
		}
	}
}

// Workflow code links no activity family, even through another package.
func TestWorkflowsLinkNoActivityFamily(t *testing.T) {
	for _, p := range packages(t) {
		from, ok := layerOf(t, p.ImportPath)
		if !ok {
			continue
		}
		banned, ok := neverLinks[layers[from].name]
		if !ok {
			continue
		}
		for _, dep := range p.Deps {
			if to, ok := layerOf(t, dep); ok && layers[to].name == banned {
				t.Errorf("%s links %s: workflow code reaches activities by name, through the activities contract only",
					strings.TrimPrefix(p.ImportPath, module), strings.TrimPrefix(dep, module))
			}
		}
	}
}

// Every package says what it is for in the first line of its documentation (go doc).
func TestEveryPackageIsDocumented(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, doc, _ := strings.Cut(line, "\t")
		if len(strings.Fields(doc)) < 4 {
			t.Errorf("package %s has no package comment saying what it is for (got %q)", strings.TrimPrefix(path, module), doc)
		}
	}
}
