package inputs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
)

// Loaded are the sources read from input-set files and --set flags, with the file texts kept
// for caret snippets.
type Loaded struct {
	Sources []*Source
	Files   diag.Sources
}

// LoadFiles reads input sets and overlay input sets in the order given (spec 12.3). An overlay
// contributes its inputSetReferences in order; they are looked up by identifier among the input
// sets in the overlay's own folder.
func LoadFiles(paths []string, pipelineID string) (*Loaded, diag.List) {
	var diags diag.List
	out := &Loaded{Files: diag.Sources{}}
	for _, p := range paths {
		f, ds := parseFile(p, out.Files)
		diags.Add(ds...)
		if f == nil || ds.HasErrors() {
			continue
		}
		switch {
		case f.InputSet != nil:
			if s := fromInputSet(f, pipelineID, &diags); s != nil {
				out.Sources = append(out.Sources, s)
			}
		case f.Overlay != nil:
			out.Sources = append(out.Sources, fromOverlay(f, pipelineID, out.Files, &diags)...)
		default:
			diags.Errorf(diag.Pos{File: p, Line: 1, Col: 1}, "input-set", "%s is not an input set", p).
				SetHint("input set files start with `inputSet:` or `overlayInputSet:`")
		}
	}
	return out, diags
}

func parseFile(path string, files diag.Sources) (*pipeline.File, diag.List) {
	src, err := os.ReadFile(path)
	if err != nil {
		var d diag.List
		d.Errorf(diag.Pos{File: path}, "io", "cannot read input set: %v", err)
		return nil, d
	}
	files[path] = src
	return pipeline.Parse(path, src)
}

func fromInputSet(f *pipeline.File, pipelineID string, diags *diag.List) *Source {
	is := f.InputSet
	if id := pipeline.Field(is.Pipeline, "identifier"); id != nil && pipelineID != "" && id.Value != pipelineID {
		diags.Errorf(pipeline.NodePos(f.Name, id), "input-set", "input set %s is for pipeline %q, not %q", is.Identifier, id.Value, pipelineID)
		return nil
	}
	return SourceFromTree("input set "+is.Identifier, f.Name, is.Pipeline)
}

func fromOverlay(f *pipeline.File, pipelineID string, files diag.Sources, diags *diag.List) []*Source {
	dir := filepath.Dir(f.Name)
	byID := map[string]*pipeline.File{}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	sort.Strings(matches)
	for _, m := range matches {
		if m == f.Name {
			continue
		}
		src, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		other, ds := pipeline.Parse(m, src)
		if ds.HasErrors() {
			continue
		}
		files[m] = src
		switch {
		case other.InputSet != nil:
			byID[other.InputSet.Identifier] = other
		case other.Overlay != nil:
			byID[other.Overlay.Identifier] = other
		}
	}
	refs := pipeline.Field(f.Overlay.Node, "inputSetReferences")
	var out []*Source
	for i, ref := range f.Overlay.InputSetReferences {
		pos := pipeline.NodePos(f.Name, refs.Content[i])
		target, ok := byID[ref]
		switch {
		case !ok:
			diags.Errorf(pos, "overlay-ref", "overlay %s references input set %q, which is not in %s", f.Overlay.Identifier, ref, dir).
				SetHint("put the input set file next to the overlay, with `identifier: %s`", ref)
		case target.Overlay != nil:
			diags.Errorf(pos, "overlay-ref", "overlay %s references overlay %q; overlays may only reference input sets", f.Overlay.Identifier, ref)
		default:
			if s := fromInputSet(target, pipelineID, diags); s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// FromSetFlags turns `--set pipeline.variables.x=1` assignments into one source. The value is
// read as YAML, so lists and maps can be given inline.
func FromSetFlags(sets []string) (*Source, diag.List) {
	var diags diag.List
	s := &Source{Name: "--set", File: "--set", Values: map[string]*yaml.Node{}, Identities: map[string]map[string]string{}}
	for i, a := range sets {
		pos := diag.Pos{File: "--set", Line: i + 1, Col: 1}
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || !strings.HasPrefix(k, "pipeline.") || strings.HasSuffix(k, ".") {
			diags.Errorf(pos, "set-flag", "--set %q: expected FQN=value", a).
				SetHint("for example --set pipeline.variables.region=eu-west-1 or --set pipeline.stages.deploy.timeout=30m")
			continue
		}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(v), &n); err != nil || len(n.Content) == 0 {
			n = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}}}
		}
		if d := pipeline.CheckExpansion("--set", &n); d != nil {
			diags.Errorf(pos, d.Code, "--set %s: %s", k, d.Message).SetHint("%s", d.Hint)
			continue
		}
		val := n.Content[0]
		if val.Kind == yaml.ScalarNode {
			val.Tag, val.Style = "!!str", 0
		}
		val.Line, val.Column = i+1, len(k)+2
		s.Values[k] = val
	}
	return s, diags
}

// Describe names an open input for messages.
func (o Open) Describe() string {
	switch {
	case o.ExecutionInput:
		return o.FQN + " (asked when its node starts)"
	case o.Required:
		return o.FQN
	}
	return fmt.Sprintf("%s (optional)", o.FQN)
}
