package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
)

// apiClient calls the API and checks every answer against the OpenAPI document.
type apiClient struct {
	t    testing.TB
	url  string
	spec map[string]map[string]map[string]any // path → method → operation
}

func (c *apiClient) call(method, path, pattern, token string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	op := c.spec[pattern][strings.ToLower(method)]
	responses, _ := op["responses"].(map[string]any)
	if _, ok := responses[fmt.Sprint(resp.StatusCode)]; !ok {
		c.t.Errorf("%s %s answered %d, which the OpenAPI document does not list for %s", method, path, resp.StatusCode, pattern)
	}
	if resp.StatusCode >= 400 && (out["code"] == nil || out["message"] == nil) {
		c.t.Errorf("%s %s: error body %v lacks code/message", method, path, out)
	}
	return resp.StatusCode, out
}

func TestHTTPAPI(t *testing.T) {
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	dir := &identity.Directory{}
	alice, _ := dir.AddUser("alice", "alice@example.com", []string{"release_managers"})
	bob, _ := dir.AddUser("bob", "bob@example.com", []string{"release_managers"})
	carol, _ := dir.AddUser("carol", "", []string{"release_managers"})
	dev, _ := dir.AddUser("dev", "", []string{"developers"})
	if err := dir.Save(idFile); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}
	const execs = "/api/v1/executions"

	// Authentication and malformed requests change nothing.
	if code, _ := c.call("GET", execs, execs, "", nil); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code, _ := c.call("GET", execs, execs, "gty_wrong", nil); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _ := c.call("POST", execs, execs, carol, []byte(`{"yaml": `)); code != 400 {
		t.Errorf("malformed: %d", code)
	}
	if code, _ := c.call("POST", execs, execs, carol, map[string]any{"yaml": "x", "evil": true}); code != 400 {
		t.Errorf("unknown field: %d", code)
	}
	if code, _ := c.call("POST", execs, execs, carol, map[string]any{"yaml": strings.Repeat("#", server.MaxBody+10)}); code != 413 {
		t.Errorf("oversized: %d", code)
	}
	code, out := c.call("POST", execs, execs, carol, map[string]any{"yaml": "pipeline:\n  name: x\n  identifier: x\n  stages: []\n  bogus: 1\n"})
	if code != 422 || len(out["details"].([]any)) == 0 {
		t.Errorf("invalid pipeline: %d %v", code, out)
	}
	if code, _ := c.call("GET", execs+"/nope-1", execs+"/{id}", carol, nil); code != 404 {
		t.Errorf("unknown execution: %d", code)
	}

	// carol starts a pipeline that needs two approvals and excludes its executor.
	code, out = c.call("POST", execs, execs, carol, map[string]any{"yaml": approvalPipeline("api_gate", "", "")})
	if code != 201 {
		t.Fatalf("start: %d %v", code, out)
	}
	id := out["executionId"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, ctx, env.starter, id, "gate.gate", status.ApprovalWaiting)
	// Pending reads Temporal visibility, which follows the search attributes a moment later.
	for {
		code, out = c.call("GET", "/api/v1/pending", "/api/v1/pending", dev, nil)
		if code == 200 && strings.Contains(fmt.Sprint(out["pending"]), id) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pending never listed %s: %d %v", id, code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	approve := execs + "/" + id + "/approve"
	pattern := execs + "/{id}/approve"
	vote := map[string]any{"path": "gate.gate", "inputs": map[string]string{"ticket": "CHG7"}}
	for _, tc := range []struct {
		who  string
		tok  string
		want int
	}{
		{"outside the groups", dev, 403},
		{"the executor", carol, 403},
		{"alice", alice, 200},
		{"alice again (replayed vote)", alice, 409},
	} {
		if code, out := c.call("POST", approve, pattern, tc.tok, vote); code != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.who, code, out, tc.want)
		}
	}
	if code, out := c.call("POST", approve, pattern, bob, map[string]any{"path": "gate.gate", "inputs": map[string]string{"nope": "x"}}); code != 422 {
		t.Errorf("undeclared input: %d %v", code, out)
	}
	if code, out := c.call("POST", approve, pattern, bob, vote); code != 200 {
		t.Fatalf("bob: %d %v", code, out)
	}
	res, err := env.starter.Result(ctx, id)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	acts := res.Tree.Find("gate.gate").Outputs["approvalActivities"].([]any)
	if len(acts) != 2 || fmt.Sprint(acts[0].(map[string]any)["user"]) != "map[email:alice@example.com name:alice]" {
		t.Errorf("activities %v", acts)
	}
	code, out = c.call("GET", execs+"/"+id, execs+"/{id}", dev, nil)
	if code != 200 || out["status"] != "SUCCEEDED" {
		t.Errorf("tree: %d %v", code, out["status"])
	}
	// The list uses the API's camelCase names (issue 18); visibility follows a moment later.
	for {
		code, out = c.call("GET", execs+"?pipeline=api_gate", execs, dev, nil)
		list, _ := out["executions"].([]any)
		if code == 200 && len(list) > 0 {
			e := list[0].(map[string]any)
			if e["executionId"] == id && e["pipeline"] == "api_gate" && e["status"] == "SUCCEEDED" && e["startedAt"] != nil && e["endedAt"] != nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("list never showed %s as SUCCEEDED with camelCase fields: %d %v", id, code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := c.call("POST", approve, pattern, bob, vote); code != 404 && code != 409 {
		t.Errorf("vote after the end: %d", code)
	}
	if code, _ := c.call("POST", execs+"/"+id+"/abort", execs+"/{id}/abort", bob, map[string]any{}); code != 404 {
		t.Errorf("abort of a finished execution: %d", code)
	}
}

// openAPIPaths reads the operations of the server's OpenAPI document.
func openAPIPaths(t testing.TB) map[string]map[string]map[string]any {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Paths
}
