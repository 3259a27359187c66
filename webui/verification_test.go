package webui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
	"github.com/gantry-cd/gantry/workflows/verification"
)

// A Verify step's page plots each metric's test and control series, with the verdict and the
// reason; another step, or none, is a 404.
func TestVerificationPage(t *testing.T) {
	outcome := workflows.VerifyOutcome{Type: "Canary", Monitored: "web_prod", Sensitivity: verification.Medium, Minutes: 2, Analysed: 2,
		Result: verification.Result{Verdict: verification.Failed, Reason: "metric Errors (errors) of prom regressed", Metrics: []verification.MetricResult{{
			Source: "prom", ID: "errors", Name: "Errors", Compared: "canary", Verdict: verification.Failed, Reason: "higher than the control",
			Test: verification.Summary{N: 3, Median: 3}, Control: verification.Summary{N: 3, Median: 1}, P: 0.0004, ChangeText: "+200.0%",
			TestSeries: [][2]float64{{0, 3}, {15, 3.1}, {30, 2.9}}, ControlSeries: [][2]float64{{0, 1}, {15, 1.1}, {30, 0.9}},
			TestInstances: []string{"web-canary"}, ControlInstances: []string{"web-old"}}}}}
	raw, _ := json.Marshal(outcome)
	var outputs map[string]any
	_ = json.Unmarshal(raw, &outputs)
	tree := &workflows.Node{Kind: "pipeline", Status: status.Failed, Children: []*workflows.Node{{Path: "deploy", Kind: "stage", Status: status.Failed,
		Children: []*workflows.Node{
			{Path: "deploy.verify", Kind: "step", Type: "Verify", Status: status.Failed, Outputs: outputs},
			{Path: "deploy.echo", Kind: "step", Type: "ShellScript", Status: status.Succeeded}}}}}
	read := func(_ context.Context, id string) (*workflows.Node, error) {
		if id != "web-1" {
			return nil, starter.ErrNotFound
		}
		return tree, nil
	}
	users := func(token string) (*identity.User, error) { return &identity.User{Name: "ann"}, nil }
	srv := httptest.NewServer(executionPage(&pages{}, &sharedTrees{read: read, fresh: time.Minute}, users, nil, "default"))
	defer srv.Close()
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: codec.TokenCookie, Value: "good"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(ExecutionsPath + "/web-1?verification=deploy.verify")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{`id="verdict" class="Failed">Failed`, "metric Errors (errors) of prom regressed", "median 1 → 3 (&#43;200.0%)",
		`<polyline class="control" points="0.0,127.2 140.0,121.9 280.0,132.5"/>`, `<polyline class="test" points="0.0,21.6 `, "test: web-canary"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("an ended step's page reloads itself")
	}
	if code, _ := get(ExecutionsPath + "/web-1?verification=deploy.echo"); code != http.StatusNotFound {
		t.Errorf("a ShellScript step's verification page: %d", code)
	}
}
