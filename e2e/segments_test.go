package e2e

import (
	"context"
	_ "embed"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// A pipeline longer than a segment (4 stages here; workflows.SegmentSize in production) runs in
// segment workflows: a wide parallel block is split across two segments that run at once and
// meet at a barrier, the pending list shows an approval inside a segment and the starter
// reaches it, an abort stops the run there, and a retry copies the stages before it (their
// outputs readable by a later stage) and runs the rest.
func TestLongPipelineInSegments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := compile(t, "segments.yaml", []byte(segmentsPipeline), load.Options{})
	set := workflows.Settings{SegmentSize: 4}
	first, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, set)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, first.ID, "s2.gate", status.ApprovalWaiting)
	waitPending(t, ctx, first.ID, "s2.gate")
	if err := env.starter.Abort(ctx, first.ID, "dev", "enough"); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Aborted {
		t.Fatalf("aborted run ended %s", res.Status)
	}
	var ids []string
	for _, c := range res.Tree.Children {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, " "); got != "s0 s1 parallel s2 s3 last" && got != "s0 s1  s2 s3 last" {
		t.Errorf("top-level nodes after expansion: %q", got)
	}
	for path, want := range map[string]status.Status{"s0.a": status.Succeeded, "s1.a": status.Succeeded, "p0.meet": status.Succeeded,
		"p5.meet": status.Succeeded, "p3.a": status.Succeeded, "s2": status.Aborted, "last": status.NotStarted} {
		if n := res.Tree.Find(path); n == nil || n.Status != want {
			t.Errorf("aborted run: %s is %v, want %s", path, n, want)
		}
	}
	retried, err := env.starter.Retry(ctx, first.ID, "", workflows.Trigger{Type: "MANUAL", User: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, retried.ID, "s2.gate", status.ApprovalWaiting)
	if _, err := env.starter.Approve(ctx, retried.ID, workflows.ApprovalRequest{Path: "s2.gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"}}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	res, err = env.starter.Result(ctx, retried.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("retried run ended %s", res.Status)
	}
	if n := res.Tree.Find("s0"); n == nil || !strings.Contains(strings.Join(n.Notes, " "), "copied") {
		t.Errorf("s0 of the retry was not copied: %+v", n)
	}
	if got := res.Tree.Find("last.a").Outputs["outputVariables"].(map[string]any)["l"]; got != "one-2" {
		t.Errorf("last read %v", got)
	}
	checkHistories(t, retried.ID, retried.ID+"/segment-0", retried.ID+"/segment-1", retried.ID+"/segment-3")
}

// TestRecordSegmentHistories records a pipeline run in segments (changeSegments): its own
// history, its segments' (one of a wide block) and their stages'.
func TestRecordSegmentHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := compile(t, "segments.yaml", []byte(segmentsPipeline), load.Options{})
	p.Identifier = "segments_record"
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{SegmentSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, exec.ID, "s2.gate", status.ApprovalWaiting)
	if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "s2.gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"}}); err != nil {
		t.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Succeeded {
		t.Fatalf("segments: %v %v", res, err)
	}
	recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
}

//go:embed testdata/pipelines/segments.yaml
var segmentsPipeline string
