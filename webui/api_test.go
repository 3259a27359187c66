package webui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/gantry-cd/gantry/devserver"
)

// The front answers the UI's reads and queries itself with what the ui-server would answer
// (the same JSON, the same errors), and leaves a query without the page's CSRF token to the
// ui-server, which refuses it.
func TestReadsAnswerAsTheUIServerDoes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := sdkclient.Dial(sdkclient.Options{HostPort: srv.Address})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "ui-reads", worker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		workflow.SetCurrentDetails(ctx, "**waiting** for a signal")
		workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
		return nil
	}, workflow.RegisterOptions{Name: "probe"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "reads/1", TaskQueue: "ui-reads"}, "probe")
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the first workflow task to complete, so the history stands still.
	for {
		d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
		if err == nil && d.PendingWorkflowTask == nil && d.WorkflowExecutionInfo.HistoryLength >= 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	ui, err := Start(ctx, Options{Listen: "127.0.0.1:0", Temporal: srv.Address})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	call := func(base, method, path, csrf string) (int, any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return resp.StatusCode, string(body)
		}
		return resp.StatusCode, v
	}
	// The page's CSRF cookie, set by the ui-server on any page; the jar sends it to both.
	call(ui.URL, http.MethodGet, "/api/v1/settings", "")
	csrf := ""
	for _, base := range []string{ui.URL, ui.inner} {
		u, _ := url.Parse(base)
		for _, ck := range jar.Cookies(u) {
			if ck.Name == "_csrf" {
				csrf = ck.Value
			}
		}
	}
	if csrf == "" {
		t.Fatal("no CSRF cookie")
	}
	inner, _ := url.Parse(ui.inner)
	jar.SetCookies(inner, []*http.Cookie{{Name: "_csrf", Value: csrf, Path: "/"}})

	wf := "/api/v1/namespaces/default/workflows/" + url.PathEscape(run.GetID())
	for _, path := range []string{
		wf + "/history?waitNewEvent=false&maximumPageSize=1000",
		wf + "/history-reverse?waitNewEvent=false&maximumPageSize=1000",
		"/api/v1/namespaces/default/workflows/nobody/history?waitNewEvent=false", // NotFound
		"/api/v1/namespaces/nowhere/workflows/x",                                 // no such namespace
	} {
		frontCode, front := call(ui.URL, http.MethodGet, path, "")
		innerCode, want := call(ui.inner, http.MethodGet, path, "")
		if frontCode != innerCode || !reflect.DeepEqual(front, want) {
			t.Errorf("GET %s: the front answered %d %v\nthe ui-server answers %d %v", path, frontCode, front, innerCode, want)
		}
	}
	code, desc := call(ui.URL, http.MethodGet, wf, "")
	if info, _ := desc.(map[string]any)["workflowExecutionInfo"].(map[string]any); code != http.StatusOK || info["historyLength"] == nil {
		t.Errorf("describe through the front: %d %v", code, desc)
	}

	query := wf + "/query/__temporal_workflow_metadata"
	frontCode, front := call(ui.URL, http.MethodPost, query, csrf)
	if frontCode != http.StatusOK || !strings.Contains(payloadText(front), "**waiting** for a signal") {
		t.Errorf("query through the front: %d %v", frontCode, front)
	}
	innerCode, want := call(ui.inner, http.MethodPost, query, csrf)
	if frontCode != innerCode || !reflect.DeepEqual(front, want) {
		t.Errorf("query: the front answered %d %v\nthe ui-server answers %d %v", frontCode, front, innerCode, want)
	}
	if code, body := call(ui.URL, http.MethodPost, query, "forged"); code == http.StatusOK {
		t.Errorf("a query with a wrong CSRF token was answered: %v", body)
	}
}

// payloadText is the data of a query answer's first payload.
func payloadText(v any) string {
	var answer struct {
		QueryResult struct{ Payloads []struct{ Data []byte } }
	}
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &answer)
	if len(answer.QueryResult.Payloads) == 0 {
		return ""
	}
	return string(answer.QueryResult.Payloads[0].Data)
}
