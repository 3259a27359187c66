package load_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/pipeline/load"
)

const jiraConnector = `connector:
  name: Jira
  identifier: jira
  type: Jira
  spec:
    jiraUrl: https://example.atlassian.net
    auth: {type: UsernamePassword, spec: {username: bot@example.com, passwordRef: jira_token}}
`

// The ticket steps' bad input, each at its line before the run: a Jexl criterion that does not
// parse, a condition operator the reference does not have, two conditions on one field, a
// connector that does not exist (missing-entity) or is of another kind; a retryInterval under
// the minimum is raised with a warning; ServiceNow templates and ADFS sign-in are unsupported.
func TestTicketStepsBadInput(t *testing.T) {
	approval := func(criteria, extra string) string {
		return `              - step:
                  type: JiraApproval
                  name: a
                  identifier: a
                  timeout: 1d
                  spec:
                    connectorRef: jira
                    issueKey: OPS-1
` + extra + `                    approvalCriteria:
` + criteria
	}
	for _, c := range []struct {
		name, step, connector string
		line                  int
		want                  string
	}{
		{"Jexl does not parse", approval("                      type: Jexl\n                      spec: {expression: <+issue.Status> == \"Done\" &&& 1}\n", ""), jiraConnector, 22, "invalid expression"},
		{"unknown operator", approval("                      type: KeyValues\n                      spec: {conditions: [{key: Status, operator: contains, value: Done}]}\n", ""), jiraConnector, 22, `operator "contains" is not one of equals, not equals, in, not in`},
		{"two conditions on a field", approval("                      type: KeyValues\n                      spec: {conditions: [{key: Status, operator: equals, value: Done}, {key: Status, operator: equals, value: Closed}]}\n", ""), jiraConnector, 22, "two conditions on field Status"},
		{"missing connector", approval("                      type: Jexl\n                      spec: {expression: <+issue.Status> == \"Done\"}\n", ""), "", 18, `connector "jira" is not defined`},
		{"not a Jira connector", approval("                      type: Jexl\n                      spec: {expression: <+issue.Status> == \"Done\"}\n", ""),
			strings.Replace(strings.Replace(jiraConnector, "type: Jira", "type: ServiceNow", 1), "jiraUrl", "serviceNowUrl", 1), 18, "connector jira is a ServiceNow connector; this step needs a Jira connector"},
		{"ServiceNow template", `              - step:
                  type: ServiceNowCreate
                  name: a
                  identifier: a
                  spec: {connectorRef: snow, ticketType: change_request, useServiceNowTemplate: true, templateName: Std}
`, strings.Replace(strings.Replace(strings.Replace(jiraConnector, "type: Jira", "type: ServiceNow", 1), "jiraUrl", "serviceNowUrl", 1), "identifier: jira", "identifier: snow", 1), 16, "unsupported: ServiceNow templates"},
	} {
		files := map[string]string{"pipeline.yaml": customStage("", c.step)}
		if c.connector != "" {
			files["connector.yaml"] = c.connector
		}
		r := loadIn(t, files, "pipeline.yaml", load.Options{ForRun: true})
		text := r.Diags.Render(r.Sources)
		if r.OK() || !strings.Contains(text, c.want) || !strings.Contains(text, "pipeline.yaml:"+strconv.Itoa(c.line)+":") {
			t.Errorf("%s: want %q at line %d:\n%s", c.name, c.want, c.line, text)
		}
	}

	ok := approval("                      type: KeyValues\n                      spec: {conditions: [{key: Status, operator: equals, value: Done}]}\n", "                    retryInterval: 1s\n")
	r := loadIn(t, map[string]string{"pipeline.yaml": customStage("", ok), "connector.yaml": jiraConnector}, "pipeline.yaml", load.Options{ForRun: true})
	if text := r.Diags.Render(r.Sources); !r.OK() || !strings.Contains(text, "warning: retryInterval 1s is below the minimum of 5s: Gantry reads every 5s") {
		t.Errorf("a short retryInterval:\n%s", text)
	}

	adfs := `connector:
  name: SN
  identifier: snow
  type: ServiceNow
  spec:
    serviceNowUrl: https://example.service-now.com
    auth:
      type: AdfsClientCredentialsWithCertificate
      spec: {certificateRef: c, privateKeyRef: k, clientIdRef: i, resourceIdRef: r, adfsUrl: https://adfs.example.com}
`
	r = loadIn(t, map[string]string{"snow.yaml": adfs}, "snow.yaml", load.Options{})
	if text := r.Diags.Render(r.Sources); !strings.Contains(text, "unsupported: ServiceNow sign-in through ADFS") {
		t.Errorf("ADFS:\n%s", text)
	}
}
