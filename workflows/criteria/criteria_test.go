package criteria

import (
	"reflect"
	"testing"
)

func TestEvaluate(t *testing.T) {
	jira := map[string]any{"Status": "In Progress", "Priority": "P1", "1-line Update": "ok"}
	snow := map[string]any{"state": map[string]any{"value": "-1", "displayValue": "Implement"}, "approval": map[string]any{"value": "approved", "displayValue": "Approved"}}
	for _, tc := range []struct {
		name   string
		c      *Criteria
		as     string
		fields map[string]any
		met    bool
		unmet  []string
	}{
		{"equals unmet", &Criteria{Type: "KeyValues", Conditions: []Condition{{"Status", "equals", "Done"}}}, "issue", jira, false, []string{`Status equals Done (now "In Progress")`}},
		{"equals any case", &Criteria{Type: "KeyValues", Conditions: []Condition{{"Status", "equals", "in progress"}}}, "issue", jira, true, nil},
		{"in", &Criteria{Type: "KeyValues", Conditions: []Condition{{"Status", "in", "Done, In Progress"}}}, "issue", jira, true, nil},
		{"not in", &Criteria{Type: "KeyValues", Conditions: []Condition{{"Status", "not in", "Done,Closed"}}}, "issue", jira, true, nil},
		{"all must hold", &Criteria{Type: "KeyValues", Conditions: []Condition{{"Status", "equals", "In Progress"}, {"Priority", "equals", "P2"}}}, "issue", jira, false, []string{`Priority equals P2 (now "P1")`}},
		{"any may hold", &Criteria{Type: "KeyValues", MatchAny: true, Conditions: []Condition{{"Status", "equals", "Done"}, {"Priority", "equals", "P1"}}}, "issue", jira, true, nil},
		{"ServiceNow display value", &Criteria{Type: "KeyValues", Conditions: []Condition{{"state", "equals", "Implement"}}}, "ticket", snow, true, nil},
		{"ServiceNow stored value", &Criteria{Type: "KeyValues", Conditions: []Condition{{"state", "equals", "-1"}}}, "ticket", snow, true, nil},
		{"ServiceNow not equals either form", &Criteria{Type: "KeyValues", Conditions: []Condition{{"state", "not equals", "-1"}}}, "ticket", snow, false, []string{`state not equals -1 (now "Implement")`}},
		{"no conditions never met", &Criteria{Type: "KeyValues"}, "issue", jira, false, []string{"no conditions"}},
		{"Jexl", &Criteria{Type: "Jexl", Expression: `<+issue.Priority> == "P1" && <+issue."1-line Update"> == "ok"`}, "issue", jira, true, nil},
		{"Jexl unmet", &Criteria{Type: "Jexl", Expression: `<+ticket.approval.displayValue> == "Rejected"`}, "ticket", snow, false, []string{`<+ticket.approval.displayValue> == "Rejected"`}},
		{"Jexl of a missing field", &Criteria{Type: "Jexl", Expression: `<+issue.Nope> == "x"`}, "issue", jira, false, []string{`<+issue.Nope> == "x"`}},
	} {
		d, err := Evaluate(tc.c, tc.as, tc.fields)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d.Met != tc.met || !reflect.DeepEqual(d.Unmet, tc.unmet) {
			t.Errorf("%s: got met=%v unmet=%q, want met=%v unmet=%q", tc.name, d.Met, d.Unmet, tc.met, tc.unmet)
		}
	}
	if _, err := Evaluate(&Criteria{Type: "Jexl", Expression: `<+issue.Status> == "Done" &&& 1`}, "issue", jira); err == nil {
		t.Error("a Jexl expression that does not parse: want an error")
	}
}
