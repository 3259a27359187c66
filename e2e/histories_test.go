package e2e

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gantry-cd/gantry/activities/records"
	"github.com/gantry-cd/gantry/activities/terraform"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

var updateHistories = flag.Bool("update-histories", false, "record the example pipelines' histories into workflows/testdata/histories")

// TestRecordHistories records the histories the workflow replay test replays. Run it with
// -update-histories only for a deliberate, versioned change of workflow behaviour: the point
// of the recorded files is that they come from the code that is already in users' hands.
func TestRecordHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	sources := map[string][]byte{}
	for _, file := range []string{"02-build-test-deploy.yaml", "03-parallel-stages.yaml", "04-step-groups.yaml", "12-conditional.yaml"} {
		path := filepath.Join("..", "examples", file)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sources[path] = src
	}
	// Failure handling: rollback, retry, step-group rollback, pipeline rollback, timeouts.
	for _, c := range conformance.Failures(t.TempDir()) {
		switch c.ID {
		case "C21", "C26", "C39", "C41", "stage-timeout":
			sources[c.ID+".yaml"] = []byte(c.YAML)
		}
	}
	// Matrix and repeat loops (stage and step), a batched loop, barriers.
	for _, c := range append(conformance.Loops(t.TempDir()), conformance.Barriers()...) {
		switch c.ID {
		case "C53", "C54", "batched-loop", "group-loop", "C56":
			sources[c.ID+".yaml"] = []byte(c.YAML)
		}
	}
	// The fast path: local activities, retried and parallel ones, a flush after 1 s of steps,
	// next to a regular activity.
	sources["fastpath.yaml"] = []byte(fastPathPipeline)
	// Plan nodes that carry their step types' traits (the step catalog), beside the histories
	// recorded before, whose nodes have none.
	sources["traits.yaml"] = []byte(traitsRecordPipeline)
	for _, path := range sortedKeys(sources) {
		exec, _ := runPlan(t, env.starter, compile(t, path, sources[path], load.Options{}))
		recordExecution(t, out, exec.ID)
	}
	// An approval: two votes from release managers, with approver inputs. gate_memo comes
	// from after changeQuietWaiting and changePendingMemo (the first vote is reported to the
	// pipeline's memo; the stage ends without a signal saying nothing waits).
	ctx := context.Background()
	for _, id := range []string{"gate_record", "gate_memo"} {
		exec, err := env.starter.Start(ctx, compile(t, "approval.yaml", []byte(approvalPipeline(id, "", "")), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, env.starter, exec.ID, "gate.gate", status.ApprovalWaiting)
		for _, u := range []string{"ann", "bob"} {
			if _, err := env.starter.Approve(ctx, exec.ID, workflows.ApprovalRequest{Path: "gate.gate", Action: "APPROVE", User: u, Groups: []string{"release_managers"}, Inputs: map[string]string{"ticket": "CHG-1"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := env.starter.Result(ctx, exec.ID); err != nil {
			t.Fatal(err)
		}
		recordExecution(t, out, exec.ID)
	}
	// A manual intervention decided by a user (the stage settles its signals before it ends),
	// before and after changeQuietWaiting and changePendingMemo.
	for _, id := range []string{"intervened_record", "intervened_memo"} {
		iv, err := env.starter.Start(ctx, compile(t, "intervened.yaml", []byte(stressPipeline(id)), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, env.starter, iv.ID, "s1.a", status.InterventionWaiting)
		if _, err := env.starter.Intervene(ctx, iv.ID, workflows.InterventionRequest{Path: "s1.a", Action: "MarkAsFailure", User: "ops"}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.starter.Result(ctx, iv.ID); err != nil {
			t.Fatal(err)
		}
		recordExecution(t, out, iv.ID)
	}
	// Loops in batches (two iterations per batch here): a stage loop in stage batch workflows
	// and a step loop in batches, both meeting barriers with other stages.
	bt, err := env.starter.Start(ctx, compile(t, "batches.yaml", []byte(batchesRecordPipeline), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{LoopBatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, bt.ID); err != nil || res.Status != status.Succeeded {
		t.Fatalf("batches: %v %v", res, err)
	}
	recordExecution(t, out, bt.ID)
	// Temporal's own outcome (changeOutcomeStatus): a failed pipeline and its stage close
	// Failed, an aborted one and its stage close Canceled, both with their results as details.
	failedRun, _ := runPlan(t, env.starter, compile(t, "outcome_failed.yaml", []byte(outcomeFailedPipeline), load.Options{}))
	recordExecution(t, out, failedRun.ID)
	ab, err := env.starter.Start(ctx, compile(t, "outcome_aborted.yaml", []byte(approvalPipeline("outcome_aborted", "", "")), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, env.starter, ab.ID, "gate.gate", status.ApprovalWaiting)
	if err := env.starter.Abort(ctx, ab.ID, "ops", "recorded"); err != nil {
		t.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, ab.ID); err != nil || res.Status != status.Aborted {
		t.Fatalf("aborted: %v %v", res, err)
	}
	recordExecution(t, out, ab.ID)
	// A Deployment stage on a real cluster: a rolling deploy, then a failed one rolled back.
	dir := k8sExample(t, "record")
	file := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(file, []byte(devPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sets := range [][]string{{"pipeline.variables.tag=1.27"}, {"pipeline.variables.tag=1.28", "pipeline.variables.zone=nowhere"}} {
		r, err := load.File(file, load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v", err)
		}
		exec, _ := runPlan(t, env.starter, r.Plan)
		recordExecution(t, out, exec.ID)
	}
	// The same stage with its manifests in Git (changeGitManifests) and with its artifact
	// resolved through a registry (changeArtifactDigest), each as a pipeline of its own.
	for id, setup := range map[string]func(*testing.T, string){
		"web_git":      func(t *testing.T, dir string) { gitService(t, dir) },
		"web_registry": func(t *testing.T, dir string) { registryService(t, dir) },
	} {
		dir := k8sExample(t, "record-"+strings.TrimPrefix(id, "web_"))
		setup(t, dir)
		p := loadDev(t, dir)
		p.Identifier = id
		exec, _ := runPlan(t, env.starter, p)
		recordExecution(t, out, exec.ID)
	}
	// A chart pulled from a chart repository (FetchChart), K8sApply steps with their own
	// manifestSource (changeStepManifests), and a NativeHelm release deployed and rolled back.
	dir = k8sExample(t, "record-chart")
	httpChartService(t, dir)
	p := loadDev(t, dir)
	p.Identifier = "web_chart"
	exec, _ := runPlan(t, env.starter, p)
	recordExecution(t, out, exec.ID)
	p, _ = sourcePipeline(t, k8sExample(t, "record-source"))
	p.Identifier = "web_source"
	exec, _ = runPlan(t, env.starter, p)
	recordExecution(t, out, exec.ID)
	dir = k8sExample(t, "record-helm")
	for _, sets := range [][]string{nil, {"pipeline.variables.smoke=fail"}} {
		r, err := load.File(filepath.Join(dir, "helm.yaml"), load.Options{ForRun: true, Sets: sets})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v", err)
		}
		exec, _ := runPlan(t, env.starter, r.Plan)
		recordExecution(t, out, exec.ID)
	}
}

// TestRecordKeyedHistories records the histories of keyed starts that took a number ahead
// (changeBindKey): one records its key and runs, a repeat of the key from another starter
// finds it taken and ends SKIPPED. Run it alone with -update-histories to record only these.
func TestRecordKeyedHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx := context.Background()
	out := filepath.Join("..", "workflows", "testdata", "histories")
	p := compile(t, "keyed.yaml", []byte(conformance.Progression(1)[0].YAML), load.Options{})
	p.Identifier = "keyed_record"
	trig := workflows.Trigger{Type: "WEBHOOK", User: "hook"}
	for _, key := range []string{"delivery/Github/t/record-1", "delivery/Github/t/record-1"} {
		s := &starter.Starter{Client: env.client, Internal: env.internal}
		if _, err := s.Start(ctx, p, trig, workflows.Settings{}); err != nil { // takes numbers ahead
			t.Fatal(err)
		}
		exec, started, err := s.StartOnce(ctx, key, p, trig, workflows.Settings{})
		if err != nil || !started {
			t.Fatalf("keyed start: %v %v", started, err)
		}
		if _, err := s.Result(ctx, exec.ID); err != nil {
			t.Fatal(err)
		}
		recordExecution(t, out, exec.ID)
		s.Close(ctx)
	}
}

// recordExecution records the history of an execution's pipeline workflow and of every
// workflow it started (stages, rollback stages, loop batches): their IDs begin with its own.
func recordExecution(t *testing.T, out, id string) {
	t.Helper()
	ids := []string{id}
	var token []byte
	for {
		resp, err := env.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId STARTS_WITH '%s/'", id), NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Executions {
			ids = append(ids, e.Execution.WorkflowId)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	for _, id := range ids {
		writeHistory(t, id, filepath.Join(out, strings.ReplaceAll(id, "/", "__")+".json"))
	}
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeHistory records an execution's history, keeping a file that exists: histories from
// older code are what guard in-flight executions.
func writeHistory(t *testing.T, id, path string) {
	t.Helper()
	writeRunHistory(t, id, "", path)
}

// writeRunHistory records one run of a workflow ("" for the latest) unless path exists.
func writeRunHistory(t *testing.T, id, runID, path string) {
	t.Helper()
	writeClientHistory(t, env.client, id, runID, path)
}

// writeClientHistory is writeRunHistory in the namespace of client c.
func writeClientHistory(t *testing.T, c client.Client, id, runID, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	h := &historypb.History{}
	iter := c.GetWorkflowHistory(context.Background(), id, runID, false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

//go:embed testdata/pipelines/outcome_failed.yaml
var outcomeFailedPipeline string

//go:embed testdata/pipelines/fastpath.yaml
var fastPathPipeline string

//go:embed testdata/pipelines/batches_record.yaml
var batchesRecordPipeline string

// TestRecordRefusalsHistory records the Refusals workflow (issue 54) holding two refusals.
func TestRecordRefusalsHistory(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx := context.Background()
	for _, action := range []string{"abort", "start"} {
		if err := env.starter.RecordRefusal(ctx, workflows.AuditRecord{Time: time.Now(), User: "dev", Action: action, Outcome: "refused", Detail: "recorded"}); err != nil {
			t.Fatal(err)
		}
	}
	writeClientHistory(t, env.internal, workflows.RefusalsID, "", filepath.Join("..", "workflows", "testdata", "histories", workflows.RefusalsID+".json"))
}

// TestRecordNotificationHistories records an execution with notification rules
// (changeNotifications): stage, step and pipeline events handed to its notifier, whose own
// history (retries included) is recorded once it is done.
func TestRecordNotificationHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	h := newHooks(t, func(path string, n int) int {
		if path == "/flaky" && n == 1 {
			return 503
		}
		return 200
	})
	src := `pipeline:
  name: notify record
  identifier: notify_record
  notificationRules:
    - {name: all, identifier: all, enabled: true, pipelineEvents: [{type: AllEvents}], notificationMethod: {type: Webhook, spec: {webhookUrl: "` + h.srv.URL + `/all"}}}
    - {name: flaky, identifier: flaky, enabled: true, pipelineEvents: [{type: PipelineEnd}], notificationMethod: {type: Webhook, spec: {webhookUrl: "` + h.srv.URL + `/flaky"}}}
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: ShellScript
                  name: compile
                  identifier: compile
                  timeout: 1m
                  spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 3"}}}
                  failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: Ignore}}}]
              - step: {type: ShellScript, name: test, identifier: test, timeout: 1m, spec: {shell: Bash, source: {type: Inline, spec: {script: "exit 1"}}}}
`
	ctx := context.Background()
	// notify_ordered comes from after changeNotifyOrder.
	for _, id := range []string{"notify_record", "notify_ordered"} {
		yaml := strings.Replace(src, "identifier: notify_record", "identifier: "+id, 1)
		exec, err := env.starter.Start(ctx, compile(t, id+".yaml", []byte(yaml), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "dev"},
			workflows.Settings{Notify: workflows.NotifySettings{FirstRetry: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.starter.Result(ctx, exec.ID); err != nil {
			t.Fatal(err)
		}
		deliveries(t, env.starter, exec.ID)
		recordExecution(t, out, exec.ID)
	}
}

//go:embed testdata/pipelines/traits_record.yaml
var traitsRecordPipeline string

// TestRecordProvisionerHistory records a Provisioner workflow (issue 55) holding a plan and an
// applied configuration, queried in between.
func TestRecordProvisionerHistory(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx := context.Background()
	rec := terraform.TemporalRecords{Temporal: records.Temporal{Client: env.internal, TaskQueue: workflows.SequenceQueue(workflows.TaskQueue)}}
	for _, kind := range []string{contract.RecordKindPlan, contract.RecordKindApplied} {
		if err := rec.Record(ctx, "default/recorded", "infra", contract.ProvisionerRecord{Kind: kind, Execution: "recorded-1", Step: "s." + kind, Time: time.Now(), Sealed: []byte("sealed")}); err != nil {
			t.Fatal(err)
		}
		if r, err := rec.Find(ctx, "default/recorded", "infra", contract.ProvisionerQuery{Kinds: []string{kind}}); err != nil || r == nil {
			t.Fatalf("find %s: %v, %v", kind, r, err)
		}
	}
	id := contract.ProvisionerID("default/recorded", "infra")
	writeClientHistory(t, env.internal, id, "", filepath.Join("..", "workflows", "testdata", "histories", strings.ReplaceAll(id, "/", "__")+".json"))
}

// TestRecordFlowControlHistories records the flow controls' workflows: a Queue step held for
// the whole execution, a deployment refused by the global freeze, a chained pipeline (parent,
// its Pipeline stage and the child), and the lock and freeze workflows themselves, from the
// internal namespace. With -update-histories, TestResourceConstraintOneDeploymentAtATime
// records a held and a waiting resource constraint.
func TestRecordFlowControlHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	out := filepath.Join("..", "workflows", "testdata", "histories")
	ctx := context.Background()
	r := newLockRig(t, false)
	q := r.start(t, r.queuePipeline(t, "queue_record", "record_queue", "Pipeline"))
	r.open(t, q.ID)
	succeeded(t, q.ID)
	recordExecution(t, out, q.ID)

	if _, err := env.starter.FreezeOn(ctx, "ops", "recorded"); err != nil {
		t.Fatal(err)
	}
	fz := r.start(t, r.deployPipeline(t, "freeze_record", false))
	res, err := env.starter.Result(ctx, fz.ID)
	if _, offErr := env.starter.FreezeOff(ctx, "ops"); offErr != nil {
		t.Fatal(offErr)
	}
	if err != nil || res.Status != status.FreezeFailed {
		t.Fatalf("frozen: %v %v", res, err)
	}
	recordExecution(t, out, fz.ID)

	exec, err := env.starter.Start(ctx, loadRun(t, chainFiles(t, "chain_record", 0)), workflows.Trigger{Type: "MANUAL", User: "ann"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = env.starter.Result(ctx, exec.ID); err != nil || res.Status != status.Succeeded {
		t.Fatalf("chained: %v %v", res, err)
	}
	recordExecution(t, out, exec.ID)
	recordExecution(t, out, res.Tree.Find("team.chain_record_child").Chained.ExecutionID)

	// The infrastructure's lock, with a holder and a waiter to hand over to.
	a := r.start(t, r.deployPipeline(t, "lock_first", true))
	r.waitMark(t, "start", a.ID)
	b := r.start(t, r.deployPipeline(t, "lock_second", true))
	waitNode(t, b.ID, "deploy", func(n *workflows.Node) bool { return n.Status == status.ResourceWaiting })
	r.open(t, a.ID)
	r.open(t, b.ID)
	succeeded(t, a.ID, b.ID)

	resp, err := env.internal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowId STARTS_WITH 'gantry-lock/' OR WorkflowId STARTS_WITH 'gantry-freeze/'"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Executions {
		id := e.Execution.WorkflowId
		writeClientHistory(t, env.internal, id, e.Execution.RunId, filepath.Join(out, strings.ReplaceAll(id, "/", "__")+".json"))
	}
}
