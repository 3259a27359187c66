package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/status"
)

// closing is how a pipeline or stage workflow ends for Temporal, so that the Temporal UI, its
// Failures filter and `temporal workflow list` tell the outcome without Gantry's search
// attributes: a failed execution closes Failed with an application error whose type is the
// status and whose message names the failed nodes, an aborted one closes Canceled, and both
// carry the result (the final tree) as details, where ResultFrom reads it back. result is a
// value, not a pointer: the test suite hands details over undecoded.
func closing(ctx workflow.Context, st status.Status, tree *Node, result any) error {
	if st != status.Aborted && !failed(st) {
		return nil
	}
	// Executions started before this change completed whatever their status.
	if workflow.GetVersion(ctx, changeOutcomeStatus, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	if st == status.Aborted {
		return temporal.NewCanceledError(result)
	}
	return temporal.NewNonRetryableApplicationError(failureMessage(st, tree), string(st), nil, result)
}

// failed reports the statuses a workflow closes Failed for.
func failed(st status.Status) bool {
	switch st {
	case status.Failed, status.Errored, status.Expired, status.ApprovalRejected, status.FreezeFailed:
		return true
	}
	return false
}

// failureMessage names the nodes that failed, deepest first, with their failure.
func failureMessage(st status.Status, tree *Node) string {
	const shown = 5
	var nodes []string
	more := 0
	tree.Walk(func(n *Node) {
		if n.Failure == nil || !failed(n.Status) || n.Kind == "pipeline" || hasFailedChild(n) {
			return
		}
		if len(nodes) == shown {
			more++
			return
		}
		name := n.Path
		if n.Type != "" {
			name += " (" + n.Type + ")"
		}
		nodes = append(nodes, fmt.Sprintf("%s %s: %s: %s", name, n.Status, n.Failure.Category, n.Failure.Message))
	})
	what := "pipeline"
	if tree.Kind != "pipeline" {
		what = "stage " + tree.Path
	}
	msg := fmt.Sprintf("%s %s", what, st)
	if len(nodes) > 0 {
		msg += ": " + strings.Join(nodes, "; ")
	}
	if more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return msg
}

func hasFailedChild(n *Node) bool {
	for _, c := range n.Children {
		if c.Failure != nil && failed(c.Status) {
			return true
		}
	}
	return false
}

// ResultFrom reads the result a pipeline or stage workflow closed with out of the error its
// future returned when it closed Failed or Canceled (see closing). It returns nil when it put
// the result in out, and err itself otherwise.
func ResultFrom(err error, out any) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && failed(status.Status(app.Type())) && app.HasDetails() {
		if app.Details(out) == nil {
			return nil
		}
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() {
		if canceled.Details(out) == nil {
			return nil
		}
	}
	return err
}
