package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/devserver"
	"github.com/gantry-cd/gantry/webui"
)

// The UI serves its pages and its HTTP API against a real Temporal server, and shows a
// workflow started there.
func TestServesTheUIForATemporalServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ui, err := webui.Start(ctx, webui.Options{Listen: "127.0.0.1:0", Temporal: srv.Address})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Stop()

	c, err := client.Dial(client.Options{HostPort: srv.Address})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "ui-probe", TaskQueue: "nobody"}, "probe"); err != nil {
		t.Fatal(err)
	}

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ui.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, page := get("/"); code != http.StatusOK || !strings.Contains(page, "<html") {
		t.Errorf("GET /: %d %.200s", code, page)
	}
	code, body := get("/api/v1/namespaces/default/workflows/ui-probe")
	var desc struct {
		WorkflowExecutionInfo struct {
			Type struct{ Name string } `json:"type"`
		} `json:"workflowExecutionInfo"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &desc) != nil || desc.WorkflowExecutionInfo.Type.Name != "probe" {
		t.Errorf("the UI's API did not describe the workflow: %d %.300s", code, body)
	}
	if got := ui.ExecutionURL("default", "hello-1"); got != ui.URL+"/namespaces/default/workflows/hello-1" {
		t.Errorf("execution URL %s", got)
	}
}

// A busy address is an error to report, not the end of the process.
func TestBusyAddressIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := webui.Start(context.Background(), webui.Options{Listen: ln.Addr().String(), Temporal: "127.0.0.1:1"}); err == nil ||
		!strings.Contains(err.Error(), "--ui-listen") {
		t.Errorf("err = %v", err)
	}
}
