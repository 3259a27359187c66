package tickets

import (
	"context"
	"encoding/json"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
)

// stepSpec holds the fields of every ticket step's rendered spec.
type stepSpec struct {
	ProjectKey   string      `json:"projectKey"`
	IssueType    string      `json:"issueType"`
	IssueKey     string      `json:"issueKey"`
	Fields       []specField `json:"fields"`
	TransitionTo *struct {
		Status         string `json:"status"`
		TransitionName string `json:"transitionName"`
	} `json:"transitionTo"`
	TicketType       string `json:"ticketType"`
	TicketNumber     string `json:"ticketNumber"`
	StagingTableName string `json:"stagingTableName"`
	ImportData       *struct {
		Type string `json:"type"`
		Spec struct {
			JSONBody string      `json:"jsonBody"`
			Fields   []specField `json:"fields"`
		} `json:"spec"`
	} `json:"importData"`
}

type specField struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Run runs a JiraCreate, JiraUpdate, ServiceNowCreate, ServiceNowUpdate or ServiceNowImportSet
// step. Its outputs are the issue (`issue`) or ticket (`ticket`) as read back after the
// change, or the import's outcome.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	var spec stepSpec
	if err := json.Unmarshal(in.Spec, &spec); err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "decode %s spec: %v", in.Type, err)
	}
	mask := &secrets.Masker{}
	ref := in.Refs
	if ref == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the %s step's connector was not resolved before the run", in.Type)
	}
	c, err := a.connect(ctx, ref.Ticket, mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	fields, err := a.expand(ctx, mask, spec.Fields)
	if err != nil {
		return contract.StepResult{}, err
	}
	mark := correlation(in.ExecutionID, in.StepPath)
	var out map[string]any
	switch in.Type {
	case "JiraCreate":
		out, err = wrap("issue")(c.JiraCreate(ctx, spec.ProjectKey, spec.IssueType, fields, mark))
	case "JiraUpdate":
		status, name := "", ""
		if t := spec.TransitionTo; t != nil {
			status, name = t.Status, t.TransitionName
		}
		out, err = wrap("issue")(c.JiraUpdate(ctx, spec.IssueKey, fields, status, name))
	case "ServiceNowCreate":
		out, err = wrap("ticket")(c.ServiceNowCreate(ctx, spec.TicketType, fields, mark))
	case "ServiceNowUpdate":
		out, err = wrap("ticket")(c.ServiceNowUpdate(ctx, spec.TicketType, spec.TicketNumber, fields))
	case "ServiceNowImportSet":
		if spec.ImportData == nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "ServiceNowImportSet has no importData")
		}
		body, err := secrets.Expand(ctx, a.Secrets, mask, spec.ImportData.Spec.JSONBody)
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "import data: %v", err)
		}
		rows, err := a.expand(ctx, mask, spec.ImportData.Spec.Fields)
		if err != nil {
			return contract.StepResult{}, err
		}
		out, err = c.ServiceNowImport(ctx, spec.StagingTableName, body, rows)
		if err != nil {
			return contract.StepResult{}, err
		}
	default:
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the ticket activity does not run %s steps", in.Type)
	}
	if err != nil {
		return contract.StepResult{}, err
	}
	// A field set from a secret comes back in the read-back issue: masked, as everywhere.
	return contract.StepResult{Outputs: masked(out, mask).(map[string]any)}, nil
}

// masked returns v with every secret the step resolved masked in its strings.
func masked(v any, mask *secrets.Masker) any {
	switch x := v.(type) {
	case string:
		return mask.Apply(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = masked(e, mask)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = masked(e, mask)
		}
		return out
	}
	return v
}

// wrap names a read issue or ticket as the step's output.
func wrap(name string) func(map[string]any, error) (map[string]any, error) {
	return func(v map[string]any, err error) (map[string]any, error) {
		if err != nil {
			return nil, err
		}
		return map[string]any{name: v}, nil
	}
}

// expand resolves the secrets in the fields' values.
func (a *Activity) expand(ctx context.Context, mask *secrets.Masker, in []specField) ([]Field, error) {
	var out []Field
	for _, f := range in {
		v, err := secrets.Expand(ctx, a.Secrets, mask, fieldText(f.Value))
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "field %s: %v", f.Name, err)
		}
		out = append(out, Field{Name: f.Name, Value: v})
	}
	return out, nil
}

// Read reads an issue or ticket for an approval step: a ticket system that cannot be reached
// fails the call (retryable), refused credentials or an unknown ticket fail it for good.
func (a *Activity) Read(ctx context.Context, in contract.TicketRequest) (contract.TicketState, error) {
	mask := &secrets.Masker{}
	c, err := a.connect(ctx, &in.Connector, mask)
	if err != nil {
		return contract.TicketState{}, err
	}
	var t map[string]any
	if in.Connector.Type == "ServiceNow" {
		t, err = c.ServiceNowRead(ctx, in.Table, in.Key)
	} else {
		t, err = c.JiraRead(ctx, in.Key)
	}
	if err != nil {
		return contract.TicketState{}, err
	}
	url, _ := t["url"].(string)
	return contract.TicketState{URL: url, Fields: t}, nil
}
