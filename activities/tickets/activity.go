package tickets

import (
	"context"
	"maps"
	"slices"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// ticketStep is what every handler of the family is given: the connected client, the step's
// rendered spec, and the mark that finds a created ticket again.
type ticketStep struct {
	a    *Activity
	in   contract.StepInput
	c    *client
	mark string
	mask *secrets.Masker
}

// handler runs one step type.
type handler func(context.Context, *ticketStep) (map[string]any, error)

// withSpec makes a handler of a function over the step's spec type S (stepspec's, the one
// validation decoded) and its fields, secrets expanded.
func withSpec[S any](fields func(*S) []stepspec.TicketField, h func(context.Context, *ticketStep, *S, []Field) (map[string]any, error)) handler {
	return func(ctx context.Context, t *ticketStep) (map[string]any, error) {
		sp, err := stepspec.Decode[S](t.in.Spec)
		if err != nil {
			return nil, contract.Fail(contract.Unknown, "decode %s spec: %v", t.in.Type, err)
		}
		var expanded []Field
		if fields != nil {
			if expanded, err = t.a.expand(ctx, t.mask, fields(&sp)); err != nil {
				return nil, err
			}
		}
		return h(ctx, t, &sp, expanded)
	}
}

// handlers are the family's step types, one handler each.
var handlers = map[string]handler{
	stepspec.JiraCreate: withSpec(func(sp *stepspec.JiraCreateSpec) []stepspec.TicketField { return sp.Fields },
		func(ctx context.Context, t *ticketStep, sp *stepspec.JiraCreateSpec, fields []Field) (map[string]any, error) {
			return wrap("issue")(t.c.JiraCreate(ctx, sp.ProjectKey, sp.IssueType, fields, t.mark))
		}),
	stepspec.JiraUpdate: withSpec(func(sp *stepspec.JiraUpdateSpec) []stepspec.TicketField { return sp.Fields },
		func(ctx context.Context, t *ticketStep, sp *stepspec.JiraUpdateSpec, fields []Field) (map[string]any, error) {
			status, name := "", ""
			if tr := sp.TransitionTo; tr != nil {
				status, name = tr.Status, tr.TransitionName
			}
			return wrap("issue")(t.c.JiraUpdate(ctx, sp.IssueKey, fields, status, name))
		}),
	stepspec.ServiceNowCreate: withSpec(func(sp *stepspec.ServiceNowCreateSpec) []stepspec.TicketField { return sp.Fields },
		func(ctx context.Context, t *ticketStep, sp *stepspec.ServiceNowCreateSpec, fields []Field) (map[string]any, error) {
			return wrap("ticket")(t.c.ServiceNowCreate(ctx, sp.TicketType, fields, t.mark))
		}),
	stepspec.ServiceNowUpdate: withSpec(func(sp *stepspec.ServiceNowUpdateSpec) []stepspec.TicketField { return sp.Fields },
		func(ctx context.Context, t *ticketStep, sp *stepspec.ServiceNowUpdateSpec, fields []Field) (map[string]any, error) {
			return wrap("ticket")(t.c.ServiceNowUpdate(ctx, sp.TicketType, sp.TicketNumber, fields))
		}),
	stepspec.ServiceNowImportSet: withSpec(nil,
		func(ctx context.Context, t *ticketStep, sp *stepspec.ServiceNowImportSetSpec, _ []Field) (map[string]any, error) {
			if sp.ImportData == nil || sp.ImportData.Spec == nil {
				return nil, contract.Fail(contract.Unknown, "ServiceNowImportSet has no importData")
			}
			body, err := secrets.Expand(ctx, t.a.Secrets, t.mask, sp.ImportData.Spec.JSONBody)
			if err != nil {
				return nil, contract.Fail(contract.Unknown, "import data: %v", err)
			}
			rows, err := t.a.expand(ctx, t.mask, sp.ImportData.Spec.Fields)
			if err != nil {
				return nil, err
			}
			return t.c.ServiceNowImport(ctx, sp.StagingTableName, body, rows)
		}),
}

// Handles lists the step types the family runs, for the worker's test that each step type
// of the catalog has its handler.
func Handles() []string { return slices.Sorted(maps.Keys(handlers)) }

// Run runs a JiraCreate, JiraUpdate, ServiceNowCreate, ServiceNowUpdate or ServiceNowImportSet
// step. Its outputs are the issue (`issue`) or ticket (`ticket`) as read back after the
// change, or the import's outcome.
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	mask := &secrets.Masker{}
	ref := in.Refs
	if ref == nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the %s step's connector was not resolved before the run", in.Type)
	}
	c, err := a.connect(ctx, ref.Ticket, mask)
	if err != nil {
		return contract.StepResult{}, err
	}
	h, ok := handlers[in.Type]
	if !ok {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "the ticket activity does not run %s steps", in.Type)
	}
	out, err := h(ctx, &ticketStep{a: a, in: in, c: c, mark: correlation(in.ExecutionID, in.StepPath), mask: mask})
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
func (a *Activity) expand(ctx context.Context, mask *secrets.Masker, in []stepspec.TicketField) ([]Field, error) {
	var out []Field
	for _, f := range in {
		v, err := secrets.Expand(ctx, a.Secrets, mask, fieldText(f.Rendered))
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
