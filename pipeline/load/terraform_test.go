package load_test

import (
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
)

// tfStep is a Terraform step of type typ with spec (flow YAML).
func tfStep(id, typ, spec string) string {
	return "              - step: {name: " + id + ", identifier: " + id + ", type: " + typ + ", timeout: 5m, spec: " + spec + "}\n"
}

const tfGitStore = `{type: Git, spec: {connectorRef: infra, gitFetchType: Branch, branch: main, folderPath: tf}}`

const tfConnector = `connector:
  name: Infra
  identifier: infra
  type: Git
  spec: {url: "https://git.example.com/infra.git", connectionType: Repo, type: Http, spec: {username: u, passwordRef: p}}
`

// The Terraform steps' specs: what the reference accepts runs (or warns about what Gantry does
// not act on), broken values are errors at their line, Terraform Cloud is unsupported.
func TestTerraformSpecChecks(t *testing.T) {
	plan := func(extra string) string {
		return `{provisionerIdentifier: infra, configuration: {command: Apply, secretManagerRef: sm, configFiles: {store: ` + tfGitStore + `}` + extra + `}}`
	}
	cases := []struct {
		name, steps string
		sev         diag.Severity
		code, text  string // "" text: warnings only
	}{
		{"plan apply rollback destroy", tfStep("p", "TerraformPlan", plan(`, varFiles: [{varFile: {identifier: v, type: Inline, spec: {content: "a = 1"}}}], backendConfig: {type: Inline, spec: {content: "path = \"x\""}}, environmentVariables: [{name: TF_LOG, type: String, value: INFO}], targets: [terraform_data.a], workspace: dev, commandFlags: [{commandType: PLAN, flag: "-parallelism=2"}]`)) +
			tfStep("a", "TerraformApply", `{provisionerIdentifier: infra, configuration: {type: InheritFromPlan}}`) +
			tfStep("d", "TerraformDestroy", `{provisionerIdentifier: infra, configuration: {type: InheritFromApply}}`) +
			tfStep("r", "TerraformRollback", `{provisionerIdentifier: infra, skipRefreshCommand: true}`), diag.Warning, "", ""},
		{"inline apply", tfStep("a", "TerraformApply", `{provisionerIdentifier: infra, configuration: {type: Inline, spec: {configFiles: {store: {type: Inline, spec: {content: "x"}}}}}}`), diag.Warning, "", ""},
		{"bad command", tfStep("p", "TerraformPlan", strings.Replace(plan(""), "command: Apply", "command: Aply", 1)), diag.Error, "", "TerraformPlan command"},
		{"no provisioner", tfStep("a", "TerraformApply", `{configuration: {type: InheritFromPlan}}`), diag.Error, "", "provisionerIdentifier"},
		{"apply inherits from apply", tfStep("a", "TerraformApply", `{provisionerIdentifier: i, configuration: {type: InheritFromApply}}`), diag.Error, "", "TerraformApply configuration type"},
		{"inline without spec", tfStep("a", "TerraformApply", `{provisionerIdentifier: i, configuration: {type: Inline}}`), diag.Error, "missing-field", "needs `spec`"},
		{"remote var file without store", tfStep("p", "TerraformPlan", plan(`, varFiles: [{varFile: {identifier: v, type: Remote, spec: {}}}]`)), diag.Error, "missing-field", "needs `store`"},
		{"git store without folder", tfStep("p", "TerraformPlan", strings.Replace(plan(""), ", folderPath: tf", "", 1)), diag.Error, "missing-field", "folderPath"},
		{"bad flag command", tfStep("r", "TerraformRollback", `{provisionerIdentifier: i, commandFlags: [{commandType: PUSH, flag: x}]}`), diag.Error, "", "commandType"},
		{"terraform cloud", tfStep("a", "TerraformApply", `{provisionerIdentifier: i, cloudCliConfiguration: {type: InheritFromPlan}}`), diag.Unsupported, "unsupported-field", "Terraform Cloud"},
		{"provider credential", tfStep("p", "TerraformPlan", plan(`, providerCredential: {type: Aws, spec: {connectorRef: aws}}`)), diag.Unsupported, "unsupported-field", "providerCredential"},
		{"connector expression", tfStep("p", "TerraformPlan", strings.Replace(plan(""), "connectorRef: infra", "connectorRef: <+pipeline.variables.c>", 1)), diag.Unsupported, "unsupported-expression", "resolves connectors before the run"},
		{"cloud run", tfStep("c", "TerraformCloudRun", `{}`), diag.Unsupported, "unsupported-step-type", "TerraformCloudRun"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"pipeline.yaml": customStage("", c.steps), "connector.yaml": tfConnector}
			r := loadIn(t, files, "pipeline.yaml", load.Options{})
			rendered := r.Diags.Render(r.Sources)
			if c.text == "" {
				for _, d := range r.Diags {
					if d.Severity != diag.Warning {
						t.Fatalf("want warnings only:\n%s", rendered)
					}
				}
				return
			}
			found := false
			for _, d := range r.Diags {
				if d.Severity == c.sev && (c.code == "" || d.Code == c.code) && strings.Contains(d.Message+d.Hint, c.text) && d.Pos.Line > 0 {
					found = true
				}
			}
			if !found {
				t.Errorf("want a %v %s saying %q at a line:\n%s", c.sev, c.code, c.text, rendered)
			}
		})
	}
}

// For a run, the Git connectors of a Terraform step's stores are resolved into the step's
// node with its provisioners' project; a connector that is not defined is an error.
func TestTerraformStoresResolvedBeforeTheRun(t *testing.T) {
	src := strings.Replace(customStage("", tfStep("p", "TerraformPlan", `{provisionerIdentifier: infra, configuration: {command: Apply, secretManagerRef: sm, configFiles: {store: `+tfGitStore+`}}}`)),
		"  identifier: p\n", "  identifier: p\n  orgIdentifier: acme\n  projectIdentifier: web\n", 1)
	r := loadIn(t, map[string]string{"pipeline.yaml": src, "connector.yaml": tfConnector}, "pipeline.yaml", load.Options{ForRun: true})
	if !r.OK() || r.Plan == nil {
		t.Fatalf("load:\n%s", r.Diags.Render(r.Sources))
	}
	var refs *plan.StepRefs
	plan.Walk(r.Plan.Stages, nil, func(n *plan.Node, _ []string) {
		if n.ID == "p" {
			refs = n.Refs
		}
	})
	if refs == nil || refs.Project != "acme/web" || refs.Git["infra"].URL != "https://git.example.com/infra.git" || refs.Git["infra"].PasswordRef != "p" {
		t.Fatalf("step refs %+v", refs)
	}
	r = loadIn(t, map[string]string{"pipeline.yaml": src}, "pipeline.yaml", load.Options{ForRun: true})
	if r.OK() || !strings.Contains(r.Diags.Render(r.Sources), "infra") {
		t.Errorf("a missing connector: want an error naming it:\n%s", r.Diags.Render(r.Sources))
	}
}

// An environment provisioner runs in a Deployment stage's `environment`; elsewhere (a Custom
// stage's environment, a multi-environment stage) it is unsupported, never silently skipped.
func TestProvisionerOutsideADeploymentEnvironmentIsUnsupported(t *testing.T) {
	src := strings.Replace(customStage("", tfStep("a", "TerraformApply", `{provisionerIdentifier: i, configuration: {type: InheritFromPlan}}`)),
		"        spec:\n", "        spec:\n          environment:\n            environmentRef: dev\n            provisioner:\n              steps: []\n", 1)
	r := loadIn(t, map[string]string{"pipeline.yaml": src}, "pipeline.yaml", load.Options{})
	if d := codes(r.Diags, diag.Unsupported, "unsupported-field"); len(d) != 1 || !strings.Contains(d[0].Message, "environment provisioner") || d[0].Pos.Line != 12 {
		t.Errorf("want one unsupported provisioner at line 12:\n%s", r.Diags.Render(r.Sources))
	}
}
