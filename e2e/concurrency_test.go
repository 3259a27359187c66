package e2e

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// startLimited starts n executions of the gated pipeline id under settings, one after another.
func startLimited(t *testing.T, ctx context.Context, id string, n int, settings workflows.Settings) []string {
	t.Helper()
	p := compile(t, id+".yaml", []byte(gatedPipeline(id)), load.Options{})
	var ids []string
	for range n {
		exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL", User: "dev"}, settings)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, exec.ID)
		// In order: each execution asks for its place before the next one starts.
		waitUntil(t, ctx, exec.ID, func(tree *workflows.Node) bool {
			return tree.Status == status.Queued || tree.Find("gate.gate") != nil && tree.Find("gate.gate").Status == status.ApprovalWaiting
		})
	}
	return ids
}

// waitUntil polls an execution's tree until ok says so.
func waitUntil(t *testing.T, ctx context.Context, id string, ok func(*workflows.Node) bool) *workflows.Node {
	t.Helper()
	for {
		tree, err := env.starter.Tree(ctx, id)
		if err == nil && ok(tree) {
			return tree
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: never reached the state waited for (last %v, %v)", id, tree, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func approveGate(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	waitFor(t, ctx, env.starter, id, "gate.gate", status.ApprovalWaiting)
	if _, err := env.starter.Approve(ctx, id, workflows.ApprovalRequest{Path: "gate.gate", Action: "APPROVE", User: "ann", Groups: []string{"release_managers"}}); err != nil {
		t.Fatal(err)
	}
}

// A pipeline limited to two running executions: the third and later wait QUEUED in the
// order they started, say how many are ahead, are listed as QUEUED, can be aborted while they
// wait, and run as places free up.
func TestConcurrencyLimitQueuesExecutions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ids := startLimited(t, ctx, "limited", 5, workflows.Settings{MaxRunningPerPipeline: 2})

	for i, id := range ids {
		tree, err := env.starter.Tree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if tree.Status != status.ApprovalWaiting {
				t.Errorf("execution %d: %s, want it running and waiting at its gate", i, tree.Status)
			}
			continue
		}
		if tree.Status != status.Queued || tree.Resource == nil || tree.Resource.Kind != workflows.LockConcurrency {
			t.Fatalf("execution %d: %s %+v, want QUEUED on the concurrency limit", i, tree.Status, tree.Resource)
		}
		if tree.Resource.Ahead != i-2 || tree.Resource.Key != "pipeline/limited" {
			t.Errorf("execution %d: %d ahead under %q, want %d under pipeline/limited", i, tree.Resource.Ahead, tree.Resource.Key, i-2)
		}
		if n := tree.Find("gate"); n != nil && n.Status != status.NotStarted {
			t.Errorf("execution %d: its stage is %s while it waits its turn", i, n.Status)
		}
	}
	queued := func() map[string]bool {
		out := map[string]bool{}
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			list, err := env.starter.List(ctx, "limited", 20)
			if err != nil {
				t.Fatal(err)
			}
			clear(out)
			for _, s := range list {
				if s.Status == string(status.Queued) {
					out[s.ID] = true
				}
			}
			if len(out) == 3 {
				break
			}
		}
		return out
	}()
	for _, id := range ids[2:] {
		if !queued[id] {
			t.Errorf("the listing does not say %s is QUEUED: %v", id, queued)
		}
	}

	// Aborting a queued execution ends it at once, and the one behind it moves up.
	if err := env.starter.Abort(ctx, ids[3], "dev", "not this one"); err != nil {
		t.Fatal(err)
	}
	if res, err := env.starter.Result(ctx, ids[3]); err != nil || res.Status != status.Aborted {
		t.Fatalf("the aborted queued execution: %v %v", res, err)
	}
	waitUntil(t, ctx, ids[4], func(tree *workflows.Node) bool { return tree.Resource != nil && tree.Resource.Ahead == 1 })

	// A finished execution hands its place to the first in line, not to a later one.
	approveGate(t, ctx, ids[0])
	if res, err := env.starter.Result(ctx, ids[0]); err != nil || res.Status != status.Succeeded {
		t.Fatalf("the first execution: %v %v", res, err)
	}
	waitFor(t, ctx, env.starter, ids[2], "gate.gate", status.ApprovalWaiting)
	if tree, _ := env.starter.Tree(ctx, ids[4]); tree == nil || tree.Status != status.Queued || tree.Resource.Ahead != 0 {
		t.Errorf("the last execution once the first ended: %+v", tree)
	}
	for _, id := range []string{ids[1], ids[2], ids[4]} {
		approveGate(t, ctx, id)
	}
	for _, id := range []string{ids[1], ids[2], ids[4]} {
		res, err := env.starter.Result(ctx, id)
		if err != nil || res.Status != status.Succeeded {
			t.Fatalf("%s: %v %v", id, res, err)
		}
		if id != ids[1] && !hasNote(res.Tree.Notes, "queued ") {
			t.Errorf("%s waited its turn but says nothing of it: %q", id, res.Tree.Notes)
		}
	}
}

func hasNote(notes []string, part string) bool {
	for _, n := range notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// The server-wide limit counts executions of every pipeline together.
func TestConcurrencyLimitAcrossPipelines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	settings := workflows.Settings{MaxRunning: 1}
	a := startLimited(t, ctx, "limited_all_a", 1, settings)[0]
	b := startLimited(t, ctx, "limited_all_b", 1, settings)[0]
	if tree, _ := env.starter.Tree(ctx, b); tree == nil || tree.Status != status.Queued || tree.Resource.Key != "all" {
		t.Fatalf("the second pipeline's execution under a server-wide limit of one: %+v", tree)
	}
	approveGate(t, ctx, a)
	approveGate(t, ctx, b)
	if res, err := env.starter.Result(ctx, b); err != nil || res.Status != status.Succeeded {
		t.Fatalf("%v %v", res, err)
	}
}

func TestRecordConcurrencyHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("records only with -update-histories")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ids := startLimited(t, ctx, "limited_record", 2, workflows.Settings{MaxRunningPerPipeline: 1})
	approveGate(t, ctx, ids[0])
	approveGate(t, ctx, ids[1])
	for _, id := range ids {
		if res, err := env.starter.Result(ctx, id); err != nil || res.Status != status.Succeeded {
			t.Fatalf("%v %v", res, err)
		}
		recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), id)
	}
}

// Many simultaneous starts of one pipeline with a concurrency limit (30 under a limit of 3;
// `make stress` 10,000 under 10, GANTRY_STRESS_RUNNING and GANTRY_STRESS_RUNNING_LIMIT):
// every execution runs exactly once, never more than the limit at a time, and the limit's
// lock is empty afterwards.
func TestConcurrencyLimitManyStarts(t *testing.T) {
	n, limit := 30, 3
	if v, err := strconv.Atoi(os.Getenv("GANTRY_STRESS_RUNNING")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("GANTRY_STRESS_RUNNING_LIMIT")); err == nil && v > 0 {
		limit = v
	}
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	id := "limited_many"
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
              - step:
                  type: ShellScript
                  name: work
                  identifier: work
                  timeout: 10m
                  spec:
                    shell: Bash
                    source: {type: Inline, spec: {script: 'echo "start <+pipeline.sequenceId> $(date +%s%N)" >> ` + marks + `; sleep 0.2; echo "end <+pipeline.sequenceId> $(date +%s%N)" >> ` + marks + `'}}
`
	p := compile(t, id+".yaml", []byte(src), load.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	settings := workflows.Settings{MaxRunningPerPipeline: limit}
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			exec, err := env.starter.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, settings)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = exec.ID
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
	rig := &lockRig{marks: marks}
	got := rig.read(t)
	count := map[string]int{}
	for _, m := range got {
		count[m.what+" "+m.exec]++
	}
	if len(count) != 2*n {
		t.Errorf("%d marks for %d executions, want a start and an end of each", len(count), n)
	}
	for k, c := range count {
		if c != 1 {
			t.Errorf("%s: %d times", k, c)
		}
	}
	// The most steps running at any moment, from the marks in time order.
	slices.SortFunc(got, func(a, b mark) int { return cmp.Compare(a.at, b.at) })
	running, most := 0, 0
	for _, m := range got {
		if m.what == "start" {
			running++
		} else {
			running--
		}
		most = max(most, running)
	}
	t.Logf("%d executions under a limit of %d: at most %d ran at once", n, limit, most)
	if most > limit {
		t.Errorf("%d executions ran at once under a limit of %d", most, limit)
	}
	st := lockState(t, workflows.LockID(workflows.LockConcurrency, "pipeline/"+id))
	if len(st.Others) != 0 || st.Holder != nil || len(st.Queue) != 0 {
		t.Errorf("the limit's lock after all ended: holder %v, %d others, %d queued", st.Holder, len(st.Others), len(st.Queue))
	}
}
