package stepspec

import "gopkg.in/yaml.v3"

// The ticket step types, run by the ticket family (one handler each): Jira issues and
// ServiceNow tickets created or updated, and ServiceNow import sets.
const (
	JiraCreate          = "JiraCreate"
	JiraUpdate          = "JiraUpdate"
	ServiceNowCreate    = "ServiceNowCreate"
	ServiceNowUpdate    = "ServiceNowUpdate"
	ServiceNowImportSet = "ServiceNowImportSet"
)

// JiraCreateSpec opens a Jira issue.
type JiraCreateSpec struct {
	Node              *yaml.Node    `yaml:"-" json:"-"`
	ConnectorRef      string        `yaml:"connectorRef" json:"-" gantry:"required"` // resolved before the run
	ProjectKey        string        `yaml:"projectKey" json:"projectKey" gantry:"required"`
	IssueType         string        `yaml:"issueType" json:"issueType" gantry:"required"`
	Fields            []TicketField `yaml:"fields" json:"fields"`
	DelegateSelectors *yaml.Node    `yaml:"delegateSelectors" json:"-"`
}

// JiraUpdateSpec changes a Jira issue's fields and moves it through a transition.
type JiraUpdateSpec struct {
	Node              *yaml.Node    `yaml:"-" json:"-"`
	ConnectorRef      string        `yaml:"connectorRef" json:"-" gantry:"required"`
	IssueKey          string        `yaml:"issueKey" json:"issueKey" gantry:"required"`
	IssueType         string        `yaml:"issueType" json:"-"`
	ProjectKey        string        `yaml:"projectKey" json:"-"`
	Fields            []TicketField `yaml:"fields" json:"fields"`
	TransitionTo      *TransitionTo `yaml:"transitionTo" json:"transitionTo"`
	DelegateSelectors *yaml.Node    `yaml:"delegateSelectors" json:"-"`
}

// TransitionTo moves an issue to a status, through the named transition when several lead
// there.
type TransitionTo struct {
	Node           *yaml.Node `yaml:"-" json:"-"`
	Status         string     `yaml:"status" json:"status"`
	TransitionName string     `yaml:"transitionName" json:"transitionName"`
}

// ServiceNowCreateSpec opens a ServiceNow ticket (a row of the ticket type's table).
type ServiceNowCreateSpec struct {
	Node                  *yaml.Node    `yaml:"-" json:"-"`
	ConnectorRef          string        `yaml:"connectorRef" json:"-" gantry:"required"`
	TicketType            string        `yaml:"ticketType" json:"ticketType" gantry:"required"`
	Fields                []TicketField `yaml:"fields" json:"fields"`
	CreateType            string        `yaml:"createType" json:"-"`
	TemplateName          string        `yaml:"templateName" json:"-"`
	UseServiceNowTemplate string        `yaml:"useServiceNowTemplate" json:"-"`
	DelegateSelectors     *yaml.Node    `yaml:"delegateSelectors" json:"-"`
}

// ServiceNowUpdateSpec changes a ServiceNow ticket's fields.
type ServiceNowUpdateSpec struct {
	Node                  *yaml.Node    `yaml:"-" json:"-"`
	ConnectorRef          string        `yaml:"connectorRef" json:"-" gantry:"required"`
	TicketType            string        `yaml:"ticketType" json:"ticketType" gantry:"required"`
	TicketNumber          string        `yaml:"ticketNumber" json:"ticketNumber"`
	Fields                []TicketField `yaml:"fields" json:"fields"`
	TemplateName          string        `yaml:"templateName" json:"-"`
	UseServiceNowTemplate string        `yaml:"useServiceNowTemplate" json:"-" gantry:"required"`
	UpdateMultiple        *yaml.Node    `yaml:"updateMultiple" json:"-"`
	DelegateSelectors     *yaml.Node    `yaml:"delegateSelectors" json:"-"`
}

// ServiceNowImportSetSpec imports a row into a staging table.
type ServiceNowImportSetSpec struct {
	Node              *yaml.Node  `yaml:"-" json:"-"`
	ConnectorRef      string      `yaml:"connectorRef" json:"-" gantry:"required"`
	StagingTableName  string      `yaml:"stagingTableName" json:"stagingTableName" gantry:"required"`
	ImportData        *ImportData `yaml:"importData" json:"importData" gantry:"required"`
	DelegateSelectors *yaml.Node  `yaml:"delegateSelectors" json:"-"`
}

// ImportData is the row to import: a JSON body, or fields.
type ImportData struct {
	Node *yaml.Node      `yaml:"-" json:"-"`
	Type string          `yaml:"type" json:"type" gantry:"required"`
	Spec *ImportDataSpec `yaml:"spec" json:"spec" gantry:"required"`
}

// ImportDataSpec holds a Json import's body or a KeyValues import's fields.
type ImportDataSpec struct {
	Node     *yaml.Node    `yaml:"-" json:"-"`
	JSONBody string        `yaml:"jsonBody" json:"jsonBody"`
	Fields   []TicketField `yaml:"fields" json:"fields"`
}

// TicketField is a field of a ticket to set: Jira's by name or id, ServiceNow's by column name.
// Value is the field as written; Rendered is its value once rendered, which an expression may
// have made a number, a boolean or an object (the ticket family reads it).
type TicketField struct {
	Node     *yaml.Node `yaml:"-" json:"-"`
	Name     string     `yaml:"name" json:"name"`
	Value    string     `yaml:"value" json:"-"`
	Rendered any        `yaml:"-" json:"value"`
}
