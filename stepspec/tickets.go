package stepspec

// The ticket step types, run by the ticket family (one handler each): Jira issues and
// ServiceNow tickets created or updated, and ServiceNow import sets.
const (
	JiraCreate          = "JiraCreate"
	JiraUpdate          = "JiraUpdate"
	ServiceNowCreate    = "ServiceNowCreate"
	ServiceNowUpdate    = "ServiceNowUpdate"
	ServiceNowImportSet = "ServiceNowImportSet"
)
