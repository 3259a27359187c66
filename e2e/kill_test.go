package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/testproc"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/workflows"
)

// A worker process killed with SIGKILL in the middle of a stage is replaced by a new one and
// the pipeline finishes with nothing lost. With regular activities (10m steps) the steps that
// had finished are not run again and the running one runs once more. On the fast path (1m
// steps: local activities) the running step also runs at most once more; finished fast steps
// whose results were not stored yet (at most FastPathFlush of step time) run again too.
func TestWorkerSIGKILLMidStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	for _, timeout := range []string{"10m", "1m"} {
		t.Run(timeout, func(t *testing.T) { killMidStage(t, bin, timeout, syscall.SIGKILL) })
	}
}

// A worker stopped with SIGTERM while a fast-path step runs lets the step finish (its shutdown
// grace) and hands the stage on: the step runs once.
func TestWorkerSIGTERMFastStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	killMidStage(t, bin, "1m", syscall.SIGTERM)
}

func killMidStage(t *testing.T, bin, timeout string, sig syscall.Signal) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	step := func(id, script string) string {
		return `              - step: {type: ShellScript, name: ` + id + `, identifier: ` + id + `, timeout: ` + timeout + `, spec: {shell: Bash, source: {type: Inline, spec: {script: "` + script + `"}}, environmentVariables: [{name: MARKS, type: String, value: "` + marks + `"}]}}
`
	}
	src := `pipeline:
  name: kill
  identifier: kill_worker_` + timeout + `_` + strconv.Itoa(int(sig)) + `
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
` + step("one", `echo one >> $MARKS`) + step("two", `echo two-start >> $MARKS; sleep 3; echo two-end >> $MARKS`) + step("three", `echo three >> $MARKS`)
	p := compile(t, "kill.yaml", []byte(src), load.Options{})

	queue := "kill-test-" + timeout + "-" + strconv.Itoa(int(sig))
	startWorker := func() *exec.Cmd { return gantryWorker(t, bin, queue, filepath.Join(dir, "data")) }
	first := startWorker()
	s := &starter.Starter{Client: env.client, Internal: env.internal, TaskQueue: queue}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	execution, err := s.Start(ctx, p, workflows.Trigger{Type: "MANUAL"}, workflows.Settings{HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(readFile(marks), "two-start") {
		if ctx.Err() != nil {
			t.Fatal("step two never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	second := startWorker()
	defer func() { _ = second.Process.Signal(syscall.SIGTERM); _ = second.Wait() }()

	res, err := s.Result(ctx, execution.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s after the worker was killed", res.Status)
	}
	got := strings.Fields(readFile(marks))
	if sig == syscall.SIGTERM {
		if want := "one two-start two-end three"; strings.Join(got, " ") != want {
			t.Errorf("step runs %v, want %s: the stopping worker finishes its step", got, want)
		}
		return
	}
	if timeout == "10m" {
		want := []string{"one", "two-start", "two-start", "two-end", "three"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("step runs %v, want %v", got, want)
		}
		return
	}
	t.Logf("fast-path step runs: %v", got)
	count := map[string]int{}
	for _, m := range got {
		count[m]++
	}
	if count["two-start"] < 2 || count["two-start"] > 2 || count["two-end"] != 1 || count["three"] != 1 || count["one"] < 1 || count["one"] > 2 {
		t.Errorf("fast-path step runs %v: want step two started twice and finished once, step one (finished within the flush window) once or twice, step three once", got)
	}
	if res.Tree.Find("s.two").Worker == "" {
		t.Error("the node tree does not say which worker ran step two")
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// gantryWorker starts `gantry worker` against the test's server on queue with a data
// directory and extra flags; the test stops it.
func gantryWorker(t *testing.T, bin, queue, dataDir string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--address", env.srv.Address, "--task-queue", queue, "--data-dir", dataDir}, extra...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = testproc.DieWithTest() // a test that times out takes its workers with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}
