package webui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// pages is an ExecutionLister of fixed pages, by token, recording the filters asked for; it
// acts on no execution.
type pages struct {
	ExecutionLister
	byToken map[string]starter.ExecutionsPage
	asked   []starter.ListFilter
}

func (p *pages) Tree(context.Context, string) (*workflows.Node, error) {
	return nil, starter.ErrNotFound
}

func (p *pages) ListPage(_ context.Context, f starter.ListFilter, _ int, token string) (starter.ExecutionsPage, error) {
	p.asked = append(p.asked, f)
	return p.byToken[token], nil
}

// The executions page sends a visitor who is not signed in to sign in and back; it lists each
// execution with a mark that tells its status without colour, who started it and for how
// long it ran; it keeps the filter in its form and in its link to older executions.
func TestExecutionsPage(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := []starter.Summary{
		{ID: "web-2", Pipeline: "web", Status: "FAILED", Trigger: "WEBHOOK", Start: t0, End: t0.Add(90 * time.Second)},
		{ID: "web-1", Pipeline: "web", Status: "SUCCEEDED", Trigger: "MANUAL", User: "ann", Start: t0, End: t0.Add(1500 * time.Millisecond)},
	}
	for len(first) < executionsPerPage { // a full page: the page reads no further
		first = append(first, starter.Summary{ID: "older", Pipeline: "web", Status: "SUCCEEDED", Start: t0, End: t0})
	}
	list := &pages{byToken: map[string]starter.ExecutionsPage{"": {Executions: first, Next: "tok2"}}}
	users := func(token string) (*identity.User, error) {
		if token == "good" {
			return &identity.User{Name: "ann"}, nil
		}
		return nil, identity.ErrUnauthenticated
	}
	srv := httptest.NewServer(executions(list, users, nil, "default"))
	defer srv.Close()
	get := func(token, query string) (int, string, string) {
		return getPage(t, srv.URL+ExecutionsPath+query, token)
	}
	if code, loc, _ := get("", "?status=FAILED"); code != http.StatusSeeOther || loc != SignInPath+"?next=%2Fgantry%2Fexecutions%3Fstatus%3DFAILED" {
		t.Fatalf("not signed in: %d to %q", code, loc)
	}
	code, _, body := get("good", "?pipeline=web&status=FAILED")
	for _, want := range []string{
		`data-id="web-2"`, `>✗</td>`, `s-FAILED">FAILED<`, `<td>webhook</td>`, `<td>1m30s</td>`,
		`data-id="web-1"`, `>✓</td>`, `<td>ann</td>`, `<td>1.5s</td>`, `title="2026-01-02 03:04:05 UTC"`, ` days ago</time>`,
		`value="web"`, `<option selected>FAILED</option>`,
		`href="/gantry/executions?page=tok2&amp;pipeline=web&amp;status=FAILED" id="older"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if code != http.StatusOK || len(list.asked) != 1 || list.asked[0] != (starter.ListFilter{Pipeline: "web", Status: "FAILED"}) {
		t.Errorf("%d, filters asked %+v", code, list.asked)
	}
	// A script signs in with the header instead of the cookie.
	req, _ := http.NewRequest("GET", srv.URL+ExecutionsPath, nil)
	req.Header.Set("Authorization", "Bearer good")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// countingTrees is a tree source that counts its reads, each taking a while, as a running
// execution's does.
type countingTrees struct{ reads atomic.Int32 }

func (c *countingTrees) Tree(ctx context.Context, id string) (*workflows.Node, error) {
	if id != "web-1" {
		return nil, starter.ErrNotFound
	}
	c.reads.Add(1)
	time.Sleep(50 * time.Millisecond)
	return &workflows.Node{Kind: "pipeline", Name: "web", Status: status.Running}, nil
}

// The execution page and its tree need a signed-in user (the tree answers 401, on which the
// page reloads into the sign-in); an unknown execution is a 404 that says so; the page and a
// hundred viewers polling one execution at once cost one read of its tree (within the
// freshness of a read, a minute here: sharedtrees_test.go tests its expiry).
func TestExecutionPageSharesTreeReads(t *testing.T) {
	src := &countingTrees{}
	users := func(token string) (*identity.User, error) {
		if token == "good" {
			return &identity.User{Name: "ann"}, nil
		}
		return nil, identity.ErrUnauthenticated
	}
	srv := httptest.NewServer(executionPage(&pages{}, &sharedTrees{read: src.Tree, fresh: time.Minute}, users, nil, "default"))
	defer srv.Close()
	get := func(token, path string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.AddCookie(&http.Cookie{Name: codec.TokenCookie, Value: token})
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("", ExecutionsPath+"/web-1?tree"); code != http.StatusUnauthorized {
		t.Errorf("the tree without a sign-in: %d", code)
	}
	if code, _ := get("", ExecutionsPath+"/web-1"); code != http.StatusSeeOther {
		t.Errorf("the page without a sign-in: %d", code)
	}
	if code, body := get("good", ExecutionsPath+"/nope-3"); code != http.StatusNotFound || !strings.Contains(body, "execution nope-3 does not exist") {
		t.Errorf("an unknown execution: %d %s", code, body)
	}
	if code, body := get("good", ExecutionsPath+"/web-1"); code != http.StatusOK || !strings.Contains(body, `id="flow"`) {
		t.Errorf("the page: %d %.300s", code, body)
	}
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := get("good", ExecutionsPath+"/web-1?tree"); code != http.StatusOK || !strings.Contains(body, `"kind":"pipeline"`) {
				t.Errorf("tree: %d %s", code, body)
			}
		}()
	}
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Errorf("the page and a hundred viewers read the tree %d times, want once", n)
	}
}

// A node's planned inputs are found by its path: in a parallel block, in a loop's iteration
// (the loop's own node), among rollback steps; an unknown path has none.
func TestNodeInputs(t *testing.T) {
	step := func(id, script string) *plan.Node {
		return &plan.Node{Kind: plan.KindStep, ID: id, Spec: map[string]any{"script": script}}
	}
	p := &plan.Plan{Variables: []plan.Variable{{Name: "v", Type: "String", Value: "1"}}, Stages: []*plan.Node{
		{Kind: plan.KindParallel, Children: []*plan.Node{
			{Kind: plan.KindStage, ID: "a", Variables: []plan.Variable{{Name: "sv", Type: "String", Value: "2"}}, Children: []*plan.Node{
				{Kind: plan.KindGroup, ID: "matrix", Strategy: &plan.Strategy{}, Children: []*plan.Node{step("t", "echo t")}}}},
			{Kind: plan.KindStage, ID: "b", Children: []*plan.Node{step("ship", "exit 4")}, Rollback: []*plan.Node{step("undo", "echo undo")}},
		}},
	}}
	for path, want := range map[string]string{
		"":             `{"variables":[{"name":"v","type":"String","value":"1"}]}`,
		"a":            `{"variables":[{"name":"sv","type":"String","value":"2"}]}`,
		"a.matrix_2.t": `{"spec":{"script":"echo t"}}`,
		"b.undo":       `{"spec":{"script":"echo undo"}}`,
		"b.nope":       `{}`,
		"matrix_2.t":   `{}`,
	} {
		got, _ := json.Marshal(nodeInputs(p, path))
		if string(got) != want {
			t.Errorf("%q: %s, want %s", path, got, want)
		}
	}
}

// A remote pipeline's run page says which files the run read from Git, at which commits.
func TestExecutionPageNamesTheCommitsReadFromGit(t *testing.T) {
	commit := strings.Repeat("c3", 20)
	read := func(_ context.Context, id string) (*workflows.Node, error) {
		return &workflows.Node{Kind: "pipeline", Name: "release", Status: status.Running, Sources: []plan.Source{
			{Kind: "pipeline", Identifier: "release", Connector: "app_repo", Repo: "app", FilePath: ".harness/release.yaml", Branch: "main", Commit: commit}}}, nil
	}
	users := func(string) (*identity.User, error) { return &identity.User{Name: "ann"}, nil }
	srv := httptest.NewServer(executionPage(&pages{}, &sharedTrees{read: read, fresh: time.Minute}, users, nil, "default"))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+ExecutionsPath+"/release-1", nil)
	req.AddCookie(&http.Cookie{Name: codec.TokenCookie, Value: "any"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`<details id="sources"><summary>Read from Git: pipeline release</summary>`, `<code title="` + commit + `">c3c3c3c3c3c3</code> .harness/release.yaml (branch main, connector app_repo)`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page lacks %s:\n%.2000s", want, b)
		}
	}
}

// getPage GETs a page with a sign-in cookie (none for ""), without following a redirect, and
// answers its status, Location and body.
func getPage(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.AddCookie(&http.Cookie{Name: codec.TokenCookie, Value: token})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}
