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

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/server"
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

// The global freeze through the API: anyone signed in reads it, only an admin turns it on
// and off, and asking for the state it is in changes nothing; the audit trail has the
// switches, read from the freeze workflow's history. Not parallel, as
// TestDeploymentFreezes.
func TestGlobalFreezeAPI(t *testing.T) {
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	dir := &identity.Directory{
		Roles: []identity.Role{{Name: "root", Permissions: []identity.Permission{{Actions: []identity.Action{identity.Admin}}}},
			{Name: "dev", Permissions: []identity.Permission{{Actions: []identity.Action{identity.View, identity.Execute}}}}},
		Groups: []identity.Group{{Name: "ops", Roles: []string{"root"}}, {Name: "devs", Roles: []string{"dev"}}},
	}
	begun := time.Now()
	ops, _ := dir.AddUser("freeze_admin", "", []string{"ops"})
	dev, _ := dir.AddUser("dev", "", []string{"devs"})
	if err := dir.Save(idFile); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	const path = "/api/v1/freeze"
	defer env.starter.FreezeOff(context.Background(), "cleanup")
	if code, out := c.call("GET", path, path, dev, nil); code != 200 || out["on"] != false {
		t.Fatalf("read: %d %v", code, out)
	}
	if code, _ := c.call("PUT", path, path, dev, map[string]any{"on": true}); code != 403 {
		t.Errorf("a developer turned the freeze on: %d", code)
	}
	if code, out := c.call("PUT", path, path, ops, map[string]any{"on": true, "reason": "incident 7"}); code != 200 || out["on"] != true || out["by"] != "freeze_admin" {
		t.Fatalf("on: %d %v", code, out)
	}
	if code, out := c.call("PUT", path, path, ops, map[string]any{"on": true, "reason": "again"}); code != 200 || out["reason"] != "incident 7" {
		t.Errorf("on again: %d %v", code, out)
	}
	if code, out := c.call("GET", path, path, dev, nil); code != 200 || out["on"] != true || out["reason"] != "incident 7" {
		t.Errorf("read while on: %d %v", code, out)
	}
	if code, out := c.call("PUT", path, path, ops, map[string]any{"on": false}); code != 200 || out["on"] != false {
		t.Errorf("off: %d %v", code, out)
	}
	if g, err := env.starter.GlobalFreeze(context.Background()); err != nil || g.On {
		t.Errorf("after off: %+v %v", g, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		recs, err := env.starter.Audit(ctx, starter.AuditQuery{User: "freeze_admin", Since: begun})
		var details []string
		for _, r := range recs {
			if r.Action == "freeze" {
				details = append(details, r.Detail)
			}
		}
		if err == nil && len(details) == 2 {
			if details[0] != "on: incident 7" || details[1] != "off" {
				t.Errorf("audit %q", details)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("audit of the freeze calls: %q %v", details, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A freeze file's own events through `gantry server`'s sync: switched on (the file appears)
// its rule is told OnEnableFreezeWindow once, a sync of the unchanged file tells nothing, and
// disabling the freeze stops its notices workflow. Not parallel: another test's sync of its
// own pipelines directory would stop this one's notices.
func TestFreezeNoticesFromServerSync(t *testing.T) {
	hooks := make(chan map[string]any, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if json.NewDecoder(r.Body).Decode(&body) == nil {
			hooks <- body
		}
	}))
	defer hook.Close()
	dir := t.TempDir()
	freeze := func(status string) {
		writeFile(t, filepath.Join(dir, "freeze.yaml"), `freeze:
  name: Audit week
  identifier: audit_week
  status: `+status+`
  entityConfigs:
    - name: all
      entities: [{type: Service, filterType: All}]
  windows:
    - {timeZone: UTC, startTime: `+time.Now().UTC().Add(48*time.Hour).Format("2006-01-02 15:04")+`, duration: 1d}
  notificationRules:
    - name: tell audit
      identifier: audit
      enabled: true
      events: [{type: OnEnableFreezeWindow}, {type: FreezeWindowEnabled}]
      notificationMethod: {type: Webhook, spec: {webhookUrl: "`+hook.URL+`"}}
`)
	}
	freeze("Enabled")
	api := server.New(server.Options{Starter: env.starter, PipelinesDir: dir, IdentityFile: filepath.Join(dir, "none.yaml")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		if err := api.SyncSchedules(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case body := <-hooks:
		if d, _ := body["eventData"].(map[string]any); d["eventType"] != "OnEnableFreezeWindow" || d["freezeIdentifier"] != "audit_week" {
			t.Errorf("webhook %v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no OnEnableFreezeWindow for the freeze switched on")
	}
	select {
	case body := <-hooks:
		t.Errorf("a second notice: %v", body)
	case <-time.After(2 * time.Second):
	}
	freeze("Disabled")
	if err := api.SyncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.internal.GetWorkflow(ctx, workflows.FreezeNoticesID("audit_week"), "").Get(ctx, nil); err != nil {
		t.Errorf("the disabled freeze's notices did not end: %v", err)
	}
}
