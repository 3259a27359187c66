package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// tickingPipeline writes a pipeline whose stage queues on key, then runs a step that marks a
// "tick" every 20 ms until it is stopped (timeout is the step's). The step starts a shell of
// its own (`$$`), and keeps a background ticker beside its own loop, so both the shell and its
// children must die.
func (r *lockRig) tickingPipeline(t *testing.T, id, key, timeout string) string {
	tick := `echo "tick <+pipeline.identifier>-<+pipeline.sequenceId> $(date +%s%N)" >> ` + r.marks
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
              - step: {type: Queue, name: queue, identifier: queue, timeout: 10m, spec: {key: "` + key + `", scope: Stage}}
              - step:
                  type: ShellScript
                  name: work
                  identifier: work
                  timeout: ` + timeout + `
                  spec:
                    shell: Bash
                    source:
                      type: Inline
                      spec:
                        script: ': $$; (while :; do ` + tick + `; sleep 0.02; done) & while :; do ` + tick + `; sleep 0.02; done'
`
	file := filepath.Join(r.dir, id+".yaml")
	writeFile(t, file, src)
	return file
}

// noTickAfterStart fails when the holder ticked after the waiter's step started.
func noTickAfterStart(t *testing.T, r *lockRig, holder, waiter string) {
	t.Helper()
	var lastTick, start int64
	for _, m := range r.read(t) {
		switch {
		case m.what == "tick" && m.exec == holder:
			lastTick = max(lastTick, m.at)
		case m.what == "start" && m.exec == waiter:
			start = m.at
		}
	}
	if lastTick == 0 || start == 0 {
		t.Fatalf("holder's last tick %d, waiter's start %d: one is missing", lastTick, start)
	}
	if lastTick >= start {
		t.Errorf("the holder's step still ran %s after the waiter's step started", time.Duration(lastTick-start))
	}
	// Nothing of the holder runs on after the test: its processes are dead, not merely quiet.
	n := len(r.read(t))
	time.Sleep(300 * time.Millisecond)
	for _, m := range r.read(t)[n:] {
		if m.exec == holder {
			t.Fatalf("the holder's step still ticks after both executions ended: %+v", m)
		}
	}
}

// A Queue key is released only once the holder's step stopped: aborted, timed out, or on a
// worker killed with SIGKILL, the holder's processes are dead before the waiter's step starts.
func TestQueueHolderStopsBeforeTheWaiterStarts(t *testing.T) {
	t.Parallel()
	t.Run("abort", func(t *testing.T) {
		t.Parallel()
		r := newLockRig(t, false)
		key := fmt.Sprintf("migrate-abort-%d", time.Now().UnixNano())
		a := r.start(t, r.tickingPipeline(t, "stop_abort_a", key, "10m"))
		r.waitMark(t, "tick", a.ID)
		b := r.start(t, r.markPipeline(t, "stop_abort_b", key, "Stage"))
		waitNode(t, b.ID, "s.queue", func(n *workflows.Node) bool { return n.Status == status.Queued })
		if err := env.starter.Abort(context.Background(), a.ID, "test", "stop the migration"); err != nil {
			t.Fatal(err)
		}
		if res := result(t, a.ID); res.Status != status.Aborted {
			t.Errorf("holder: %s", res.Status)
		}
		succeeded(t, b.ID)
		noTickAfterStart(t, r, a.ID, b.ID)
		if *updateHistories { // changeStopConfirmed: an aborted step the stage waited for
			recordExecution(t, filepath.Join("..", "workflows", "testdata", "histories"), a.ID)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		r := newLockRig(t, false)
		key := fmt.Sprintf("migrate-timeout-%d", time.Now().UnixNano())
		a := r.start(t, r.tickingPipeline(t, "stop_timeout_a", key, "10s"))
		r.waitMark(t, "tick", a.ID)
		b := r.start(t, r.markPipeline(t, "stop_timeout_b", key, "Stage"))
		if res := result(t, a.ID); res.Status != status.Expired { // a step past its timeout ends EXPIRED
			t.Errorf("holder: %s", res.Status)
		}
		succeeded(t, b.ID)
		noTickAfterStart(t, r, a.ID, b.ID)
	})
	t.Run("worker SIGKILL", func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs gantry workers")
		}
		t.Parallel()
		r := newLockRig(t, false)
		key := fmt.Sprintf("migrate-kill-%d", time.Now().UnixNano())
		queue := "stop-kill-test"
		data := filepath.Join(t.TempDir(), "data")
		first := gantryWorker(t, env.gantry, queue, data)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		s, start := queueStarter(t, ctx, queue)
		// The holder's step runs 10 s an attempt: the attempt on the killed worker, then one on
		// the next worker, which times out and fails the stage.
		a := start(r.tickingPipeline(t, "stop_kill_a", key, "10s"))
		r.waitMark(t, "tick", a.ID)
		b := start(r.markPipeline(t, "stop_kill_b", key, "Stage"))
		waitNode(t, b.ID, "s.queue", func(n *workflows.Node) bool { return n.Status == status.Queued })
		if err := first.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = first.Wait()
		killed := time.Now().UnixNano()
		time.Sleep(500 * time.Millisecond)
		for _, m := range r.read(t) {
			if m.exec == a.ID && m.at > killed+int64(200*time.Millisecond) {
				t.Fatalf("the killed worker's step still ticked %s after the kill", time.Duration(m.at-killed))
			}
		}
		second := gantryWorker(t, env.gantry, queue, data)
		defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()
		for _, id := range []string{a.ID, b.ID} {
			if _, err := s.Result(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if res, _ := s.Result(ctx, b.ID); res.Status != status.Succeeded {
			t.Errorf("waiter: %s", res.Status)
		}
		noTickAfterStart(t, r, a.ID, b.ID)
	})
}
