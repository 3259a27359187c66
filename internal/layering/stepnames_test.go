package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/steps"
)

// nameHomes are where a step type's name may be written: its definition in stepspec, the
// catalog, the frozen table that replays histories recorded before traits were planned, and
// the reference's own list of its step types (generated from its schema).
var nameHomes = []string{"stepspec/", "pipeline/steps/catalog.go", "workflows/legacytraits.go", "pipeline/reference/types_gen.go"}

// sharedNames are step types whose names other vocabularies use too: Http is also a store
// and a Git authentication type, Email a notification channel. Their literals are not checked.
var sharedNames = []string{"Http", "Email"}

// Adding a step type is one spec, one handler and one catalog entry: no other production code
// names a step type (docs/contributing.md). A name written elsewhere is code that chooses by
// type, which the catalog's traits or the family's handler table should say instead.
func TestStepTypeNamesLiveInTheirDefinitions(t *testing.T) {
	types := map[string]bool{}
	for _, typ := range steps.Types() {
		types[typ] = !slices.Contains(sharedNames, typ)
	}
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "hack" || rel == "internal" || rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") ||
			slices.ContainsFunc(nameHomes, func(h string) bool { return strings.HasPrefix(rel, h) }) {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && types[s] {
				found = append(found, fset.Position(lit.Pos()).String()[len(root)+1:]+": "+s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("%d step-type names outside stepspec and the catalog (name them by stepspec's constants, or say it in the catalog's traits):\n%s",
			len(found), strings.Join(found, "\n"))
	}
}
