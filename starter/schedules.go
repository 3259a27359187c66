package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/workflows"
)

// SchedulePrefix marks the Temporal Schedules Gantry owns (one per cron trigger).
const SchedulePrefix = "gantry-cron-"

// CronSchedule is the desired schedule of one cron trigger.
type CronSchedule struct {
	Trigger    string
	Expression string
	TimeZone   string
	Input      workflows.CronInput
}

// SyncSchedules makes Temporal's schedules match the cron triggers: it creates missing ones,
// updates the rest and deletes schedules whose trigger is gone. A fire starts a new execution
// even while the previous one runs (the scheduled workflow only starts the pipeline, so
// Temporal's overlap policy never holds a fire back; missed fires are not replayed).
//
// Schedules live in the internal namespace; the ones Gantry kept in the pipelines' namespace
// before are deleted once their replacements exist.
func (s *Starter) SyncSchedules(ctx context.Context, want []CronSchedule) error {
	sc := s.internal().ScheduleClient()
	desired := map[string]CronSchedule{}
	for _, c := range want {
		desired[SchedulePrefix+c.Trigger] = c
	}
	existing, err := gantrySchedules(ctx, sc)
	if err != nil {
		return err
	}
	var errs []error
	for id, c := range desired {
		spec := client.ScheduleSpec{CronExpressions: []string{c.Expression}, TimeZoneName: c.TimeZone}
		action := &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.CronName, Args: []any{c.Input}, TaskQueue: s.internalQueue()}
		if existing[id] {
			err := sc.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
				DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
					in.Description.Schedule.Spec = &spec
					in.Description.Schedule.Action = action
					return &client.ScheduleUpdate{Schedule: &in.Description.Schedule}, nil
				},
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("update schedule %s: %w", id, err))
			}
			continue
		}
		_, err := sc.Create(ctx, client.ScheduleOptions{ID: id, Spec: spec, Action: action,
			Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL, CatchupWindow: 10 * time.Second, Memo: map[string]any{"trigger": c.Trigger}})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			errs = append(errs, fmt.Errorf("create schedule %s: %w", id, err))
		}
	}
	for id := range existing {
		if _, ok := desired[id]; !ok {
			if err := sc.GetHandle(ctx, id).Delete(ctx); err != nil {
				errs = append(errs, fmt.Errorf("delete schedule %s: %w", id, err))
			}
		}
	}
	if s.separate() && len(errs) == 0 {
		legacy := s.Client.ScheduleClient()
		old, err := gantrySchedules(ctx, legacy)
		if err != nil {
			return err
		}
		for id := range old {
			if err := legacy.GetHandle(ctx, id).Delete(ctx); err != nil {
				errs = append(errs, fmt.Errorf("delete schedule %s of the pipelines' namespace: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// gantrySchedules lists the IDs of the schedules Gantry owns.
func gantrySchedules(ctx context.Context, sc client.ScheduleClient) (map[string]bool, error) {
	ids := map[string]bool{}
	iter, err := sc.List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		if strings.HasPrefix(e.ID, SchedulePrefix) {
			ids[e.ID] = true
		}
	}
	return ids, nil
}
