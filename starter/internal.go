package starter

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/workflows"
)

// internal is the client of Gantry's own workflows: sequence counters and cron schedules.
func (s *Starter) internal() client.Client {
	if s.Internal == nil {
		return s.Client
	}
	return s.Internal
}

// separate reports whether Gantry's own workflows live in a namespace of their own.
func (s *Starter) separate() bool { return s.Internal != nil && s.Internal != s.Client }

// internalQueue is the task queue of the workflows that schedules start.
func (s *Starter) internalQueue() string {
	if s.separate() {
		return workflows.SequenceQueue(s.queue())
	}
	return s.queue()
}

func sequenceID(pipelineID string) string { return "gantry-sequence-" + pipelineID }

// adoptSequence moves a pipeline's sequence workflow from the pipelines' namespace, where
// Gantry kept it before internal namespaces, to the internal one, once per pipeline and
// process: the old workflow hands its state over and completes, and the new one starts from
// that state, so numbering and delivery idempotency carry on. Concurrent adopters agree: the
// handover is one update ID, the completed workflow's result is the same state, and the new
// workflow is started once.
func (s *Starter) adoptSequence(ctx context.Context, pipelineID string) error {
	if !s.separate() {
		return nil
	}
	if _, done := s.adopted.Load(pipelineID); done {
		return nil
	}
	id := sequenceID(pipelineID)
	desc, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		s.adopted.Store(pipelineID, true)
		return nil
	case err != nil:
		return fmt.Errorf("look for the sequence workflow %s of pipeline %s: %w", id, pipelineID, err)
	}
	var state workflows.SequenceState
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		err = s.resend(ctx, id, workflows.UpdateHandover, "handover", func() error {
			h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: "handover",
				UpdateName: workflows.UpdateHandover, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = h.Get(ctx, &state)
			}
			return err
		})
	}
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		// Handed over already (by another process), or closed otherwise: its result is the state.
		if gerr := s.Client.GetWorkflow(ctx, id, "").Get(ctx, &state); gerr != nil {
			s.logger().Warn("the old sequence workflow left no state; numbering starts again from 1",
				zap.String("workflow", id), zap.Error(errors.Join(err, gerr)))
			state = workflows.SequenceState{}
		}
	}
	_, err = s.internal().ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                workflows.SequenceQueue(s.queue()),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Sequence numbers of pipeline " + pipelineID,
	}, workflows.SequenceName, state.Last, state.Kept)
	if err != nil {
		return fmt.Errorf("move the sequence workflow of pipeline %s to the internal namespace: %w", pipelineID, err)
	}
	s.logger().Info("sequence workflow moved to the internal namespace", zap.String("pipeline", pipelineID), zap.Int64("last", state.Last))
	s.adopted.Store(pipelineID, true)
	return nil
}

// ServerSide is the client and task queue of the activities only servers run
// (workflows.ServerQueue beside the internal queue, where cron fires are).
func (s *Starter) ServerSide() (client.Client, string) {
	return s.internal(), workflows.ServerQueue(s.internalQueue())
}
