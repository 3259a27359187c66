package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/worker"
)

// A cron trigger of a pipeline kept in Git runs, at each fire, the branch's head as it is then,
// read by the server (no schedule synchronisation in between): a push between two fires is run
// by the second. A fire whose pipeline is broken at the head fails, naming where, and starts
// nothing.
func TestRemoteCronFiresRunTheHeadAtTheFire(t *testing.T) {
	rg := newRemoteRig(t)
	g := rg.git
	rg.register(t, remote.Entry{Kind: "pipeline", Identifier: "release", ConnectorRef: "app_repo", FilePath: ".harness/release.yaml", Branch: "main"}, 201)
	rg.register(t, remote.Entry{Kind: "inputSet", Identifier: "prod", ConnectorRef: "app_repo", FilePath: ".harness/prod.yaml", Branch: "main"}, 201)
	if err := os.WriteFile(filepath.Join(rg.dir, "nightly.trigger.yaml"), []byte(`trigger:
  name: nightly release
  identifier: nightly_release
  pipelineIdentifier: release
  pipelineBranchName: main
  inputSetRefs: [prod]
  source:
    type: Scheduled
    spec:
      type: Cron
      spec: {type: UNIX, expression: "30 2 * * *"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	side := worker.ServerSide(env.starter, rg.srv.LoadCron)
	if err := side.Start(); err != nil {
		t.Fatal(err)
	}
	defer side.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	first := g.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("first", 0)})
	if err := rg.srv.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	h := env.internal.ScheduleClient().GetHandle(ctx, starter.SchedulePrefix+"nightly_release")
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	seen := map[string]bool{}
	fire := func() string {
		t.Helper()
		// A fire's workflow ID carries its second: two fires within one are one fire.
		time.Sleep(time.Second)
		before := len(mustDescribe(ctx, t, h).Info.RecentActions)
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
			t.Fatal(err)
		}
		for ctx.Err() == nil {
			if acts := mustDescribe(ctx, t, h).Info.RecentActions; len(acts) > before {
				r := acts[len(acts)-1].StartWorkflowResult
				var id string
				err := env.internal.GetWorkflow(ctx, r.WorkflowID, r.FirstExecutionRunID).Get(ctx, &id)
				if err != nil {
					return "fire failed: " + err.Error()
				}
				if seen[id] {
					t.Fatalf("execution %s started twice", id)
				}
				seen[id] = true
				return id
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatal("the schedule never fired")
		return ""
	}
	said, commits := saidAndSources(t, fire())
	if !strings.HasPrefix(said, "first hello-prod from remote") || commits["pipeline release"] != "main@"+first {
		t.Errorf("first fire said %q, read %v", said, commits)
	}
	second := g.Commit("app", "main", map[string]string{".harness/release.yaml": remotePipeline("second", 0)})
	said, commits = saidAndSources(t, fire())
	if !strings.HasPrefix(said, "second hello-prod") || commits["pipeline release"] != "main@"+second || commits["inputSet prod"] != "main@"+second {
		t.Errorf("after a push the fire said %q, read %v", said, commits)
	}
	broken := g.Commit("app", "main", map[string]string{".harness/release.yaml": "pipeline:\n  name: release\n  identifier: release\n  stages: [\n"})
	if got := fire(); !strings.HasPrefix(got, "fire failed") || !strings.Contains(got, "app@"+broken[:12]+":.harness/release.yaml:") {
		t.Errorf("a fire of a broken head: %s", got)
	}
}

func mustDescribe(ctx context.Context, t *testing.T, h client.ScheduleHandle) *client.ScheduleDescription {
	t.Helper()
	d, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
