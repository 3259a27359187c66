package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// Every waiting decision is listed, page after page, however many executions wait (the list
// once looked only among the 200 newest executions): 250 executions waiting for an approval
// come back as pages of 100, 100 and 50, each execution once, through the starter and the API.
func TestPendingPagesListEveryWaitingExecution(t *testing.T) {
	const waiting = 250
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := compile(t, "pending_pages.yaml", []byte(approvalPipeline("pending_pages", "", "")), load.Options{})
	ids := map[string]bool{}
	for i := 0; i < waiting; i++ {
		exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		ids[exec.ID] = true
	}
	defer func() {
		for id := range ids {
			_ = env.client.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	}()
	// Visibility follows the executions' status a moment behind: page until all are listed.
	var pages []starter.PendingPage
	for {
		pages = nil
		token, seen := "", 0
		for {
			page, err := env.starter.PendingPage(ctx, 100, token)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, page)
			for _, pd := range page.Pending {
				if ids[pd.ExecutionID] && pd.Path == "gate.gate" && pd.Status == status.ApprovalWaiting && pd.Approval != nil {
					seen++
				}
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		if seen == waiting {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("listed %d of %d waiting executions", seen, waiting)
		}
		time.Sleep(200 * time.Millisecond)
	}
	listed := map[string]bool{}
	for _, page := range pages {
		if len(page.Pending) > 100 {
			t.Errorf("a page of %d", len(page.Pending))
		}
		for _, pd := range page.Pending {
			if listed[pd.ExecutionID] {
				t.Errorf("%s listed twice", pd.ExecutionID)
			}
			listed[pd.ExecutionID] = true
		}
	}

	// The API pages the same way; a token it did not give is refused.
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	dir := &identity.Directory{}
	alice, _ := dir.AddUser("alice", "", []string{"release_managers"})
	if err := dir.Save(idFile); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	const path = "/api/v1/pending"
	apiSeen, token := 0, ""
	for {
		q := url.Values{"limit": {"100"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		code, out := c.call("GET", path+"?"+q.Encode(), path, alice, nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, code, out)
		}
		for _, pd := range out["pending"].([]any) {
			if ids[pd.(map[string]any)["executionId"].(string)] {
				apiSeen++
			}
		}
		next, _ := out["nextPageToken"].(string)
		if next == "" {
			break
		}
		token = next
	}
	if apiSeen < waiting {
		t.Errorf("the API listed %d of %d", apiSeen, waiting)
	}
	if code, _ := c.call("GET", path+"?pageToken=%25%25", path, alice, nil); code != http.StatusBadRequest {
		t.Errorf("a foreign page token: %d", code)
	}
	if code, _ := c.call("GET", path+"?limit=0", path, alice, nil); code != http.StatusBadRequest {
		t.Errorf("limit 0: %d", code)
	}
}
