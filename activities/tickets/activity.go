package tickets

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
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

// ticketStep is what every handler of the family is given: the connected client, the decoded
// spec, its fields with secrets expanded, and the mark that finds a created ticket again.
type ticketStep struct {
	a      *Activity
	c      *client
	spec   stepSpec
	fields []Field
	mark   string
	mask   *secrets.Masker
}

// handlers are the family's step types, one handler each.
var handlers = map[string]func(context.Context, *ticketStep) (map[string]any, error){
	stepspec.JiraCreate: func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		return wrap("issue")(t.c.JiraCreate(ctx, t.spec.ProjectKey, t.spec.IssueType, t.fields, t.mark))
	},
	stepspec.JiraUpdate: func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		status, name := "", ""
		if tr := t.spec.TransitionTo; tr != nil {
			status, name = tr.Status, tr.TransitionName
		}
		return wrap("issue")(t.c.JiraUpdate(ctx, t.spec.IssueKey, t.fields, status, name))
	},
	stepspec.ServiceNowCreate: func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		return wrap("ticket")(t.c.ServiceNowCreate(ctx, t.spec.TicketType, t.fields, t.mark))
	},
	stepspec.ServiceNowUpdate: func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		return wrap("ticket")(t.c.ServiceNowUpdate(ctx, t.spec.TicketType, t.spec.TicketNumber, t.fields))
	},
	stepspec.ServiceNowImportSet: func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		if t.spec.ImportData == nil {
			return nil, contract.Fail(contract.Unknown, "ServiceNowImportSet has no importData")
		}
		body, err := secrets.Expand(ctx, t.a.Secrets, t.mask, t.spec.ImportData.Spec.JSONBody)
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "import data: %v", err)
		}
		rows, err := t.a.expand(ctx, t.mask, t.spec.ImportData.Spec.Fields)
		if err != nil {
			return nil, err
		}
		return t.c.ServiceNowImport(ctx, t.spec.StagingTableName, body, rows)
	},
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

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
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the ticket activity does not run %s steps", in.Type)
	}
	out, err := h(ctx, &ticketStep{a: a, c: c, spec: spec, fields: fields, mark: correlation(in.ExecutionID, in.StepPath), mask: mask})
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
