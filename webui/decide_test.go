package webui

import (
	"testing"
	"time"

	"github.com/gantry-cd/gantry/workflows"
)

// A decided approval's page lists its votes from the step's outputs: who, how, when (in
// words, the time on hover), the comment and the inputs; then the node's notes.
func TestDecidedVotes(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	n := &workflows.Node{Outputs: map[string]any{"approvalActivities": []any{
		map[string]any{"user": map[string]any{"name": "alice"}, "action": "APPROVE", "comments": "CAB ok", "approvedAt": float64(at.UnixMilli()),
			"approverInputs": []any{map[string]any{"name": "ticket", "value": "CHG-7"}}},
		map[string]any{"user": map[string]any{"name": "bob"}, "action": "REJECT", "approvedAt": float64(at.Add(90 * time.Minute).UnixMilli())},
	}}, Notes: []string{"inputs supplied by carol"}, Strategy: &workflows.StrategyAction{Action: "Ignore", By: "dave"}}
	votes := votesOf(n, at.Add(3*time.Hour))
	if len(votes) != 2 || votes[0].Who != "alice" || votes[0].What != "approved" || votes[0].When != "3 hours ago" || !votes[0].At.Equal(at) ||
		len(votes[0].Inputs) != 1 || votes[0].Inputs[0] != "ticket = CHG-7" || votes[1].What != "rejected" || votes[1].When != "1 hour ago" {
		t.Errorf("votes %+v", votes)
	}
	if notes := decisionNotes(n); len(notes) != 2 || notes[1] != "failure strategy Ignore, chosen by dave" {
		t.Errorf("notes %q", notes)
	}
	if got := ago(50 * time.Hour); got != "2 days ago" {
		t.Errorf("ago(50h) = %q", got)
	}
}
