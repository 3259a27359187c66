package server

import (
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
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
	for _, r := range Webhooks {
		served = append(served, r.Method+" "+r.Pattern)
	}
	sort.Strings(documented)
	sort.Strings(served)
	if strings.Join(documented, "\n") != strings.Join(served, "\n") {
		t.Errorf("OpenAPI documents\n%s\nbut the server serves\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
}
