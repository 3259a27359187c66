package e2e

import (
	"context"
	_ "embed"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

func TestConformanceProgression(t *testing.T) {
	for _, c := range conformance.Progression(1) {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			_, res := runPlan(t, env.starter, compile(t, c.ID+".yaml", []byte(c.YAML), load.Options{}))
			conformance.Check(t, res.Tree, c.Want)
		})
	}
}

func TestExamples(t *testing.T) {
	cases := []struct {
		file string
		opts load.Options
	}{
		{"01-hello.yaml", load.Options{}},
		{"02-build-test-deploy.yaml", load.Options{}},
		{"03-parallel-stages.yaml", load.Options{}},
		{"04-step-groups.yaml", load.Options{}},
		{"05-matrix.yaml", load.Options{}},
		{"06-repeat.yaml", load.Options{}},
		{"09-barriers.yaml", load.Options{}},
		{"11-runtime-inputs.yaml", load.Options{InputSets: []string{"../examples/inputsets/prod-hotfix.yaml"},
			// The execution-time input is answered up front here (TestExecutionInputs* ask at run time).
			Sets: []string{"pipeline.stages.deploy.spec.execution.steps.confirm.spec.environmentVariables.WHO=me"}}},
		{"12-conditional.yaml", load.Options{}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("..", "examples", c.file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			exec, res := runPlan(t, env.starter, compile(t, path, src, c.opts))
			if res.Status != status.Succeeded {
				t.Errorf("%s: %s", exec.ID, res.Status)
				res.Tree.Walk(func(n *workflows.Node) {
					if n.Failure != nil {
						t.Logf("%s: %s %+v", n.Path, n.Status, n.Failure)
					}
				})
			}
		})
	}
}

func TestShellOutputsLogsAndSecretMasking(t *testing.T) {
	t.Setenv(secrets.EnvName("db_password"), "hunter2-very-secret")
	src := secretsDemoPipeline
	exec, res := runPlan(t, env.starter, compile(t, "secrets.yaml", []byte(src), load.Options{}))
	n := res.Tree.Find("s.use")
	if res.Status != status.Succeeded {
		t.Fatalf("%s %+v", res.Status, n.Failure)
	}
	outs := n.Outputs["outputVariables"].(map[string]any)
	if outs["len"] != "19" || outs["copy"] != secrets.Mask {
		t.Errorf("outputs %v", outs)
	}
	var b strings.Builder
	if err := env.logs.Copy(context.Background(), &b, exec.ID, "s.use"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "hunter2") || !strings.Contains(b.String(), "password is "+secrets.Mask) || !strings.Contains(b.String(), "inline "+secrets.Mask) {
		t.Errorf("log not masked:\n%s", b.String())
	}
	// Nor is the secret in the execution's history.
	ctx := context.Background()
	iter := env.client.GetWorkflowHistory(ctx, exec.ID, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.String(), "hunter2") {
			t.Fatalf("secret in history event %d (%s)", ev.GetEventId(), ev.GetEventType())
		}
	}
}

func TestHttpStep(t *testing.T) {
	t.Setenv(secrets.EnvName("api_token"), "tok-123456")
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			gotAuth = r.Header.Get("Authorization")
			w.Write([]byte(`{"status":"ok","build":{"id":"b-42"}}`))
		default:
			w.WriteHeader(503)
			w.Write([]byte(`{"status":"down"}`))
		}
	}))
	defer srv.Close()
	src := `pipeline:
  name: http
  identifier: http_demo
  variables:
    - {name: base, type: String, value: "` + srv.URL + `"}
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: Http
                  name: health
                  identifier: health
                  timeout: 10s
                  spec:
                    url: <+pipeline.variables.base>/health
                    method: GET
                    headers:
                      - {key: Authorization, value: Bearer <+secrets.getValue("api_token")>}
                    assertion: <+httpResponseCode> == 200 && <+json.select("status", httpResponseBody)> == "ok"
                    outputVariables:
                      - {name: buildId, type: String, value: '<+json.select("build.id", httpResponseBody)>'}
              - step:
                  type: ShellScript
                  name: use
                  identifier: use
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: "B=<+execution.steps.health.output.outputVariables.buildId>-<+execution.steps.health.output.httpResponseCode>"}}
                    outputVariables:
                      - {name: b, type: String, value: B}
              - step:
                  type: Http
                  name: down
                  identifier: down
                  timeout: 10s
                  spec:
                    url: <+pipeline.variables.base>/down
                    method: GET
                    assertion: <+httpResponseCode> == 200
              - step:
                  type: Http
                  name: nothing listens
                  identifier: refused
                  timeout: 10s
                  when: {stageStatus: All}
                  spec:
                    url: http://127.0.0.1:1/
                    method: GET
`
	_, res := runPlan(t, env.starter, compile(t, "http.yaml", []byte(src), load.Options{}))
	conformance.Check(t, res.Tree, map[string]status.Status{"s.health": status.Succeeded, "s.use": status.Succeeded, "s.down": status.Failed, "s.refused": status.Failed, "": status.Failed})
	if got := res.Tree.Find("s.use").Outputs["outputVariables"].(map[string]any)["b"]; got != "b-42-200" {
		t.Errorf("use output %q", got)
	}
	if gotAuth != "Bearer tok-123456" {
		t.Errorf("Authorization %q", gotAuth)
	}
	if f := res.Tree.Find("s.down").Failure; f == nil || f.Category != "Unknown" || !strings.Contains(f.Message, "assertion failed") {
		t.Errorf("down failure %+v", f)
	}
	if f := res.Tree.Find("s.refused").Failure; f == nil || f.Category != "Connectivity" {
		t.Errorf("refused failure %+v", f)
	}
}

func TestLiveTreeAndSearchAttributes(t *testing.T) {
	src := liveTreePipeline + filepath.Join(t.TempDir(), "go") + `"}]}}
`
	p := compile(t, "live.yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	goFile := p.Stages[0].Children[1].Spec.(map[string]any)["environmentVariables"].([]any)[0].(map[string]any)["value"].(string)
	// Poll until step b runs: the live tree comes from the running stage's own workflow.
	var tree *workflows.Node
	for {
		tree, err = env.starter.Tree(ctx, exec.ID)
		if err == nil && tree.Find("s.b") != nil && tree.Find("s.b").Status == status.Running {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("step b never showed RUNNING: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conformance.Check(t, tree, map[string]status.Status{"": status.Running, "s": status.Running, "s.a": status.Succeeded, "s.b": status.Running})
	list, err := env.starter.List(ctx, "live_tree", 10)
	if err != nil || len(list) == 0 || list[0].ID != exec.ID || list[0].Status != "RUNNING" {
		t.Errorf("list while running: %+v %v", list, err)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := env.starter.Result(ctx, exec.ID)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("result %+v %v", res, err)
	}
	// Visibility is eventually consistent: wait for the final status attribute.
	for {
		list, err = env.starter.List(ctx, "live_tree", 10)
		if err == nil && len(list) > 0 && list[0].Status == "SUCCEEDED" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("status attribute never became SUCCEEDED: %+v %v", list, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	desc, err := env.client.DescribeWorkflowExecution(ctx, exec.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(desc.GetExecutionConfig().GetUserMetadata().GetSummary().String(), "live") {
		t.Errorf("no static summary: %v", desc.GetExecutionConfig().GetUserMetadata())
	}
}

// The sequence number survives a restart of the embedded server on the same data directory,
// without a gap when the starter closes before it.
func TestSequenceIDSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p := compile(t, "c01.yaml", []byte(conformance.Progression(1)[0].YAML), load.Options{})
	var last int64
	for round := 0; round < 2; round++ {
		srv, c, err := startServer(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, worker.Options{Logs: logs.Store{Dir: t.TempDir()}})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		s := &starter.Starter{Client: c}
		for i := 0; i < 2; i++ {
			exec, res := runPlan(t, s, p)
			if exec.SequenceID != last+1 || res.Status != status.Succeeded {
				t.Errorf("round %d: sequence %d (want %d), status %s", round, exec.SequenceID, last+1, res.Status)
			}
			last = exec.SequenceID
		}
		s.Close(context.Background()) // gives back the numbers taken ahead: no gap
		w.Stop()
		c.Close()
		srv.Stop()
	}
}

// Steps of different step groups may share an identifier (spec 1.8 revised, issue 50): each runs
// as its own node with its own log and outputs, and a full path reaches each.
func TestSameStepIdentifierInTwoGroups(t *testing.T) {
	group := func(id, word string) string {
		return `              - stepGroup:
                  name: ` + id + `
                  identifier: ` + id + `
                  steps:
                    - step:
                        type: ShellScript
                        name: probe
                        identifier: probe
                        spec:
                          shell: Bash
                          source: {type: Inline, spec: {script: "WORD=` + word + `; echo probing ` + word + `"}}
                          outputVariables: [{name: word, type: String, value: WORD}]
`
	}
	src := twinsPipeline + group("canary", "first") + group("prod", "second") + `              - step:
                  type: ShellScript
                  name: report
                  identifier: report
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: |
                          BOTH="<+execution.steps.canary.steps.probe.output.outputVariables.word>+<+pipeline.stages.s.spec.execution.steps.prod.steps.probe.output.outputVariables.word>"
                    outputVariables: [{name: both, type: String, value: BOTH}]
`
	exec, res := runPlan(t, env.starter, compile(t, "twins.yaml", []byte(src), load.Options{}))
	if res.Status != status.Succeeded {
		t.Fatalf("%s: %s", exec.ID, res.Status)
	}
	for path, word := range map[string]string{"s.canary.probe": "first", "s.prod.probe": "second"} {
		n := res.Tree.Find(path)
		if n == nil || n.Status != status.Succeeded || n.Outputs["outputVariables"].(map[string]any)["word"] != word {
			t.Errorf("%s: %+v", path, n)
			continue
		}
		var b strings.Builder
		if err := env.logs.Copy(context.Background(), &b, exec.ID, path); err != nil || !strings.Contains(b.String(), "probing "+word) {
			t.Errorf("%s: log %q (%v)", path, b.String(), err)
		}
	}
	if got := res.Tree.Find("s.report").Outputs["outputVariables"].(map[string]any)["both"]; got != "first+second" {
		t.Errorf("report read %v", got)
	}

	// A relative reference that both steps match fails the step that evaluates it.
	ambiguous := strings.Replace(src, "<+execution.steps.canary.steps.probe.output", "<+execution.steps.probe.output", 1)
	exec, res = runPlan(t, env.starter, compile(t, "twins.yaml", []byte(ambiguous), load.Options{}))
	n := res.Tree.Find("s.report")
	if res.Status != status.Failed || n == nil || n.Failure == nil || !strings.Contains(n.Failure.Message, "matches 2 steps in different step groups") {
		t.Fatalf("%s: %s, report %+v", exec.ID, res.Status, n)
	}
}

// Pipelines of the tests above.

//go:embed testdata/pipelines/secrets_demo.yaml
var secretsDemoPipeline string

//go:embed testdata/pipelines/live_tree.yaml
var liveTreePipeline string

//go:embed testdata/pipelines/twins.yaml
var twinsPipeline string
