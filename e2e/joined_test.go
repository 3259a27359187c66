package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Only workers run steps: while `gantry server` serves a data directory, executions started
// by `gantry run` on it, and short-lived commands coming and going beside them (list, status,
// approvals), leave every step to the server's worker. Each step's log names the process that
// ran it.
func TestJoinedCommandsLeaveStepsToTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gantry binary")
	}
	data := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	server := exec.Command(env.gantry, "server", "--data-dir", data, "--listen", listen, "--ui-listen", "")
	var serverOut bytes.Buffer
	server.Stdout, server.Stderr = &serverOut, &serverOut
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var info struct{ PID int }
		if b, err := os.ReadFile(filepath.Join(data, "server.json")); err == nil && json.Unmarshal(b, &info) == nil && info.PID == server.Process.Pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up:\n%s", serverOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	pipelineFile := filepath.Join(data, "p.yaml")
	writeFile(t, pipelineFile, `pipeline:
  name: joined
  identifier: joined
  stages:
    - stage:
        name: s
        identifier: s
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: a, identifier: a, spec: {shell: Bash, source: {type: Inline, spec: {script: echo working; sleep 0.3}}}}
              - step: {type: ShellScript, name: b, identifier: b, spec: {shell: Bash, source: {type: Inline, spec: {script: echo working; sleep 0.3}}}}
`)
	const runs = 4
	var wg sync.WaitGroup
	ids := make([]string, runs)
	errs := make(chan error, 4*runs)
	stop := make(chan struct{})
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command(env.gantry, "run", pipelineFile, "--data-dir", data, "-o", "json").Output()
			var res struct {
				ExecutionID string `json:"executionId"`
				Status      string `json:"status"`
			}
			if err != nil || json.Unmarshal(out, &res) != nil || res.Status != "SUCCEEDED" {
				errs <- fmt.Errorf("gantry run %d: %v %s", i, err, out)
				return
			}
			ids[i] = res.ExecutionID
		}()
	}
	var short sync.WaitGroup
	short.Add(1)
	go func() { // short-lived commands, one after another, while the runs go on
		defer short.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			args := [][]string{{"list", "-o", "json"}, {"approvals", "-o", "json"}, {"status", "joined-1"}}[n%3]
			_ = exec.Command(env.gantry, append(args, "--data-dir", data)...).Run()
		}
	}()
	wg.Wait()
	close(stop)
	short.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	pidRe := regexp.MustCompile(`\(pid (\d+)\)`)
	want := strconv.Itoa(server.Process.Pid)
	for _, id := range ids {
		for _, step := range []string{"s.a", "s.b"} {
			b, err := os.ReadFile(filepath.Join(data, "logs", id, step+".log"))
			m := pidRe.FindSubmatch(b)
			if err != nil || m == nil {
				t.Errorf("%s %s: no log naming its process (%v)", id, step, err)
				continue
			}
			if string(m[1]) != want {
				t.Errorf("%s %s ran in process %s, not the server's (%s)", id, step, m[1], want)
			}
		}
	}
}
