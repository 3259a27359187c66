package e2e

import (
	"context"
	_ "embed"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/policies"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
)

func policyPipeline(id, variable string) string {
	return `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  timeout: 1h
  tags: {owner: ana, team: payments}
  variables:
` + variable + `
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: exit 0}}}}
`
}

// On run, through the API: a denied pipeline never starts a workflow; a warned one runs and
// carries the warning on its execution.
func TestOnRunPolicies(t *testing.T) {
	engine, err := policies.Load(context.Background(), "../policies/library")
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	d := &identity.Directory{}
	tok, _ := d.AddUser("ana", "", nil)
	d.Save(idFile)
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile, Policies: engine}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, spec: openAPIPaths(t)}

	denied := policyPipeline("denied_run", `    - {name: db_password, type: String, value: hunter2}`)
	code, out := c.call("POST", "/api/v1/executions", "/api/v1/executions", tok, map[string]any{"yaml": denied})
	if code != 422 || out["code"] != "policy-denied" || !strings.Contains(toJSON(out["details"]), "no_plaintext_secrets") {
		t.Fatalf("denied: %d %v", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// No sequence number was even taken: the pipeline's sequence workflow does not exist.
	if _, err := env.client.DescribeWorkflowExecution(ctx, "gantry-sequence-denied_run", ""); err == nil {
		t.Error("a denied pipeline took a sequence number")
	}

	warned := strings.Replace(policyPipeline("warned_run", `    - {name: region, type: String, value: eu}`), "  tags: {owner: ana, team: payments}\n", "", 1)
	code, out = c.call("POST", "/api/v1/executions", "/api/v1/executions", tok, map[string]any{"yaml": warned})
	if code != 201 {
		t.Fatalf("warned: %d %v", code, out)
	}
	res, err := env.starter.Result(ctx, out["executionId"].(string))
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("%+v %v", res, err)
	}
	if p := res.Tree.Policy; p == nil || p.Status != "warning" || !strings.Contains(strings.Join(p.Messages, "\n"), "required_tags") {
		t.Errorf("recorded policy %+v", p)
	}
}

// A Policy step evaluates its payload; a deny fails it with PolicyEvaluationFailure, which its
// failure strategy handles.
func TestPolicyStep(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "replicas.rego"), []byte(`package gantry.max_replicas
import rego.v1
deny contains sprintf("%d replicas is more than 10", [input.replicas]) if input.replicas > 10
`), 0o600)
	os.WriteFile(filepath.Join(dir, "sets.yaml"), []byte("policySets:\n  - {identifier: capacity, severity: error, action: custom, policies: [max_replicas]}\n"), 0o600)
	engine, err := policies.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	const queue = "policy-test"
	w := worker.New(env.client, worker.Options{TaskQueue: queue, Logs: logs.Store{Dir: t.TempDir()}, Policies: engine, Internal: env.internal})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	src := policyStepPipeline
	_, res := runPlan(t, s, compile(t, "policy.yaml", []byte(src), load.Options{}))
	conformance.Check(t, res.Tree, map[string]status.Status{"s.small": status.Succeeded, "s.big": status.IgnoreFailed})
	if got := res.Tree.Find("s.small").Outputs["status"]; got != "pass" {
		t.Errorf("small status %v", got)
	}
	if f := res.Tree.Find("s.big").Failure; f == nil || f.Category != "PolicyEvaluationFailure" || !strings.Contains(f.Message, "20 replicas") {
		t.Errorf("big failure %+v", f)
	}
	// A payload written as a mapping is evaluated as one; a denied step keeps its outputs and
	// says which strategy action settled it.
	mapped := res.Tree.Find("s.mapped")
	if mapped.Status != status.IgnoreFailed || mapped.Failure == nil || !strings.Contains(mapped.Failure.Message, "30 replicas") {
		t.Errorf("mapped: %s %+v", mapped.Status, mapped.Failure)
	}
	if mapped.Outputs["status"] != "error" || mapped.Strategy == nil || mapped.Strategy.Action != "Ignore" {
		t.Errorf("mapped outputs %v, strategy %+v", mapped.Outputs, mapped.Strategy)
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/policy_step.yaml
var policyStepPipeline string
