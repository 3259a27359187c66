package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Deployment freezes on the real server: the global freeze refuses a deployment until it is
// turned off; an execution started with an override deploys through it and the audit trail
// says whose override; a freeze file's window active now refuses a deployment, one that ended
// does not. Not parallel: the global freeze would refuse the other tests' deployments.
func TestDeploymentFreezes(t *testing.T) {
	r := newLockRig(t, true)
	file := r.deployPipeline(t, "frozen", false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(set workflows.Settings) (string, *workflows.PipelineResult) {
		t.Helper()
		exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, set)
		if err != nil {
			t.Fatal(err)
		}
		res, err := env.starter.Result(ctx, exec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return exec.ID, res
	}

	if _, err := env.starter.FreezeOn(ctx, "ops", "incident 42"); err != nil {
		t.Fatal(err)
	}
	defer env.starter.FreezeOff(context.Background(), "ops")
	if _, err := env.starter.FreezeOn(ctx, "ops", "again"); err == nil || !strings.Contains(err.Error(), "on already") {
		t.Errorf("turning an active freeze on again: %v", err)
	}
	if g, err := env.starter.GlobalFreeze(ctx); err != nil || !g.On || g.By != "ops" || g.Reason != "incident 42" {
		t.Fatalf("global freeze state %+v %v", g, err)
	}
	_, res := run(workflows.Settings{})
	if st := res.Tree.Find("deploy"); res.Status != status.FreezeFailed || st.Failure == nil || !strings.Contains(st.Failure.Message, "incident 42") {
		t.Fatalf("during the global freeze: %s %+v", res.Status, st.Failure)
	}
	id, res := run(workflows.Settings{OverrideFreeze: "ann"})
	if res.Status != status.Succeeded {
		t.Fatalf("overridden: %s", res.Status)
	}
	recs, err := env.starter.Audit(ctx, starter.AuditQuery{Execution: id})
	if err != nil || len(recs) == 0 || !strings.Contains(recs[0].Detail, "override-freeze by ann") {
		t.Errorf("audit of the overridden start: %+v %v", recs, err)
	}
	if was, err := env.starter.FreezeOff(ctx, "ops"); err != nil || !was {
		t.Fatalf("freeze off: %v %v", was, err)
	}
	if _, res := run(workflows.Settings{}); res.Status != status.Succeeded {
		t.Fatalf("after the global freeze: %s", res.Status)
	}

	// A window of a freeze file, active now, then one that has ended. The freeze's rule tells
	// a webhook of the deployment it refuses.
	hooks := make(chan map[string]any, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if json.NewDecoder(r.Body).Decode(&body) == nil {
			hooks <- body
		}
	}))
	defer hook.Close()
	for _, c := range []struct {
		start time.Time
		want  status.Status
	}{{time.Now().Add(-time.Hour), status.FreezeFailed}, {time.Now().Add(-50 * time.Hour), status.Succeeded}} {
		writeFile(t, filepath.Join(r.dir, "freeze.yaml"), `freeze:
  name: Release week
  identifier: release_week
  entityConfigs:
    - name: shop
      entities:
        - {type: Service, filterType: Equals, entityRefs: [shop]}
  windows:
    - timeZone: UTC
      startTime: `+c.start.UTC().Format("2006-01-02 03:04 PM")+`
      duration: 1d
  notificationRules:
    - name: tell ops
      identifier: ops
      enabled: true
      events: [{type: DeploymentRejectedDueToFreeze}]
      notificationMethod: {type: Webhook, spec: {webhookUrl: "`+hook.URL+`"}}
`)
		id, res := run(workflows.Settings{})
		if res.Status != c.want {
			t.Errorf("window from %s: %s, want %s", c.start.UTC(), res.Status, c.want)
		}
		if c.want == status.FreezeFailed {
			if f := res.Tree.Find("deploy").Freeze; f != "release_week" {
				t.Errorf("the refused stage names freeze %q", f)
			}
			select {
			case body := <-hooks:
				d, _ := body["eventData"].(map[string]any)
				if d["eventType"] != "DeploymentRejectedDueToFreeze" || d["freezeIdentifier"] != "release_week" || d["planExecutionId"] != id || d["stageIdentifier"] != "deploy" {
					t.Errorf("webhook %v", d)
				}
			case <-time.After(time.Minute):
				t.Error("no webhook for the refused deployment")
			}
		}
	}
	select {
	case body := <-hooks:
		t.Errorf("more webhooks than refusals: %v", body)
	case <-time.After(2 * time.Second):
	}
}
