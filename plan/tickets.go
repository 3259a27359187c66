package plan

import "time"

// MinRetryInterval is the shortest interval at which the reference reads a ticket or runs a
// custom approval's script; a shorter one is raised to it.
const MinRetryInterval = 5 * time.Second

// TicketConnector says how a worker reaches a ticket system (a Jira or ServiceNow connector).
// Secrets are named, never held.
type TicketConnector struct {
	ID   string `json:"id"`
	Type string `json:"type"` // Jira or ServiceNow
	URL  string `json:"url"`
	// Auth is UsernamePassword, PersonalAccessToken (Jira) or RefreshTokenGrantType
	// (ServiceNow's OAuth client).
	Auth        string `json:"auth"`
	Username    string `json:"username,omitempty"`
	UsernameRef string `json:"usernameRef,omitempty"`
	PasswordRef string `json:"passwordRef,omitempty"`
	// PatRef is a Jira personal access token's secret.
	PatRef string `json:"patRef,omitempty"`
	// The OAuth client of a RefreshTokenGrantType ServiceNow connector.
	TokenURL        string   `json:"tokenUrl,omitempty"`
	RefreshTokenRef string   `json:"refreshTokenRef,omitempty"`
	ClientIDRef     string   `json:"clientIdRef,omitempty"`
	ClientSecretRef string   `json:"clientSecretRef,omitempty"`
	Scope           string   `json:"scope,omitempty"`
	Selectors       []string `json:"selectors,omitempty"`
}
