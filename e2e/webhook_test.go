package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/triggers"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

//go:embed testdata/pipelines/on_push.yaml
var hookPipeline string

const hookTrigger = `trigger:
  name: main pushes
  identifier: main_push
  pipelineIdentifier: on_push
  encryptedWebhookSecretIdentifier: hook_secret
  inputYaml: |
    pipeline:
      identifier: on_push
      variables:
        - name: sha
          type: String
          value: <+trigger.commitSha>
  source:
    type: Webhook
    spec:
      type: Github
      spec:
        type: Push
        spec:
          repoName: checkout-service
          payloadConditions:
            - {key: targetBranch, operator: Equals, value: main}
`

func sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestGitHubWebhook(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "on-push.yaml"), []byte(hookPipeline), 0o600)
	os.WriteFile(filepath.Join(dir, "main-push.trigger.yaml"), []byte(hookTrigger), 0o600)
	t.Setenv(secrets.EnvName("hook_secret"), "hush")
	events := &triggers.EventLog{Path: filepath.Join(t.TempDir(), "events.jsonl")}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: filepath.Join(dir, "none.yaml"),
		PipelinesDir: dir, Secrets: &secrets.Store{}, Events: events}))
	defer srv.Close()
	payload, err := os.ReadFile("../triggers/testdata/github-push.json")
	if err != nil {
		t.Fatal(err)
	}
	post := func(body []byte, delivery, sig string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/github", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", delivery)
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	startedID := func(out map[string]any) (string, bool) {
		res, _ := out["results"].([]any)
		if len(res) != 1 {
			return "", false
		}
		m := res[0].(map[string]any)
		id, _ := m["executionId"].(string)
		dup, _ := m["duplicate"].(bool)
		return id, dup
	}

	// Nothing starts for an unsigned, a badly signed, an oversized or a non-matching delivery.
	if code, _ := post(payload, "d-unsigned", ""); code != 401 {
		t.Errorf("unsigned: %d", code)
	}
	if code, _ := post(payload, "d-bad", sign(payload, "wrong")); code != 403 {
		t.Errorf("bad signature: %d", code)
	}
	big := append([]byte(`{"pad": "`), bytes.Repeat([]byte("x"), server.MaxBody)...)
	big = append(big, []byte(`"}`)...)
	if code, _ := post(big, "d-big", sign(big, "hush")); code != 413 {
		t.Errorf("oversized: %d", code)
	}
	develop := bytes.Replace(payload, []byte(`"refs/heads/main"`), []byte(`"refs/heads/develop"`), 1)
	code, out := post(develop, "d-develop", sign(develop, "hush"))
	if id, _ := startedID(out); code != 202 || id != "" || !strings.Contains(toJSON(out), triggers.StatusNoPayload) {
		t.Errorf("develop: %d %v", code, out)
	}

	// A signed push to main starts the pipeline once, however often it is delivered.
	sig := sign(payload, "hush")
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := post(payload, "d-main-1", sig)
			if code != 202 {
				t.Errorf("delivery %d: %d %v", i, code, out)
			}
			ids[i], _ = startedID(out)
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("concurrent deliveries started %v", ids)
		}
	}
	if _, dup := startedID(func() map[string]any { _, o := post(payload, "d-main-1", sig); return o }()); !dup {
		t.Error("a repeated delivery was not reported as a duplicate")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, ids[0])
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	outs := res.Tree.Find("build.show").Outputs["outputVariables"].(map[string]any)
	if outs["b"] != "main" || outs["s"] != "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c" || outs["u"] != "octocat" || outs["t"] != "WEBHOOK" {
		t.Errorf("outputs %v", outs)
	}
	// Only one execution exists: the next sequence number was never used.
	next := strings.TrimSuffix(ids[0], "-1") + "-2"
	if _, err := env.client.DescribeWorkflowExecution(ctx, next, ""); err == nil {
		t.Errorf("%s exists: a delivery started twice", next)
	} else if _, nf := err.(*serviceerror.NotFound); !nf {
		t.Logf("describe %s: %v", next, err)
	}
	recs, err := events.Last(20)
	if err != nil || len(recs) < 5 {
		t.Fatalf("events %v %v", recs, err)
	}
	for _, r := range recs {
		if strings.Contains(r.Reason, "hush") {
			t.Errorf("an event record leaks the secret: %+v", r)
		}
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Custom webhooks need an API key and honour Idempotency-Key.
func TestCustomWebhook(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "on-push.yaml"), []byte(strings.ReplaceAll(hookPipeline, "on_push", "on_custom")), 0o600)
	os.WriteFile(filepath.Join(dir, "bot.yaml"), []byte(`trigger:
  name: bot
  identifier: bot
  pipelineIdentifier: on_custom
  inputSetRefs: []
  inputYaml: |
    pipeline:
      identifier: on_custom
      variables:
        - {name: sha, type: String, value: <+trigger.payload.sha>}
  source:
    type: Webhook
    spec:
      type: Custom
      spec:
        payloadConditions:
          - {key: <+trigger.payload.service>, operator: Equals, value: checkout}
`), 0o600)
	idFile := filepath.Join(dir, "users.yaml")
	d := &identity.Directory{}
	tok, _ := d.AddUser("releasebot", "", nil)
	d.Save(idFile)
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile, PipelinesDir: dir}))
	defer srv.Close()
	post := func(key, idem, body string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/custom/bot", strings.NewReader(body))
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := post("", "", `{"service": "checkout"}`); code != 401 {
		t.Errorf("no key: %d", code)
	}
	code, body := post(tok, "job-1", `{"service": "checkout", "sha": "abc"}`)
	if code != 202 || !strings.Contains(body, "on_custom-") {
		t.Fatalf("%d %s", code, body)
	}
	code, body2 := post(tok, "job-1", `{"service": "checkout", "sha": "abc"}`)
	if code != 202 || !strings.Contains(body2, `"duplicate":true`) {
		t.Errorf("repeat: %d %s", code, body2)
	}
	if code, body := post(tok, "job-2", `{"service": "billing"}`); code != 202 || strings.Contains(body, "executionId") {
		t.Errorf("non-matching: %d %s", code, body)
	}
}

// GitLab (token) and Bitbucket (signature) pushes start the pipeline too.
func TestGitLabAndBitbucketWebhooks(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "on-push.yaml"), []byte(strings.ReplaceAll(hookPipeline, "on_push", "on_any_push")), 0o600)
	for _, p := range []string{"Gitlab", "Bitbucket"} {
		tr := strings.ReplaceAll(strings.ReplaceAll(hookTrigger, "on_push", "on_any_push"), "type: Github", "type: "+p)
		tr = strings.Replace(tr, "identifier: main_push", "identifier: push_"+strings.ToLower(p), 1)
		os.WriteFile(filepath.Join(dir, strings.ToLower(p)+".yaml"), []byte(tr), 0o600)
	}
	t.Setenv(secrets.EnvName("hook_secret"), "hush")
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: filepath.Join(dir, "none.yaml"),
		PipelinesDir: dir, Secrets: &secrets.Store{}}))
	defer srv.Close()
	for _, c := range []struct {
		path, file string
		headers    map[string]string
		goodAuth   func(body []byte) (string, string)
	}{
		{"gitlab", "gitlab-push.json", map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Event-UUID": "gl-1"},
			func([]byte) (string, string) { return "X-Gitlab-Token", "hush" }},
		{"bitbucket", "bitbucket-push.json", map[string]string{"X-Event-Key": "repo:push", "X-Request-UUID": "bb-1"},
			func(b []byte) (string, string) { return "X-Hub-Signature", sign(b, "hush") }},
	} {
		body, err := os.ReadFile("../triggers/testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		post := func(authKey, authVal string) (int, string) {
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/webhooks/"+c.path, bytes.NewReader(body))
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			if authKey != "" {
				req.Header.Set(authKey, authVal)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			return resp.StatusCode, b.String()
		}
		k, _ := c.goodAuth(body)
		if code, _ := post(k, "nope"); code != 403 {
			t.Errorf("%s bad auth: %d", c.path, code)
		}
		code, out := post(c.goodAuth(body))
		if code != 202 || !strings.Contains(out, "on_any_push-") {
			t.Errorf("%s: %d %s", c.path, code, out)
		}
	}
}

// A repeat of a keyed start (a webhook delivery, a cron tick) is a duplicate even after the
// pipeline's sequence workflow continued as new, and after a server restart.
func TestStartOnceAcrossContinueAsNewAndRestart(t *testing.T) {
	dir := t.TempDir()
	p := compile(t, "once.yaml", []byte(conformance.Progression(1)[0].YAML), load.Options{})
	p.Identifier = "once_across_can"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var first starter.Execution
	for round := 0; round < 2; round++ {
		srv, c, err := startServer(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		s := &starter.Starter{Client: c}
		exec, started, err := s.StartOnce(ctx, "delivery/github/t/d-1", p, workflows.Trigger{Type: "WEBHOOK"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if !started {
				t.Fatal("the first delivery did not start")
			}
			first = exec
			// Take sequenceBatch more numbers so the sequence workflow continues as new.
			seqID := "gantry-sequence-" + p.Identifier
			before, err := c.DescribeWorkflowExecution(ctx, seqID, "")
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 500; i++ {
				h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: seqID, UpdateName: workflows.UpdateNext, WaitForStage: client.WorkflowUpdateStageCompleted})
				if err == nil {
					err = h.Get(ctx, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			after, err := c.DescribeWorkflowExecution(ctx, seqID, "")
			if err != nil {
				t.Fatal(err)
			}
			if before.GetWorkflowExecutionInfo().GetExecution().GetRunId() == after.GetWorkflowExecutionInfo().GetExecution().GetRunId() {
				t.Fatal("the sequence workflow did not continue as new")
			}
			exec, started, err = s.StartOnce(ctx, "delivery/github/t/d-1", p, workflows.Trigger{Type: "WEBHOOK"}, workflows.Settings{})
			if err != nil {
				t.Fatal(err)
			}
		}
		if started || exec.ID != first.ID {
			t.Errorf("round %d: a repeated delivery started %s (started %v), want the duplicate %s", round, exec.ID, started, first.ID)
		}
		if _, err := s.Result(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		w.Stop()
		c.Close()
		srv.Stop()
	}
}

// A sequence workflow started on the pipelines' queue (as starters before sequence queues did)
// moves to its own queue when it continues as new, and keeps counting.
func TestSequenceMovesToItsOwnQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seqID := "gantry-sequence-moves_queue"
	run, err := env.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: seqID, TaskQueue: workflows.TaskQueue}, workflows.SequenceName, int64(0))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for i := 0; i < 501; i++ {
		h, err := env.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: seqID, UpdateName: workflows.UpdateNext, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, &n)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 501 {
		t.Errorf("number %d after 501 updates", n)
	}
	desc, err := env.client.DescribeWorkflowExecution(ctx, seqID, "")
	if err != nil {
		t.Fatal(err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetExecution().GetRunId() == run.GetRunID() || info.GetTaskQueue() != workflows.SequenceQueue(workflows.TaskQueue) {
		t.Errorf("after continue-as-new: run %s on queue %q", info.GetExecution().GetRunId(), info.GetTaskQueue())
	}
	if *updateHistories {
		writeRunHistory(t, seqID, run.GetRunID(), filepath.Join("..", "workflows", "testdata", "histories", "sequence_moves_queue.json"))
	}
}

// Starts in a burst take numbers taken ahead; a keyed start that takes one records its key
// from the execution. A repeat in the same process starts nothing; a repeat another process
// serves from its own numbers ahead starts an execution that finds the key taken and ends
// SKIPPED without running anything; a repeat that process has to ask the sequence for gets
// the first number. Numbers left over go back when the starter closes.
func TestKeyedStartsWithNumbersTakenAhead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := compile(t, "ahead.yaml", []byte(conformance.Progression(1)[0].YAML), load.Options{})
	p.Identifier = "numbers_ahead"
	trig := workflows.Trigger{Type: "WEBHOOK"}
	a := &starter.Starter{Client: env.client, Internal: env.internal}
	first, err := a.Start(ctx, p, trig, workflows.Settings{}) // takes numbers ahead
	if err != nil {
		t.Fatal(err)
	}
	// Four concurrent deliveries of one key and one more afterwards: one execution.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	startedCount := 0
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec, started, err := a.StartOnce(ctx, "delivery/github/t/ahead-1", p, trig, workflows.Settings{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, exec.ID)
			if started {
				startedCount++
			}
		}()
		if i == 3 {
			wg.Wait()
		}
	}
	wg.Wait()
	if startedCount != 1 || len(ids) != 5 || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
		t.Fatalf("one key started %d executions: %v", startedCount, ids)
	}
	keyed := ids[0]
	if keyed != fmt.Sprintf("numbers_ahead-%d", first.SequenceID+1) {
		t.Errorf("the keyed start is %s, want the number after %s (taken ahead)", keyed, first.ID)
	}
	res, err := a.Result(ctx, keyed)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("keyed execution: %v %v", res, err)
	}

	// Another process asks the sequence for the key, and gets its number.
	c := &starter.Starter{Client: env.client, Internal: env.internal}
	again, started, err := c.StartOnce(ctx, "delivery/github/t/ahead-1", p, trig, workflows.Settings{})
	if err != nil || started || again.ID != keyed {
		t.Errorf("asked for the key: %s started %v (%v), want the duplicate %s", again.ID, started, err, keyed)
	}
	// A third takes a number ahead for it, and its execution finds the key taken.
	b := &starter.Starter{Client: env.client, Internal: env.internal}
	if _, err := b.Start(ctx, p, trig, workflows.Settings{}); err != nil { // takes numbers ahead
		t.Fatal(err)
	}
	repeat, started, err := b.StartOnce(ctx, "delivery/github/t/ahead-1", p, trig, workflows.Settings{})
	if err != nil || !started || repeat.ID == keyed {
		t.Fatalf("repeat from numbers ahead: %s started %v %v", repeat.ID, started, err)
	}
	res, err = b.Result(ctx, repeat.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Skipped || res.Tree.Children[0].Status != status.NotStarted ||
		!strings.Contains(strings.Join(res.Tree.Notes, " "), "which started execution "+keyed) {
		t.Errorf("the repeat ran or does not say why not: %s %+v", res.Status, res.Tree.Notes)
	}

	// Closing gives the numbers left over back: the next start follows the last one used.
	for _, s := range []*starter.Starter{a, c, b} {
		s.Close(ctx)
	}
	next, err := (&starter.Starter{Client: env.client, Internal: env.internal}).Start(ctx, p, trig, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if next.SequenceID != repeat.SequenceID+1 {
		t.Errorf("after the starters closed the next number is %d, want %d", next.SequenceID, repeat.SequenceID+1)
	}
}
