package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// AuditRecord is one entry of the audit trail (issue 54): who did or was refused what, on
// which execution, and how it ended. Actions that reached an execution are read back from its
// history; refusals, which reach none, are kept by the Refusals workflow.
type AuditRecord struct {
	Time      time.Time `json:"time"`
	User      string    `json:"user"`
	Action    string    `json:"action"` // start, retry, abort, pause, resume, intervene, approve, reject, input, view, create, admin
	Execution string    `json:"execution,omitempty"`
	Pipeline  string    `json:"pipeline,omitempty"`
	// Path is the node a decision was about.
	Path string `json:"path,omitempty"`
	// Outcome is "ok", "refused" (403) or "failed" (the engine answered an error).
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// Refusals keeps the refusals of the audit trail in its history: each arrives as a
// SignalRefusal (AuditRecord) through SignalWithStart on RefusalsID. A run ends after a day or
// refusalsPerRun records, so no history grows without bound; the next refusal starts the next
// run under the same ID.
func Refusals(ctx workflow.Context) error {
	ch := workflow.GetSignalChannel(ctx, SignalRefusal)
	timer := workflow.NewTimer(ctx, 24*time.Hour)
	for n, done := 0, false; !done && n < refusalsPerRun; {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
			var r AuditRecord
			c.Receive(ctx, &r)
			n++
		})
		sel.AddFuture(timer, func(workflow.Future) { done = true })
		sel.Select(ctx)
	}
	// Records delivered with the last task stay in this run's history: take them too.
	for {
		var r AuditRecord
		if !ch.ReceiveAsync(&r) {
			return nil
		}
	}
}

const (
	// RefusalsName is the Refusals workflow's type; RefusalsID its workflow ID.
	RefusalsName = "gantry.Refusals"
	RefusalsID   = "gantry-refusals"
	// SignalRefusal carries one refusal (AuditRecord).
	SignalRefusal = "refusal"
)

// refusalsPerRun bounds one run's history (a variable for the tests).
var refusalsPerRun = 2000
