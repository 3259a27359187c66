package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
)

// Cron triggers become Temporal Schedules that follow the trigger files; a fire starts the
// pipeline with triggerType SCHEDULER_CRON.
func TestCronTriggerSchedules(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nightly-pipeline.yaml"), []byte(strings.ReplaceAll(strings.ReplaceAll(hookPipeline, "on_push", "nightly_build"),
		"value: <+input>", "value: none")), 0o600)
	trig := filepath.Join(dir, "nightly.yaml")
	os.WriteFile(trig, []byte(`trigger:
  name: nightly
  identifier: nightly
  pipelineIdentifier: nightly_build
  source:
    type: Scheduled
    spec:
      type: Cron
      spec: {type: UNIX, expression: "30 2 * * 1-5", timeZone: Europe/Berlin}
`), 0o600)
	api := server.New(server.Options{Starter: env.starter, PipelinesDir: dir, IdentityFile: filepath.Join(dir, "none.yaml")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A schedule an older Gantry kept in the pipelines' namespace gives way to the internal one.
	legacy, err := env.client.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: starter.SchedulePrefix + "nightly",
		Spec:   client.ScheduleSpec{CronExpressions: []string{"30 2 * * 1-5"}},
		Action: &client.ScheduleWorkflowAction{ID: "legacy", Workflow: "gantry.Cron", TaskQueue: "gantry"}, Paused: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.Describe(ctx); err == nil {
		t.Error("the schedule in the pipelines' namespace was not removed")
	}
	h := env.internal.ScheduleClient().GetHandle(ctx, starter.SchedulePrefix+"nightly")
	desc, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Temporal stores the cron expression as a calendar.
	if !at(desc, 2, 30) || desc.Schedule.Spec.TimeZoneName != "Europe/Berlin" {
		t.Errorf("schedule spec %+v", desc.Schedule.Spec)
	}
	// Fire it now instead of waiting for 02:30.
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	var execID string
	for execID == "" {
		list, err := env.starter.List(ctx, "nightly_build", 5)
		if err == nil && len(list) > 0 {
			execID = list[0].ID
		}
		if ctx.Err() != nil {
			t.Fatal("the schedule never started the pipeline")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := env.starter.Result(ctx, execID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	if got := res.Tree.Find("build.show").Outputs["outputVariables"].(map[string]any)["t"]; got != "SCHEDULER_CRON" {
		t.Errorf("triggerType %v", got)
	}
	// Changing the file updates the schedule; removing it deletes the schedule.
	os.WriteFile(trig, []byte(strings.Replace(mustReadFile(t, trig), "30 2 * * 1-5", "0 3 * * *", 1)), 0o600)
	time.Sleep(10 * time.Millisecond)
	if err := api.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if desc, err := h.Describe(ctx); err != nil || !at(desc, 3, 0) {
		t.Errorf("after the edit: %+v %v", desc, err)
	}
	os.Remove(trig)
	if err := api.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Describe(ctx); err == nil {
		t.Error("the schedule of a removed trigger still exists")
	}
}

func mustReadFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// at reports whether a schedule fires at hour:minute.
func at(d *client.ScheduleDescription, hour, minute int) bool {
	if d == nil || len(d.Schedule.Spec.Calendars) != 1 {
		return false
	}
	c := d.Schedule.Spec.Calendars[0]
	return len(c.Hour) == 1 && c.Hour[0].Start == hour && len(c.Minute) == 1 && c.Minute[0].Start == minute
}
