package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

// examples/custom's files, by name relative to the folder.
func customFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"pipeline.yaml", "service.yaml", "environment.yaml", "infrastructure.yaml", "templates/hosts.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "custom", name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	return out
}

// A CustomDeployment stage resolves its infrastructure's deployment template (script, list
// path, attributes, variables with the infrastructure's values); broken templates and
// infrastructures are errors at their lines.
func TestCustomDeploymentResolves(t *testing.T) {
	r := loadIn(t, customFiles(t), "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("examples/custom does not load:\n%s", r.Diags.Render(r.Sources))
	}
	inf := r.Plan.Stages[0].Deploy.Infra
	if c := inf.Custom; c == nil || c.Template != "hosts_from_file@v1" || c.ListPath != "hosts" || len(c.Attributes) != 3 ||
		len(c.Variables) != 1 || c.Variables[0].Value != "blue" || !strings.Contains(c.Script, "INSTANCE_OUTPUT_PATH") {
		t.Fatalf("custom infrastructure %+v", inf.Custom)
	}
	cases := []struct {
		name, file, old, new, want string
	}{
		{"no instancename", "templates/hosts.yaml", "name: instancename", "name: host", "needs the attribute instancename"},
		{"file store", "templates/hosts.yaml", "type: Inline", "type: Harness", "Gantry has no file store"},
		{"undeclared variable", "infrastructure.yaml", "name: pool", "name: size", "does not declare"},
		{"missing template", "infrastructure.yaml", "account.hosts_from_file", "account.other", "template account.other is not defined"},
		{"other version", "service.yaml", "versionLabel: v1", "versionLabel: v2", "has no version v2"},
		{"no list path", "templates/hosts.yaml", "      instancesListPath: hosts\n", "", "instancesListPath"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := customFiles(t)
			if !strings.Contains(files[c.file], c.old) {
				t.Fatalf("%s no longer holds %q", c.file, c.old)
			}
			files[c.file] = strings.Replace(files[c.file], c.old, c.new, 1)
			r := loadIn(t, files, "pipeline.yaml", load.Options{ForRun: true})
			if got := r.Diags.Render(r.Sources); r.OK() || !strings.Contains(got, c.want) {
				t.Errorf("want an error saying %q:\n%s", c.want, got)
			}
		})
	}
}
