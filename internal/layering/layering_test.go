package layering

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gantry-cd/gantry/"

// layer is one row of docs/architecture.md's layer table. A package belongs to the layer
// that lists the longest prefix of its path ("pipeline/" is every package below pipeline).
type layer struct {
	name     string
	packages []string
	// imports are the layers below this one that its packages may import, besides their own.
	imports []string
}

// layers lists Gantry's layers from the bottom up, as docs/architecture.md's table draws
// them (TestPageMatchesTable compares the two). internal/ (test servers and fixtures) is
// outside the order, but for the one package the programs themselves use.
var layers = []layer{
	{"vocabulary", []string{"status", "expressions", "plan/duration", "pipeline/diag", "pipeline/reference",
		"stepspec", "activities/container/wire"}, nil},
	{"engines", []string{"policies", "manifests", "metrics", "devserver", "internal/freeport", "activities/objstore"},
		[]string{"vocabulary"}},
	{"plan", []string{"plan", "identity", "identity/", "codec"}, []string{"vocabulary"}},
	{"contract", []string{"contract"}, []string{"plan", "vocabulary"}},
	{"front end", []string{"pipeline", "pipeline/"}, []string{"contract", "plan", "engines", "vocabulary"}},
	{"families", []string{"activities/"}, []string{"contract", "plan", "engines", "vocabulary"}},
	{"workflows", []string{"workflows", "workflows/"}, []string{"contract", "plan", "vocabulary"}},
	{"control", []string{"starter", "access", "triggers", "triggers/", "remote", "ledger"},
		[]string{"workflows", "front end", "contract", "plan", "engines", "vocabulary"}},
	{"processes", []string{"worker", "webui", "server"},
		[]string{"control", "workflows", "families", "front end", "contract", "plan", "engines", "vocabulary"}},
	{"commands", []string{"cli", "cmd/", "hack/", "e2e"},
		[]string{"processes", "control", "workflows", "families", "front end", "contract", "plan", "engines", "vocabulary"}},
}

// familyLinks names the families a package above them may import directly. Only the worker
// and the commands link step families; a process builds its shared services (the secret
// store, the log store, the notification sender) once, so it links those families alone.
var familyLinks = map[string][]string{
	"worker": nil, // every family: it registers them
	"server": {"activities/logs", "activities/secrets"},
	"cli":    {"activities/gitstore", "activities/logs", "activities/notify", "activities/objstore", "activities/secrets"},
	// The global freeze is one client of the freeze workflow: the API sets it through the
	// starter, and the activity a stage asks reads it.
	"starter": {"activities/freezes"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func rel(path string) (string, bool) { return strings.CutPrefix(path, module) }

// layerOf returns the index of the layer path belongs to; ok is false outside the module and
// for internal/ packages outside the order.
func layerOf(t *testing.T, path string) (int, bool) {
	r, ok := rel(path)
	if !ok {
		return 0, false
	}
	best, at := -1, ""
	for i, l := range layers {
		for _, p := range l.packages {
			match := r == p
			if strings.HasSuffix(p, "/") {
				match = strings.HasPrefix(r, p)
			}
			if match && len(p) > len(at) {
				best, at = i, p
			}
		}
	}
	if best < 0 {
		if r == "internal" || strings.HasPrefix(r, "internal/") {
			return 0, false
		}
		t.Errorf("package %s is in no layer: add it to the table in internal/layering and to docs/architecture.md", r)
		return 0, false
	}
	return best, true
}

func layerIndex(name string) int {
	return slices.IndexFunc(layers, func(l layer) bool { return l.name == name })
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

// mayImport says whether a package of layer from may import one of layer to.
func mayImport(from, to int) bool {
	return from == to || slices.Contains(layers[from].imports, layers[to].name)
}

// Every import goes to the package's own layer or to one its row names.
func TestImportsFollowTheTable(t *testing.T) {
	for _, p := range packages(t) {
		from, ok := layerOf(t, p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			r, inModule := rel(imp)
			to, ok := layerOf(t, imp)
			if !ok {
				if inModule && strings.HasPrefix(r, "internal/") && layers[from].name != "commands" {
					t.Errorf("%s imports %s: test servers and fixtures are for tests and commands only", strip(p.ImportPath), r)
				}
				continue
			}
			if to == layerIndex("families") && from > to {
				continue // who links a family is TestWhoLinksAFamily's
			}
			if !mayImport(from, to) {
				t.Errorf("%s (layer %q) imports %s (layer %q), which its row of docs/architecture.md does not allow: move what both need to a layer both may import",
					strip(p.ImportPath), layers[from].name, r, layers[to].name)
			}
		}
	}
}

// Only the worker and the commands link step families; other packages link the families
// familyLinks names, and no family links the front end or workflow code, even indirectly.
func TestWhoLinksAFamily(t *testing.T) {
	families := layerIndex("families")
	for _, p := range packages(t) {
		from, ok := layerOf(t, p.ImportPath)
		if !ok || from == families || layers[from].name == "commands" {
			continue
		}
		name := strip(p.ImportPath)
		allowed, listed := familyLinks[name]
		for _, imp := range p.Imports {
			if to, ok := layerOf(t, imp); !ok || to != families {
				continue
			}
			if listed && (allowed == nil || slices.Contains(allowed, strip(imp))) {
				continue
			}
			t.Errorf("%s imports the family %s: only the worker links step families (internal/layering's familyLinks and docs/architecture.md say which services a process may link)",
				name, strip(imp))
		}
	}
}

// neverLinks names the layers a layer must not depend on even through another package.
// Workflow code runs in Temporal's deterministic sandbox and reaches activities by name; it
// reads plans, never YAML or policies; the families act on rendered specs, never on YAML.
var neverLinks = map[string][]string{
	"workflows": {"families", "front end", "engines"},
	"families":  {"front end", "workflows"},
	"contract":  {"front end", "families", "workflows", "engines"},
}

func TestNothingLinksWhatItMustNot(t *testing.T) {
	for _, p := range packages(t) {
		from, ok := layerOf(t, p.ImportPath)
		if !ok {
			continue
		}
		banned := neverLinks[layers[from].name]
		for _, dep := range p.Deps {
			if to, ok := layerOf(t, dep); ok && to != from && slices.Contains(banned, layers[to].name) {
				t.Errorf("%s (layer %q) links %s (layer %q), even if through another package: %s",
					strip(p.ImportPath), layers[from].name, strip(dep), layers[to].name, why[layers[from].name])
			}
		}
	}
}

var why = map[string]string{
	"workflows": "workflow code reaches activities by name through the contract, and reads the plan, never YAML or policies",
	"families":  "a family acts on the rendered spec its step receives; what it shares with the front end belongs in stepspec or contract",
	"contract":  "the contract holds no I/O and no front end, so that workflow code may import it",
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
			t.Errorf("package %s has no package comment saying what it is for (got %q)", strip(path), doc)
		}
	}
}

func strip(path string) string { r, _ := rel(path); return r }

var codeRE = regexp.MustCompile("`([^`]+)`")

// section returns the lines of docs/architecture.md under the heading ## title.
func section(t *testing.T, title string) []string {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "## ") {
			in = strings.TrimPrefix(l, "## ") == title
			continue
		}
		if in {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("docs/architecture.md has no section %q", title)
	}
	return lines
}

// tableRows returns the cells of a Markdown table's body rows.
func tableRows(lines []string) [][]string {
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) > 0 {
		rows = rows[1:] // the header
	}
	return rows
}

// The page's layer table is this test's: the same layers in the same order, each with the
// same packages and the same layers below it may import.
func TestPageMatchesTable(t *testing.T) {
	rows := tableRows(section(t, "Packages, by layer"))
	if len(rows) != len(layers) {
		t.Fatalf("docs/architecture.md's layer table has %d rows, internal/layering %d", len(rows), len(layers))
	}
	for i, l := range layers {
		row := rows[i]
		if len(row) < 4 {
			t.Errorf("row %d of the layer table has %d cells, want 4 (layer, packages, may import, why)", i+1, len(row))
			continue
		}
		if row[0] != l.name {
			t.Errorf("layer %d: page says %q, internal/layering %q", i+1, row[0], l.name)
		}
		var want []string
		for _, p := range l.packages {
			want = append(want, strings.TrimSuffix(p, "/")+map[bool]string{true: "/*"}[strings.HasSuffix(p, "/")])
		}
		got := backticked(row[1])
		if !slices.Equal(sorted(got), sorted(want)) {
			t.Errorf("layer %q: page lists %v, internal/layering %v", l.name, got, want)
		}
		var imports []string
		if row[2] != "" && row[2] != "—" {
			for _, s := range strings.Split(row[2], ",") {
				imports = append(imports, strings.TrimSpace(s))
			}
		}
		if !slices.Equal(sorted(imports), sorted(l.imports)) {
			t.Errorf("layer %q: page says it may import %v, internal/layering %v", l.name, imports, l.imports)
		}
	}
}

// "Every package" names every package of the module.
func TestPageNamesEveryPackage(t *testing.T) {
	named := map[string]bool{}
	for _, row := range tableRows(section(t, "Every package")) {
		for _, p := range backticked(row[0]) {
			named[p] = true
		}
	}
	for _, p := range packages(t) {
		if r := strip(p.ImportPath); !named[r] {
			t.Errorf("docs/architecture.md's \"Every package\" does not name %s", r)
		}
	}
}

func backticked(cell string) []string {
	var out []string
	for _, m := range codeRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
