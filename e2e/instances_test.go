package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/internal/conformance"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// The instance sync on the test control plane: deploy 1.27 then 1.28 and the sync reads two
// ready pods of 1.28 on their nodes; scale the Deployment by hand and the next read counts
// three and says it was scaled outside Gantry; change its image by hand and the drift names
// it; the API lists the instances; delete the Deployment and the sync ends, taking the target
// off the listing while its deployments stay in the ledger.
func TestInstancesFollowTheCluster(t *testing.T) {
	_, cs := cluster(t)
	file := devExample(t, "e2e-instances", "dev_instances")
	for _, tag := range []string{"1.27", "1.28"} {
		r, err := load.File(file, load.Options{ForRun: true, Sets: []string{"pipeline.variables.tag=" + tag}})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
		}
		_, res := runPlan(t, env.starter, r.Plan)
		conformance.Check(t, res.Tree, map[string]status.Status{"deploy_dev": status.Succeeded})
	}
	const ns = "e2e-instances-dev"
	key := contract.DeploymentKey{Project: "default/default", Service: "web", Environment: "dev", Infra: "dev_instances"}
	ctx := context.Background()
	lv := env.starter.Ledger()
	f := ledger.Filter{Service: "web", Infra: "dev_instances"}
	read := readings(t, key)
	s := read("two pods of 1.28", false, func(s contract.InstanceSnapshot) bool {
		return s.Count == 2 && s.Ready == 2 && len(s.Artifacts) == 1 && s.Artifacts[0].Artifact == "library/nginx:1.28"
	})
	if len(s.Drift) != 0 || s.Error != "" || s.Version != "1.28" || len(s.Instances) != 2 || s.Instances[0].Node == "" || !strings.HasPrefix(s.Instances[0].Name, "web-") {
		t.Errorf("reading after 1.28: %+v", s)
	}

	// Scaled by hand: counted at the sweep's next read, and said.
	patch := func(body string) {
		t.Helper()
		if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"spec":{"replicas":3}}`)
	s = read("three pods, scaled outside Gantry", true, func(s contract.InstanceSnapshot) bool { return s.Count == 3 && len(s.Drift) == 1 })
	if !strings.Contains(s.Drift[0], "Deployment web was scaled to 3 outside Gantry; it was deployed with 2") {
		t.Errorf("drift %q", s.Drift)
	}
	// Its image changed by hand: the drift names both.
	patch(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"library/nginx:1.29-hotfix"}]}}}}`)
	rolledOut(t, cs, ns, "web", 3) // the cluster at rest before the readings compared below
	s = read("an image changed by hand, rolled out", true, func(s contract.InstanceSnapshot) bool {
		return len(s.Drift) == 2 && s.Count == 3 && s.Ready == 3 && len(s.Artifacts) == 1
	})
	// A sweep that finds it unchanged signals nothing; the listing dates the reading by it. A
	// sweep the loop above started may still deliver what it read against the memo it listed
	// before this reading was in the listing (visibility follows a memo a moment later): let
	// one that started after the reading was listed end, then take the sync's own reading.
	sweptAfter(t, time.Now())
	changed := ownReading(t, key).SyncedAt
	before := time.Now().UTC()
	s = read("a sweep that finds nothing new", true, func(s contract.InstanceSnapshot) bool { return s.SyncedAt.After(before) })
	if len(s.Drift) != 2 || s.Count != 3 {
		t.Errorf("after an unchanged sweep %+v", s)
	}
	if own := ownReading(t, key); !own.SyncedAt.Equal(changed) {
		t.Errorf("the sync's own reading is dated %v, want %v: an unchanged reading must not be signalled", own.SyncedAt, changed)
	}
	if !strings.Contains(strings.Join(s.Drift, "\n"), "Deployment web runs library/nginx:1.29-hotfix; Gantry deployed library/nginx:1.28") {
		t.Errorf("drift %q", s.Drift)
	}

	// The services list shows the reading; the API lists the instances.
	targets, err := lv.Targets(ctx, f)
	if err != nil || len(targets) != 1 || targets[0].Instances == nil || len(targets[0].Instances.Drift) != 2 || targets[0].Instances.Instances != nil {
		t.Fatalf("targets %+v (%v): the listing carries the reading without its instances", targets, err)
	}
	srv, tok, _ := apiServer(t)
	var api struct {
		Instances []contract.InstanceSnapshot `json:"instances"`
	}
	if err := call(srv.URL, tok, "GET", "/api/v1/services/web/instances?infra=dev_instances", nil, http.StatusOK, &api); err != nil {
		t.Fatal(err)
	}
	if len(api.Instances) != 1 || api.Instances[0].Key != key || len(api.Instances[0].Instances) == 0 {
		t.Errorf("API instances %+v", api.Instances)
	}

	// The service's Deployment deleted: the sync ends, the target leaves the instances listing.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		_ = env.internal.SignalWorkflow(ctx, contract.InstancesID(key), "", contract.SignalInstancesSync, nil)
		desc, err := env.internal.DescribeWorkflowExecution(ctx, contract.InstancesID(key), "")
		if err != nil {
			t.Fatal(err)
		}
		if st := desc.GetWorkflowExecutionInfo().GetStatus(); st == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the sync is %s after its workloads were deleted", st)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		targets, err = lv.Targets(ctx, f)
		if err != nil || len(targets) != 1 {
			t.Fatalf("targets %+v (%v): the ledger keeps the deployments", targets, err)
		}
		if targets[0].Instances == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target is still listed with instances %+v", targets[0].Instances)
		}
	}
	if *updateHistories { // the sync's whole life, for the replay tests
		id := contract.InstancesID(key)
		writeClientHistory(t, env.internal, id, "", filepath.Join("..", "workflows", "testdata", "histories", strings.ReplaceAll(id, "/", "__")+".json"))
		sweep := contract.SweepID(workflows.SequenceQueue(workflows.TaskQueue))
		writeClientHistory(t, env.internal, sweep, "", filepath.Join("..", "workflows", "testdata", "histories", strings.ReplaceAll(sweep, "/", "__")+".json"))
	}
}

// readings returns a function that asks a target's sync for a reading now, or with sweep the
// sweep for one of every target, until the listing shows one that satisfies ok.
func readings(t *testing.T, key contract.DeploymentKey) func(what string, sweep bool, ok func(contract.InstanceSnapshot) bool) contract.InstanceSnapshot {
	f := ledger.Filter{Service: key.Service, Environment: key.Environment, Infra: key.Infra}
	return func(what string, sweep bool, ok func(contract.InstanceSnapshot) bool) contract.InstanceSnapshot {
		t.Helper()
		ctx := context.Background()
		var last []contract.InstanceSnapshot
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			if sweep { // any signal starts a sweep at once
				_ = env.internal.SignalWorkflow(ctx, contract.SweepID(workflows.SequenceQueue(workflows.TaskQueue)), "", contract.SignalSweepEvery, contract.DefaultInstanceSync)
			} else {
				_ = env.internal.SignalWorkflow(ctx, contract.InstancesID(key), "", contract.SignalInstancesSync, nil)
			}
			got, err := env.starter.Ledger().Instances(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 1 && ok(got[0]) {
				return got[0]
			}
			last = got
		}
		t.Fatalf("%s: the last readings were %+v", what, last)
		return contract.InstanceSnapshot{}
	}
}

// ownReading is a target's reading as its sync holds it.
func ownReading(t *testing.T, key contract.DeploymentKey) contract.InstanceSnapshot {
	t.Helper()
	q, err := env.internal.QueryWorkflow(context.Background(), contract.InstancesID(key), "", contract.QueryInstances)
	if err != nil {
		t.Fatal(err)
	}
	var own contract.InstanceSnapshot
	if err := q.Get(&own); err != nil {
		t.Fatal(err)
	}
	return own
}

// sweptAfter starts a sweep of the test queue's targets and waits until one that started
// after since has ended.
func sweptAfter(t *testing.T, since time.Time) {
	t.Helper()
	ctx := context.Background()
	id := contract.SweepID(workflows.SequenceQueue(workflows.TaskQueue))
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		_ = env.internal.SignalWorkflow(ctx, id, "", contract.SignalSweepEvery, contract.DefaultInstanceSync)
		desc, err := env.internal.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		var st contract.InstanceSweepState
		if ok, err := contract.MemoValue(desc.GetWorkflowExecutionInfo().GetMemo().GetFields(), contract.MemoSweep, &st); err == nil && ok && st.Last != nil && st.Last.Started.After(since) {
			return
		}
	}
	t.Fatalf("no sweep that started after %v ended", since)
}

// A post-deployment rollback through the CLI and the API: 1.27 then 1.28 deployed, `gantry
// rollback web --env dev` runs the stage's rollback steps as a new execution, the cluster runs
// 1.27 again, and the ledger says 1.28 was rolled back and 1.27 runs; a second rollback has
// no earlier success to go to and is refused, as is an environment never deployed to.
func TestRollbackAfterDeployment(t *testing.T) {
	_, cs := cluster(t)
	file := devExample(t, "e2e-rollback", "dev_rollback")
	var execs []string
	for _, tag := range []string{"1.27", "1.28"} {
		r, err := load.File(file, load.Options{ForRun: true, Sets: []string{"pipeline.variables.tag=" + tag}})
		if err != nil || !r.OK() {
			t.Fatalf("load: %v\n%s", err, r.Diags.Render(r.Sources))
		}
		exec, res := runPlan(t, env.starter, r.Plan)
		conformance.Check(t, res.Tree, map[string]status.Status{"deploy_dev": status.Succeeded})
		execs = append(execs, exec.ID)
	}
	gantry := func(args ...string) (int, string) { return gantryCLI(t, args...) }
	if code, out := gantry("rollback", "web", "--env", "nowhere"); code == 0 || !strings.Contains(out, "has no deployment recorded in environment nowhere") {
		t.Errorf("a rollback where nothing was deployed: %d %s", code, out)
	}
	code, out := gantry("rollback", "web", "--env", "dev", "--infra", "dev_rollback")
	if code != 0 || !strings.Contains(out, "rolling web back in dev/dev_rollback from 1.28 ("+execs[1]+") to 1.27 ("+execs[0]+")") {
		t.Fatalf("rollback: %d %s", code, out)
	}
	id := strings.Fields(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Check(t, res.Tree, map[string]status.Status{"": status.Succeeded, "deploy_dev": status.Skipped,
		"pipelineRollback.deploy_dev.rollbackSteps.rollback": status.Succeeded})
	if to := res.Tree.Find("pipelineRollback.deploy_dev.rollbackSteps.rollback").Outputs["rolledBackTo"]; fmt.Sprint(to) != "1" {
		t.Errorf("rolled back to release %v, want 1", to)
	}
	if img := deploymentOf(t, cs, "e2e-rollback-dev", "web").Spec.Template.Spec.Containers[0].Image; img != "library/nginx:1.27" {
		t.Errorf("after the rollback the cluster runs %s", img)
	}
	f := ledger.Filter{Service: "web", Infra: "dev_rollback"}
	var targets []contract.LedgerSummary
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if targets, err = env.starter.Ledger().Targets(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		if len(targets) == 1 && targets[0].Current != nil && targets[0].Current.Execution == execs[0] || time.Now().After(deadline) {
			break
		}
	}
	if len(targets) != 1 || targets[0].Current == nil || targets[0].Current.Artifact.Version != "1.27" || targets[0].Last.Outcome != contract.OutcomeRolledBack {
		t.Fatalf("the ledger after the rollback: %+v", targets)
	}
	if code, out := gantry("rollback", "web", "--env", "dev", "--infra", "dev_rollback"); code == 0 || !strings.Contains(out, "no earlier successful deployment to roll back to") {
		t.Errorf("a second rollback: %d %s", code, out)
	}
	if *updateHistories { // a post-deployment rollback, for the replay tests
		recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), id)
	}
}

// A worker SIGKILLed in the middle of a sweep: another worker on the queue takes the sweep up
// once its heartbeats stop, and the sweep ends with every target read. The targets' cluster
// is a listener that refuses connections at first (the syncs' own reads fail quickly), then
// holds them open, so that the sweep's reads hang (ten seconds each, the TLS handshake's limit)
// while the worker is killed.
func TestInstanceSweepSurvivesAKilledWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var hang atomic.Bool
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !hang.Load() {
				c.Close()
				continue
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	os.Setenv(secrets.EnvName("instances_kill_token"), "not-a-token")
	const queue = "instances-kill"
	seq := workflows.SequenceQueue(queue)
	dir := t.TempDir()
	first := gantryWorker(t, env.gantry, queue, filepath.Join(dir, "a"))
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := &plan.Connector{ID: "held", Type: "ManualConfig", MasterURL: "https://" + ln.Addr().String(), TokenRef: "instances_kill_token", InsecureSkipTLSVerify: true}
	const targets = 4
	for i := range targets {
		tg := contract.InstanceTarget{Key: contract.DeploymentKey{Project: "kill/instances", Service: fmt.Sprint("svc_", i), Environment: "dev", Infra: "k8s"},
			DeploymentType: "Kubernetes", Connector: conn, Namespace: "shop", Release: "web"}
		id := contract.InstancesID(tg.Key)
		if _, err := env.internal.SignalWithStartWorkflow(ctx, id, contract.SignalInstancesTarget, tg, client.StartWorkflowOptions{ID: id, TaskQueue: seq},
			contract.InstancesName, contract.InstanceSync{Target: tg}); err != nil {
			t.Fatal(err)
		}
	}
	reads := ledger.Reader{Client: env.internal}
	for { // every sync's own read failed, and said so
		read, err := reads.Readings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range read {
			if s.Key.Project == "kill/instances" && s.Error != "" {
				n++
			}
		}
		if n == targets {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d syncs read", n, targets)
		}
		time.Sleep(500 * time.Millisecond)
	}
	hang.Store(true)
	sweep := contract.SweepID(seq)
	began := time.Now().UTC()
	if _, err := env.internal.SignalWithStartWorkflow(ctx, sweep, contract.SignalSweepEvery, time.Hour, client.StartWorkflowOptions{ID: sweep, TaskQueue: seq},
		contract.SweepName, contract.InstanceSweepState{Every: time.Hour}); err != nil {
		t.Fatal(err)
	}
	describe := func() *workflowservice.DescribeWorkflowExecutionResponse {
		t.Helper()
		d, err := env.internal.DescribeWorkflowExecution(ctx, sweep, "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for { // the first worker reads, its reads hanging
		if p := describe().GetPendingActivities(); len(p) == 1 && p[0].GetState() == enums.PENDING_ACTIVITY_STATE_STARTED {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the sweep never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	second := gantryWorker(t, env.gantry, queue, filepath.Join(dir, "b"))
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	for {
		var st contract.InstanceSweepState
		if _, err := contract.MemoValue(describe().GetWorkflowExecutionInfo().GetMemo().GetFields(), contract.MemoSweep, &st); err != nil {
			t.Fatal(err)
		}
		if st.Last != nil && st.Last.Started.After(began) {
			if st.Last.Targets != targets || st.Last.Failed != targets {
				t.Errorf("the sweep after the kill: %+v, want %d targets read, each failing", st.Last, targets)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no sweep ended after the worker was killed")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Each sync took the sweep's reading (the handshake timing out, not the refusal before).
	read, err := reads.Readings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range read {
		if s.Key.Project == "kill/instances" && !strings.Contains(s.Error, "TLS handshake timeout") {
			t.Errorf("%s: %q, want the sweep's reading", s.Key.Service, s.Error)
		}
	}
	for i := range targets { // they are the test's: stop them
		_ = env.internal.TerminateWorkflow(ctx, contract.InstancesID(contract.DeploymentKey{Project: "kill/instances", Service: fmt.Sprint("svc_", i), Environment: "dev", Infra: "k8s"}), "", "test over")
	}
	_ = env.internal.TerminateWorkflow(ctx, sweep, "", "test over")
}

// rolledOut waits until a Deployment's rollout is over: every replica updated and ready, and
// no other pod of it left (an old one still terminating included).
func rolledOut(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := d.Status
		if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == replicas && st.Replicas == replicas && st.ReadyReplicas == replicas {
			sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) == int(replicas) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment %s/%s still rolling out: %+v", ns, name, st)
		}
	}
}

// devExample is examples/k8s (namespaces prefixed with suffix) with its dev infrastructure
// renamed infra, so that no other test's deployments reach the test's target, and the path of
// the dev pipeline deploying there (pipeline.variables.tag is the image's tag).
func devExample(t testing.TB, suffix, infra string) string {
	t.Helper()
	dir := k8sExample(t, suffix)
	def := filepath.Join(dir, "infra-dev.yaml")
	writeFile(t, def, strings.Replace(readFile(def), "identifier: dev_cluster", "identifier: "+infra, 1))
	file := filepath.Join(dir, "dev.yaml")
	writeFile(t, file, strings.Replace(devPipeline, "identifier: dev_cluster", "identifier: "+infra, 1))
	return file
}

// apiServer serves the API on the test's server as ann, a user of an identity file without
// roles, and returns it, ann's token and the identity file.
func apiServer(t *testing.T) (*httptest.Server, string, string) {
	t.Helper()
	d := &identity.Directory{}
	tok, err := d.AddUser("ann", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(t.TempDir(), "users.yaml")
	if err := d.Save(idFile); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: idFile}))
	t.Cleanup(srv.Close)
	return srv, tok, idFile
}
