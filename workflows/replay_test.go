package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	gworker "github.com/gantry-cd/gantry/worker"
)

// TestReplayRecordedHistories replays histories recorded from earlier versions of the engine
// (testdata/histories, written by `go test ./e2e -run TestRecordHistories -update-histories`).
// A change that would break executions already in flight fails here: guard it with
// workflow.GetVersion instead. File names are workflow IDs with "/" written as "__".
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			gworker.RegisterWorkflows(r)
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			h, err := client.HistoryFromJSON(fh, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			id := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".json"), "__", "/")
			// The recorded run ID: lock tickets name their run, and a notice for another
			// run's ticket is not this one's.
			runID := h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId()
			if runID == "" {
				runID = "replay"
			}
			err = r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: id, RunID: runID},
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
