package server

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// The OpenAPI document and the server's routes describe the same operations.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range Routes {
		served = append(served, r.Method+" "+r.Pattern)
	}
	for _, r := range append(Webhooks, SignInRoutes...) {
		served = append(served, r.Method+" "+r.Pattern)
	}
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Errorf("OpenAPI documents\n%s\nbut the server serves\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}

// The documented schemas name exactly the JSON fields the API returns.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"ExecutionSummary": starter.Summary{}, "Node": workflows.Node{}, "AuditRecord": workflows.AuditRecord{}} {
		var documented []string
		for k := range doc.Components.Schemas[name].Properties {
			documented = append(documented, k)
		}
		sort.Strings(documented)
		fields := jsonFields(reflect.TypeOf(v))
		if strings.Join(documented, " ") != strings.Join(fields, " ") {
			t.Errorf("schema %s documents\n  %s\nbut the API returns\n  %s", name, strings.Join(documented, " "), strings.Join(fields, " "))
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
