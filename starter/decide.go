package starter

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// decide sends a user's decision (an update named name) on the node at path to the workflow
// that owns the node: its stage workflow, or, for an iteration of a loop of more than
// workflows.BatchSize iterations, the batch workflow that runs it.
func (s *Starter) decide(ctx context.Context, executionID, path, name string, req any) (string, error) {
	id := stageWorkflow(executionID, path)
	var msg string
	err := s.update(ctx, id, name, req, &msg)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == workflows.ErrNotWaiting {
		// The stage does not hold the node; a running loop batch of it may.
		if holder := s.holder(ctx, id, path, 0); holder != "" && holder != id {
			id = holder
			err = s.update(ctx, id, name, req, &msg)
		}
	}
	if err != nil {
		return "", decisionErr(id, path, err)
	}
	return msg, nil
}

// stageWorkflow is the ID of the stage workflow that runs the node at path.
func stageWorkflow(executionID, path string) string {
	if rest, ok := strings.CutPrefix(path, "pipelineRollback."); ok {
		st, _, _ := strings.Cut(rest, ".")
		return executionID + "/pipelineRollback/" + st
	}
	stage, _, _ := strings.Cut(path, ".")
	return executionID + "/" + stage
}

// maxBatchDepth bounds the search through nested loop batches (a batched loop inside an
// iteration of another).
const maxBatchDepth = 4

// holder returns the workflow (id or one of its running loop batches, recursively) whose own
// tree holds the node at path, or "".
func (s *Starter) holder(ctx context.Context, id, path string, depth int) string {
	var tree *workflows.Node
	if query(ctx, s.Client, id, &tree) != nil || tree == nil {
		return ""
	}
	if tree.Find(path) != nil {
		return id
	}
	if depth >= maxBatchDepth {
		return ""
	}
	var found string
	tree.Walk(func(n *workflows.Node) {
		if found == "" && n.Kind == "batch" && n.Source != "" && n.Status == status.Running {
			found = s.holder(ctx, n.Source, path, depth+1)
		}
	})
	return found
}
