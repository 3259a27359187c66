package workflows

import (
	"encoding/base64"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every workflow.GetVersion change ID (the change* constants of api.go) has recorded histories
// on both sides: one from before the change (no Version marker for it: replays the old branch)
// and one from after (its marker: replays the new branch). Without the "before" history a
// GetVersion guard is untested; without the "after" one the new code path is.
func TestChangeIDsHaveHistoriesBeforeAndAfter(t *testing.T) {
	ids := changeIDs(t)
	if len(ids) == 0 {
		t.Fatal("no change IDs found in api.go")
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	before, after := map[string]int{}, map[string]int{}
	for _, f := range files {
		markers, calls := historyMarkers(t, f)
		for _, id := range ids {
			switch {
			case markers[id]:
				after[id]++
			case calls: // a workflow of a type that takes the guarded path, recorded before it
				before[id]++
			}
		}
	}
	for _, id := range ids {
		if before[id] == 0 || after[id] == 0 {
			t.Errorf("change ID %q: %d histories from before the change, %d from after; record the missing side (see docs/scale.md, Changing workflow code)", id, before[id], after[id])
		}
	}
}

// changeIDs reads the values of the change* constants from api.go.
func changeIDs(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "api.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if strings.HasPrefix(name.Name, "change") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, v)
					}
				}
			}
		}
	}
	return out
}

// historyMarkers returns the change IDs of a history's Version markers, and whether it is a
// pipeline or stage workflow (the types whose code holds the GetVersion calls).
func historyMarkers(t *testing.T, file string) (map[string]bool, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Events []struct {
			Started *struct {
				WorkflowType struct{ Name string } `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
			Marker *struct {
				MarkerName string `json:"markerName"`
				Details    map[string]struct {
					Payloads []struct{ Data string } `json:"payloads"`
				} `json:"details"`
			} `json:"markerRecordedEventAttributes"`
		} `json:"events"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	markers := map[string]bool{}
	guarded := false
	for _, e := range h.Events {
		if e.Started != nil {
			guarded = e.Started.WorkflowType.Name == PipelineName || e.Started.WorkflowType.Name == StageName
		}
		if e.Marker == nil || e.Marker.MarkerName != "Version" {
			continue
		}
		for _, p := range e.Marker.Details["change-id"].Payloads {
			raw, _ := base64.StdEncoding.DecodeString(p.Data)
			var id string
			if json.Unmarshal(raw, &id) == nil {
				markers[id] = true
			}
		}
	}
	return markers, guarded
}
