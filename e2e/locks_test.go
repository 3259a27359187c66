package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// lockRig is a folder of entities (examples/custom's service, environment, infrastructure and
// deployment template) and pipelines whose steps write "start"/"end" marks with nanosecond
// times to marks, and wait for a gate file of their execution's sequence number first.
type lockRig struct {
	dir, marks, gates string
	infra             string // the infrastructure's identifier: each test deploys to its own
}

func newLockRig(t testing.TB, allowSimultaneous bool) *lockRig {
	t.Helper()
	dir := t.TempDir()
	infra := "pool_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	for _, name := range []string{"service.yaml", "environment.yaml", "infrastructure.yaml", "templates/hosts.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "custom", name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "blue_pool", infra)
		if name == "infrastructure.yaml" && allowSimultaneous {
			text = strings.Replace(text, "deploymentType: CustomDeployment\n", "deploymentType: CustomDeployment\n  allowSimultaneousDeployments: true\n", 1)
		}
		writeFile(t, filepath.Join(dir, name), text)
	}
	r := &lockRig{dir: dir, marks: filepath.Join(dir, "marks"), gates: filepath.Join(dir, "gates"), infra: infra}
	if err := os.MkdirAll(r.gates, 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// markStep is a step that marks its start, waits for its execution's gate (unless gated is
// false) and marks its end.
func (r *lockRig) markStep(gated bool) string {
	wait := ""
	if gated {
		wait = `while [ ! -e "` + r.gates + `/<+pipeline.identifier>-<+pipeline.sequenceId>" ]; do sleep 0.05; done; `
	}
	return `              - step:
                  type: ShellScript
                  name: work
                  identifier: work
                  timeout: 5m
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: 'echo "start <+pipeline.identifier>-<+pipeline.sequenceId> $(date +%s%N)" >> ` + r.marks + `; ` + wait + `echo "end <+pipeline.identifier>-<+pipeline.sequenceId> $(date +%s%N)" >> ` + r.marks + `'
`
}

// deployPipeline writes a pipeline of one Deployment stage to the rig's infrastructure.
func (r *lockRig) deployPipeline(t testing.TB, id string, gated bool) string {
	src := `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: Deploy
        identifier: deploy
        type: Deployment
        failureStrategies: [{onFailure: {errors: [AllErrors], action: {type: MarkAsFailure}}}]
        spec:
          deploymentType: CustomDeployment
          service: {serviceRef: shop}
          environment:
            environmentRef: staging
            infrastructureDefinitions: [{identifier: ` + r.infra + `}]
          execution:
            steps:
` + r.markStep(gated)
	file := filepath.Join(r.dir, id+".yaml")
	writeFile(t, file, src)
	return file
}

// markPipeline writes a pipeline of one Custom stage: a Queue step on key with scope (none
// when key is ""), then one ungated marked step.
func (r *lockRig) markPipeline(t testing.TB, id, key, scope string) string {
	queue := ""
	if key != "" {
		queue = `              - step: {type: Queue, name: queue, identifier: queue, timeout: 60m, spec: {key: "` + key + `", scope: ` + scope + `}}
`
	}
	src := `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
` + queue + r.markStep(false)
	file := filepath.Join(r.dir, id+".yaml")
	writeFile(t, file, src)
	return file
}

// queuePipeline writes a pipeline of two Custom stages: the first queues on key with scope,
// then works (gated); the second works again, ungated.
func (r *lockRig) queuePipeline(t testing.TB, id, key, scope string) string {
	src := `pipeline:
  name: ` + id + `
  identifier: ` + id + `
  stages:
    - stage:
        name: One
        identifier: one
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: Queue, name: queue, identifier: queue, timeout: 5m, spec: {key: "` + key + `", scope: ` + scope + `}}
` + r.markStep(true) + `    - stage:
        name: Two
        identifier: two
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: tail, identifier: tail, timeout: 1m, spec: {shell: Sh, source: {type: Inline, spec: {script: 'echo "tail <+pipeline.identifier>-<+pipeline.sequenceId> $(date +%s%N)" >> ` + r.marks + `'}}}}
`
	file := filepath.Join(r.dir, id+".yaml")
	writeFile(t, file, src)
	return file
}

func (r *lockRig) start(t testing.TB, file string) starter.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec, err := env.starter.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL", User: "test"}, workflows.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func (r *lockRig) open(t testing.TB, execID string) {
	t.Helper()
	writeFile(t, filepath.Join(r.gates, execID), "")
}

// mark is one line of the marks file.
type mark struct {
	what, exec string
	at         int64
}

func (r *lockRig) read(t testing.TB) []mark {
	t.Helper()
	b, err := os.ReadFile(r.marks)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []mark
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, mark{f[0], f[1], at})
	}
	return out
}

// waitMark waits until the marks file has what for exec.
func (r *lockRig) waitMark(t testing.TB, what, exec string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if slices.ContainsFunc(r.read(t), func(m mark) bool { return m.what == what && m.exec == exec }) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %q mark of %s after a minute: %+v", what, exec, r.read(t))
}

// waitNode waits until the node at path of an execution's live tree satisfies ok.
func waitNode(t *testing.T, execID, path string, ok func(*workflows.Node) bool) *workflows.Node {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last *workflows.Node
	for time.Now().Before(deadline) {
		tree, err := env.starter.Tree(context.Background(), execID)
		if err == nil {
			if last = tree.Find(path); last != nil && ok(last) {
				return last
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %s never got there; last %+v", execID, path, last)
	return nil
}

// intervals are each execution's [start, end] from the marks.
func intervals(t testing.TB, marks []mark) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for _, m := range marks {
		iv := out[m.exec]
		switch m.what {
		case "start":
			iv[0] = m.at
		case "end":
			iv[1] = m.at
		}
		out[m.exec] = iv
	}
	return out
}

func overlap(a, b [2]int64) bool { return a[0] < b[1] && b[0] < a[1] }

// succeeded checks that executions ended SUCCEEDED.
func succeeded(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if res := result(t, id); res.Status != status.Succeeded {
			t.Errorf("%s: %s", id, res.Status)
		}
	}
}

func result(t *testing.T, execID string) *workflows.PipelineResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := env.starter.Result(ctx, execID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Two executions deploying the same service to the same infrastructure never deploy at once:
// the second waits, RESOURCE_WAITING with the holder named, and deploys when the first ends.
// With allowSimultaneousDeployments they overlap.
func TestResourceConstraintOneDeploymentAtATime(t *testing.T) {
	t.Parallel()
	r := newLockRig(t, false)
	a := r.start(t, r.deployPipeline(t, "rc_first", true))
	r.waitMark(t, "start", a.ID)
	b := r.start(t, r.deployPipeline(t, "rc_second", true))
	n := waitNode(t, b.ID, "deploy", func(n *workflows.Node) bool {
		return n.Status == status.ResourceWaiting && n.Resource != nil && n.Resource.Holder != ""
	})
	if n.Resource == nil || n.Resource.Kind != workflows.LockInfrastructure || n.Resource.Key != "shop/staging//"+r.infra ||
		n.Resource.Holder != a.ID+" (deploy)" || n.Resource.Ahead != 0 {
		t.Errorf("waiting stage's resource %+v", n.Resource)
	}
	// The pipeline rolls the waiting stage up, and the holder is not waiting.
	if tree, err := env.starter.Tree(context.Background(), b.ID); err != nil || tree.Status != status.ResourceWaiting {
		t.Errorf("pipeline status %v (%v)", tree.Status, err)
	}
	time.Sleep(300 * time.Millisecond)
	if slices.ContainsFunc(r.read(t), func(m mark) bool { return m.exec == b.ID }) {
		t.Fatalf("the second execution deployed while the first held the infrastructure: %+v", r.read(t))
	}
	r.open(t, a.ID)
	r.open(t, b.ID)
	succeeded(t, a.ID, b.ID)
	iv := intervals(t, r.read(t))
	if overlap(iv[a.ID], iv[b.ID]) || iv[b.ID][0] < iv[a.ID][1] {
		t.Errorf("deployments overlap or ran out of order: %v", iv)
	}
	if *updateHistories { // a stage that held its infrastructure, and one that waited for it
		for _, id := range []string{a.ID, b.ID} {
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), id)
		}
	}
	notes := result(t, b.ID).Tree.Find("deploy").Notes
	if !slices.ContainsFunc(notes, func(s string) bool {
		return strings.HasPrefix(s, "waited ") && strings.Contains(s, "held by "+a.ID)
	}) {
		t.Errorf("the second stage's notes do not say it waited for the first: %q", notes)
	}

	t.Run("allowSimultaneousDeployments", func(t *testing.T) {
		r := newLockRig(t, true)
		a := r.start(t, r.deployPipeline(t, "rc_sim_first", true))
		r.waitMark(t, "start", a.ID)
		b := r.start(t, r.deployPipeline(t, "rc_sim_second", true))
		r.waitMark(t, "start", b.ID) // while the first still deploys
		r.open(t, a.ID)
		r.open(t, b.ID)
		succeeded(t, a.ID, b.ID)
		if iv := intervals(t, r.read(t)); !overlap(iv[a.ID], iv[b.ID]) {
			t.Errorf("deployments did not overlap: %v", iv)
		}
	})
}

// A holder whose execution is terminated from outside (as from the Temporal UI) cannot
// release: the lock sees its stage closed and the waiter deploys. A waiter aborted while it
// waits leaves the queue, and the one behind it takes its turn.
func TestResourceConstraintTerminatedHolderAndAbortedWaiter(t *testing.T) {
	t.Parallel()
	r := newLockRig(t, false)
	a := r.start(t, r.deployPipeline(t, "rc_term_a", true))
	r.waitMark(t, "start", a.ID)
	b := r.start(t, r.deployPipeline(t, "rc_term_b", true))
	waitNode(t, b.ID, "deploy", func(n *workflows.Node) bool { return n.Status == status.ResourceWaiting })
	c := r.start(t, r.deployPipeline(t, "rc_term_c", false))
	waitNode(t, c.ID, "deploy", func(n *workflows.Node) bool {
		return n.Status == status.ResourceWaiting && n.Resource != nil && n.Resource.Ahead == 1
	})
	ctx := context.Background()
	if err := env.starter.Abort(ctx, b.ID, "test", "not now"); err != nil {
		t.Fatal(err)
	}
	if res := result(t, b.ID); res.Status != status.Aborted {
		t.Errorf("aborted waiter: %s", res.Status)
	}
	waitNode(t, c.ID, "deploy", func(n *workflows.Node) bool {
		return n.Status == status.ResourceWaiting && n.Resource != nil && n.Resource.Ahead == 0
	})
	if err := env.client.TerminateWorkflow(ctx, a.ID, "", "test: the holder is terminated"); err != nil {
		t.Fatal(err)
	}
	if res := result(t, c.ID); res.Status != status.Succeeded {
		t.Errorf("waiter after the holder was terminated: %s", res.Status)
	}
	if slices.ContainsFunc(r.read(t), func(m mark) bool { return m.exec == b.ID }) {
		t.Errorf("the aborted waiter deployed: %+v", r.read(t))
	}
	// The lock holds nothing now and queues nobody.
	st := lockState(t, workflows.LockID(workflows.LockInfrastructure, "shop/staging//"+r.infra))
	if st.Holder != nil || len(st.Queue) != 0 {
		t.Errorf("lock state after all ended: %+v", st)
	}
}

func lockState(t *testing.T, id string) contract.LockState {
	t.Helper()
	var st contract.LockState
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := env.internal.QueryWorkflow(context.Background(), id, "", contract.QueryLock)
		if err == nil {
			err = v.Get(&st)
		}
		if err == nil && st.Holder == nil || time.Now().After(deadline) {
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A Queue step serialises two pipelines on one key: the second waits, QUEUED with the holder
// named, until the first pipeline ends (scope Pipeline), not merely its stage.
func TestQueueStepAcrossPipelines(t *testing.T) {
	t.Parallel()
	r := newLockRig(t, false)
	key := fmt.Sprintf("db-migrations-%d", time.Now().UnixNano())
	a := r.start(t, r.queuePipeline(t, "queue_a", key, "Pipeline"))
	r.waitMark(t, "start", a.ID)
	b := r.start(t, r.queuePipeline(t, "queue_b", key, "Pipeline"))
	n := waitNode(t, b.ID, "one.queue", func(n *workflows.Node) bool {
		return n.Status == status.Queued && n.Resource != nil && n.Resource.Holder != ""
	})
	if n.Resource == nil || n.Resource.Key != key || n.Resource.Holder != a.ID+" (one.queue)" {
		t.Errorf("queued step's resource %+v", n.Resource)
	}
	// Lists say what the tree says: the waiting execution is QUEUED, the holder RUNNING.
	listed := func(id string) string {
		list, err := env.starter.ListWhere(context.Background(), "", 50, func(s starter.Summary) bool { return s.ID == id })
		if err != nil || len(list) != 1 {
			t.Fatalf("list %s: %v %v", id, list, err)
		}
		return list[0].Status
	}
	deadline := time.Now().Add(30 * time.Second)
	for listed(b.ID) != string(status.Queued) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got, holder := listed(b.ID), listed(a.ID); got != string(status.Queued) || holder != string(status.Running) {
		t.Errorf("listed as %s (waiting) and %s (holder), want QUEUED and RUNNING", got, holder)
	}
	// gantry locks: the key, its holder and its waiter.
	locks, err := env.starter.Locks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(locks, func(l starter.LockView) bool { return l.Key == key })
	if i < 0 || locks[i].Kind != "queue" || len(locks[i].Holders) != 1 || locks[i].Holders[0].Execution != a.ID ||
		len(locks[i].Waiting) != 1 || locks[i].Waiting[0].Execution != b.ID || locks[i].Waiting[0].Node != "one.queue" {
		t.Errorf("locks: %+v", locks)
	}
	r.open(t, a.ID)
	r.open(t, b.ID)
	succeeded(t, a.ID, b.ID)
	if *updateHistories { // pipeline-scoped Queue steps, one waiting
		for _, id := range []string{a.ID, b.ID} {
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), id)
		}
	}
	var aTail, bStart int64
	for _, m := range r.read(t) {
		if m.what == "tail" && m.exec == a.ID {
			aTail = m.at
		}
		if m.what == "start" && m.exec == b.ID {
			bStart = m.at
		}
	}
	if aTail == 0 || bStart < aTail {
		t.Errorf("the second pipeline started before the first ended (its last stage at %d, the second at %d)", aTail, bStart)
	}

	t.Run("empty key", func(t *testing.T) {
		r := newLockRig(t, false)
		file := r.queuePipeline(t, "queue_empty", "<+pipeline.variables.k>", "Stage")
		b, _ := os.ReadFile(file)
		writeFile(t, file, strings.Replace(string(b), "  stages:\n", "  variables:\n    - {name: k, type: String, value: \"\"}\n  stages:\n", 1))
		res := result(t, r.start(t, file).ID)
		f := res.Tree.Find("one.queue").Failure
		if res.Status != status.Failed || f == nil || !strings.Contains(f.Message, "Queue key rendered empty") {
			t.Errorf("%s %+v", res.Status, f)
		}
	})

	t.Run("key that does not resolve", func(t *testing.T) {
		r := newLockRig(t, false)
		exec := r.start(t, r.queuePipeline(t, "queue_null", "db-<+pipeline.variables.nothere>", "Pipeline"))
		res := result(t, exec.ID)
		f := res.Tree.Find("one.queue").Failure
		if res.Status != status.Failed || f == nil || !strings.Contains(f.Message, "Queue key db-<+pipeline.variables.nothere> does not resolve") {
			t.Errorf("%s %+v", res.Status, f)
		}
		if *updateHistories { // the Queue key that does not resolve (resolved-keys)
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), exec.ID)
		}
	})
}

// The holder's worker is killed with SIGKILL while the holder deploys and another execution
// waits: a new worker carries both executions on, the holder keeps the infrastructure until
// its stage ends, and the waiter deploys after it.
func TestResourceConstraintWorkerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	t.Parallel()
	bin := env.gantry
	r := newLockRig(t, false)
	queue := "lock-kill-test"
	data := filepath.Join(t.TempDir(), "data")
	first := gantryWorker(t, bin, queue, data)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, start := queueStarter(t, ctx, queue)
	a := start(r.deployPipeline(t, "rc_kill_a", true))
	r.waitMark(t, "start", a.ID)
	b := start(r.deployPipeline(t, "rc_kill_b", false))
	waitNode(t, b.ID, "deploy", func(n *workflows.Node) bool {
		return n.Status == status.ResourceWaiting && n.Resource != nil && n.Resource.Holder == a.ID+" (deploy)"
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	second := gantryWorker(t, bin, queue, data)
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
	// The holder's step runs again on the new worker (its first attempt died with the worker).
	deadline := time.Now().Add(time.Minute)
	for len(slices.DeleteFunc(r.read(t), func(m mark) bool { return m.what != "start" || m.exec != a.ID })) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the holder's step did not run again after its worker died: %+v", r.read(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if slices.ContainsFunc(r.read(t), func(m mark) bool { return m.exec == b.ID }) {
		t.Fatalf("the waiter deployed while the holder's stage still ran: %+v", r.read(t))
	}
	r.open(t, a.ID)
	for _, id := range []string{a.ID, b.ID} {
		res, err := s.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != status.Succeeded {
			t.Errorf("%s: %s", id, res.Status)
		}
	}
	iv := intervals(t, r.read(t))
	if iv[b.ID][0] < iv[a.ID][1] {
		t.Errorf("the waiter deployed before the holder ended: %v", iv)
	}
}

// Many executions queue on one key at once (40; GANTRY_STRESS_LOCKS sets how many, `make
// stress` 1,000): each holds it exactly once, never two at a time, and none is lost.
func TestLockManyWaiters(t *testing.T) {
	t.Parallel()
	n := 40
	if v, err := strconv.Atoi(os.Getenv("GANTRY_STRESS_LOCKS")); err == nil && v > 0 {
		n = v
	}
	r := newLockRig(t, false)
	key := fmt.Sprintf("many-%d", time.Now().UnixNano())
	p := loadRun(t, r.markPipeline(t, "lock_many", key, "Stage"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	var started atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Second):
			}
			v, err := env.internal.QueryWorkflow(context.Background(), workflows.LockID(workflows.LockQueue, key), "", contract.QueryLock)
			var st contract.LockState
			if err == nil {
				err = v.Get(&st)
			}
			t.Logf("lock progress: held %v, %d queued, %d granted (query error %v), %d marks, %d started", st.Holder != nil, len(st.Queue), st.Grants, err, len(r.read(t)), started.Load())
		}
	}()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = exec.ID
			started.Add(1)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, id := range ids {
		res, err := env.starter.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != status.Succeeded {
			t.Errorf("%s: %s", id, res.Status)
		}
	}
	marks := r.read(t)
	count := map[string]int{}
	for _, m := range marks {
		count[m.what+" "+m.exec]++
	}
	for _, id := range ids {
		if count["start "+id] != 1 || count["end "+id] != 1 {
			t.Errorf("%s held the key %d times (ended %d)", id, count["start "+id], count["end "+id])
		}
	}
	iv := intervals(t, marks)
	list := make([][2]int64, 0, len(iv))
	for _, v := range iv {
		list = append(list, v)
	}
	slices.SortFunc(list, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(list); i++ {
		if list[i][0] < list[i-1][1] {
			t.Fatalf("two executions held the key at once: %v and %v", list[i-1], list[i])
		}
	}
	st := lockState(t, workflows.LockID(workflows.LockQueue, key))
	if st.Holder != nil || len(st.Queue) != 0 || st.Grants != int64(n) {
		t.Errorf("lock after all ended: holder %v, %d queued, %d grants (want %d)", st.Holder, len(st.Queue), st.Grants, n)
	}
}

// queueStarter starts executions on a task queue of their own (served by a gantry worker the
// test kills), with a 2 s heartbeat timeout so that a killed worker is soon known gone.
func queueStarter(t *testing.T, ctx context.Context, queue string) (*starter.Starter, func(file string) starter.Execution) {
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	return s, func(file string) starter.Execution {
		t.Helper()
		exec, err := s.Start(ctx, loadRun(t, file), workflows.Trigger{Type: "MANUAL"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
}
