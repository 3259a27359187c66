package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

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
	const waiting, pageSize = 250, 100
	// A bound, not a timing: on a busy 2-core machine under -race the starts take a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := compile(t, "pending_pages.yaml", []byte(approvalPipeline("pending_pages", "", "")), load.Options{})
	ids := map[string]bool{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8) // starts wait on the server, not the CPU
	for i := 0; i < waiting; i++ {
		g.Go(func() error {
			exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
			if err != nil {
				return err
			}
			mu.Lock()
			ids[exec.ID] = true
			mu.Unlock()
			return nil
		})
	}
	startErr := g.Wait()
	defer func() {
		for id := range ids {
			_ = env.client.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	}()
	if startErr != nil {
		t.Fatal(startErr)
	}
	// Visibility follows the executions' status a moment behind: page until all are listed.
	var pages []starter.PendingPage
	for {
		pages = nil
		token, seen := "", 0
		for {
			page, err := env.starter.PendingPage(ctx, pageSize, token)
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
		if len(page.Pending) > pageSize {
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
		q := url.Values{"limit": {fmt.Sprint(pageSize)}}
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

// The pending list reads the pipeline's memo, which follows the votes, and an approval that
// ends its stage leaves the pipeline RUNNING with nothing listed while the next stage runs:
// the stage said so in its result, not by a signal (changeQuietWaiting).
func TestPendingMemoFollowsVotesAndQuietEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	yaml := strings.Replace(approvalPipeline("pending_memo", "", ""), `{script: "T=`, `{script: "sleep 4; T=`, 1)
	exec, err := env.starter.Start(ctx, compile(t, "pending_memo.yaml", []byte(yaml), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	listed := func() []starter.Pending {
		var out []starter.Pending
		all, err := env.starter.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range all {
			if p.ExecutionID == exec.ID {
				out = append(out, p)
			}
		}
		return out
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	until("the approval is listed", func() bool { l := listed(); return len(l) == 1 && l[0].Approval != nil })
	vote := func(u string) {
		if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "gate.gate", Action: "APPROVE", User: u, Groups: []string{"release_managers"}}); err != nil {
			t.Fatal(err)
		}
	}
	vote("ann")
	until("the listing shows one of two approvals", func() bool { l := listed(); return len(l) == 1 && l[0].Approval.Approvals == 1 })
	vote("bob")
	until("nothing is listed and the pipeline runs the next stage", func() bool {
		resp, err := env.client.DescribeWorkflowExecution(ctx, exec.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		f := resp.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
		return len(listed()) == 0 && strings.Contains(string(f[workflows.AttrStatus.GetName()].GetData()), string(status.Running)) &&
			strings.Contains(string(f[workflows.AttrStage.GetName()].GetData()), "after")
	})
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%v %v", res, err)
	}
	// The stage ended without a signal saying nothing waits.
	signals := 0
	iter := env.client.GetWorkflowHistory(ctx, exec.ID+"/gate", "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetSignalExternalWorkflowExecutionInitiatedEventAttributes() != nil {
			signals++
		}
	}
	if signals != 2 { // began to wait; the first vote
		t.Fatalf("the stage sent %d signals, want 2", signals)
	}
}
