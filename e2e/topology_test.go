package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gantry-cd/gantry/internal/s3test"
	"github.com/gantry-cd/gantry/internal/topotest"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/status"
)

// topologyPipeline has three stages: build records its worker, waits for the test's go-build
// file and exports a version; deploy runs on whichever worker
// takes it, records that worker ($PPID) and waits for the test's go file; sign_off waits for an
// approval and then reports what the earlier stages produced.
func topologyPipeline(marks string) string {
	env := `environmentVariables: [{name: MARKS, type: String, value: "` + marks + `"}]`
	return `pipeline:
  name: topology
  identifier: topology
  stages:
    - stage:
        name: build
        identifier: build
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: version, identifier: version, spec: {shell: Bash, ` + env + `, source: {type: Inline, spec: {script: "echo $PPID >> $MARKS/build; while [ ! -f $MARKS/go-build ]; do sleep 0.05; done; V=1.4.$((6*7))"}}, outputVariables: [{name: v, type: String, value: V}]}}
    - stage:
        name: deploy
        identifier: deploy
        type: Custom
        spec:
          execution:
            steps:
              - step: {type: ShellScript, name: roll, identifier: roll, spec: {shell: Bash, ` + env + `, source: {type: Inline, spec: {script: "echo deploy attempt on $PPID; echo $PPID >> $MARKS/deploy; while [ ! -f $MARKS/go ]; do sleep 0.05; done; R=rolled-<+pipeline.stages.build.spec.execution.steps.version.output.outputVariables.v>-on-$PPID"}}, outputVariables: [{name: r, type: String, value: R}]}}
    - stage:
        name: sign_off
        identifier: sign_off
        type: Custom
        spec:
          execution:
            steps:
              - step:
                  type: HarnessApproval
                  name: gate
                  identifier: gate
                  timeout: 1h
                  spec:
                    approvalMessage: ship it?
                    includePipelineExecutionHistory: false
                    approvers: {userGroups: [release_managers], minimumCount: 1, disallowPipelineExecutor: false}
              - step: {type: ShellScript, name: report, identifier: report, spec: {shell: Bash, source: {type: Inline, spec: {script: "OUT=<+pipeline.stages.build.spec.execution.steps.version.output.outputVariables.v>/<+pipeline.stages.deploy.spec.execution.steps.roll.output.outputVariables.r>"}}, outputVariables: [{name: out, type: String, value: OUT}]}}
`
}

// The production topology as processes on PostgreSQL: a worker stopped with SIGTERM lets its
// running step finish; a worker SIGKILLed while its step runs is covered by the other worker
// with no output lost; the Temporal server restarted while an approval waits keeps the
// execution, which finishes once approved through gantry server.
func TestTopologyWorkerKillAndServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and four gantry processes")
	}
	// Every process ships step logs to a real S3-compatible server; the API tier, which runs
	// no step, reads them from there.
	logsS3, err := s3test.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer logsS3.Stop()
	if err := logsS3.Bucket(context.Background(), "gantry-logs"); err != nil {
		t.Fatal(err)
	}
	logEnv := []string{"GANTRY_LOGS_BUCKET=gantry-logs/topology", "GANTRY_LOGS_ENDPOINT=" + logsS3.Endpoint, "GANTRY_LOGS_REGION=" + s3test.Region,
		"GANTRY_LOGS_ACCESS_KEY_ID=" + s3test.AccessKey, "GANTRY_LOGS_SECRET_REF=logs_key", "GANTRY_SECRET_LOGS_KEY=" + s3test.SecretKey}
	topo, bin := startTopology(t, append(logEnv, "GANTRY_MAX_RUNNING_PER_PIPELINE=1")...)
	marks := t.TempDir()
	token := addUser(t, bin, filepath.Join(topo.Dir, "server"))

	c, err := client.Dial(client.Options{HostPort: topo.Address, Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &starter.Starter{Client: c}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var started struct {
		ExecutionID string `json:"executionId"`
	}
	apiCall(t, topo.API, token, "POST", "/api/v1/executions", map[string]any{"yaml": topologyPipeline(marks)}, http.StatusCreated, &started)
	id := started.ExecutionID

	// SIGTERM the worker running the build step: it takes no new work but finishes the step.
	building := waitForLine(t, ctx, filepath.Join(marks, "build"), 1)
	graceful, _ := workerByPID(t, topo, building)
	stopped := make(chan error, 1)
	go func() { stopped <- topo.StopComponent(graceful, syscall.SIGTERM) }()
	for !strings.Contains(topo.Log(graceful), "worker stopping") {
		if ctx.Err() != nil {
			t.Fatalf("%s never began to stop", graceful)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(marks, "go-build"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, s, id, "build.version", status.Succeeded)
	if runs := strings.Fields(readFile(filepath.Join(marks, "build"))); len(runs) != 1 {
		t.Fatalf("the build step ran %d times (%v): the stopping worker should have finished it", len(runs), runs)
	}
	if err := topo.StartComponent(graceful); err != nil {
		t.Fatal(err)
	}

	// Kill whichever worker runs the deploy step, then let the step finish.
	first := waitForLine(t, ctx, filepath.Join(marks, "deploy"), 1)
	victim, survivor := workerByPID(t, topo, first)
	if err := topo.StopComponent(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second := waitForLine(t, ctx, filepath.Join(marks, "deploy"), 2)
	if pid, _ := topo.PID(survivor); second != strconv.Itoa(pid) {
		t.Fatalf("the deploy step ran again in process %s, not on %s (%d)", second, survivor, pid)
	}

	// A second execution waits for the pipeline's one place (the server runs with
	// GANTRY_MAX_RUNNING_PER_PIPELINE=1); its marks let it through once it runs.
	waitFor(t, ctx, s, id, "sign_off.gate", status.ApprovalWaiting)
	marks2 := t.TempDir()
	for _, f := range []string{"go-build", "go"} {
		if err := os.WriteFile(filepath.Join(marks2, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var queued struct {
		ExecutionID string `json:"executionId"`
	}
	apiCall(t, topo.API, token, "POST", "/api/v1/executions", map[string]any{"yaml": topologyPipeline(marks2)}, http.StatusCreated, &queued)
	for tree, _ := s.Tree(ctx, queued.ExecutionID); tree == nil || tree.Status != status.Queued || tree.Resource == nil || tree.Resource.Ahead != 0; tree, _ = s.Tree(ctx, queued.ExecutionID) {
		if ctx.Err() != nil {
			t.Fatalf("the second execution never queued: %+v", tree)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Restart Temporal and the API tier while the approval waits and the second execution is
	// queued; approve through the API tier afterwards.
	for _, c := range []string{"server", "temporal"} {
		if err := topo.StopComponent(c, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"temporal", "server"} {
		if err := topo.StartComponent(c); err != nil {
			t.Fatal(err)
		}
	}
	// The list reads Temporal's visibility, which may take a moment to answer again.
	for listed := ""; listed != string(status.Queued); time.Sleep(100 * time.Millisecond) {
		var page struct{ Executions []starter.Summary }
		apiCall(t, topo.API, token, "GET", "/api/v1/executions?pipeline=topology", nil, http.StatusOK, &page)
		if i := slices.IndexFunc(page.Executions, func(e starter.Summary) bool { return e.ID == queued.ExecutionID }); i >= 0 {
			listed = page.Executions[i].Status
		}
		if ctx.Err() != nil {
			t.Fatalf("after the restarts the second execution is not listed QUEUED: %+v", page.Executions)
		}
	}
	apiCall(t, topo.API, token, "POST", "/api/v1/executions/"+id+"/approve", map[string]any{"path": "sign_off.gate", "comments": "after restart"}, http.StatusOK, nil)

	res, err := s.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Succeeded {
		t.Fatalf("pipeline %s; worker logs:\n%s", res.Status, topo.Log(survivor))
	}
	want := "1.4.42/rolled-1.4.42-on-" + second
	if got := res.Tree.Find("sign_off.report").Outputs["outputVariables"].(map[string]any)["out"]; got != want {
		t.Errorf("report output %v, want %s", got, want)
	}
	if runs := strings.Fields(readFile(filepath.Join(marks, "deploy"))); len(runs) != 2 {
		t.Errorf("deploy step ran %d times, want 2 (the killed attempt and its retry): %v", len(runs), runs)
	}
	// The queued execution takes the place the first gave back, once.
	waitFor(t, ctx, s, queued.ExecutionID, "sign_off.gate", status.ApprovalWaiting)
	apiCall(t, topo.API, token, "POST", "/api/v1/executions/"+queued.ExecutionID+"/approve", map[string]any{"path": "sign_off.gate"}, http.StatusOK, nil)
	if res, err := s.Result(ctx, queued.ExecutionID); err != nil || res.Status != status.Succeeded || !hasNote(res.Tree.Notes, "queued ") {
		t.Fatalf("the execution queued across the restarts: %v %v", res, err)
	}
	if runs := strings.Fields(readFile(filepath.Join(marks2, "deploy"))); len(runs) != 1 {
		t.Errorf("the queued execution's deploy step ran %d times, want 1", len(runs))
	}

	// The killed worker's attempt reaches the bucket when it starts again; then the API and
	// `gantry logs` on a data directory that ran nothing show both attempts, in order.
	if err := topo.StartComponent(victim); err != nil {
		t.Fatal(err)
	}
	wantFirst := "deploy attempt on " + first + "\n"
	wantRetry := "deploy attempt on " + second + "\n"
	var log string
	for {
		log = apiText(t, topo.API, token, "/api/v1/executions/"+id+"/logs/deploy.roll")
		if strings.Contains(log, wantFirst) && strings.Contains(log, wantRetry) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if i, j := strings.Index(log, wantFirst), strings.Index(log, wantRetry); i < 0 || j < i {
		t.Fatalf("the API's log of deploy.roll lacks an attempt or has them out of order:\n%s", log)
	}
	cmd := exec.Command(bin, "logs", id, "deploy.roll", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), logEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != log {
		t.Fatalf("gantry logs from the bucket: %v\n%s\nwant the API's\n%s", err, out, log)
	}
	for _, text := range []string{string(out), topo.Log("server")} {
		if strings.Contains(text, s3test.SecretKey) {
			t.Fatal("the log bucket's secret key appears in output")
		}
	}
}

// apiText GETs a text resource of the API.
func apiText(t testing.TB, base, token, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// startTopology starts the topology for one test, with the tests' gantry binary; vars
// (NAME=VALUE) are added to its components' environment.
func startTopology(t testing.TB, vars ...string) (*topotest.Topology, string) {
	t.Helper()
	bin := env.gantry
	topo, err := topotest.Start(t.TempDir(), bin, vars...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"temporal", "worker-1", "worker-2", "server"} {
				t.Logf("--- %s log (last 3000 bytes):\n%s", name, tail(topo.Log(name), 3000))
			}
		}
		topo.Stop()
	})
	return topo, bin
}

// addUser creates a release manager in the server's identity file and returns the token.
func addUser(t testing.TB, bin, dataDir string) string {
	t.Helper()
	out, err := exec.Command(bin, "user", "add", "releaser", "--group", "release_managers", "--data-dir", dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("gantry user add: %v\n%s", err, out)
	}
	tok := regexp.MustCompile(`gty_[A-Za-z0-9_-]+`).FindString(string(out))
	if tok == "" {
		t.Fatalf("no token in %q", out)
	}
	return tok
}

func apiCall(t testing.TB, base, token, method, path string, body any, want int, into any) {
	t.Helper()
	if err := call(base, token, method, path, body, want, into); err != nil {
		t.Fatal(err)
	}
}

// waitForLine waits until file has n lines and returns the n-th.
func waitForLine(t testing.TB, ctx context.Context, file string, n int) string {
	t.Helper()
	for {
		if lines := strings.Fields(readFile(file)); len(lines) >= n {
			return lines[n-1]
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never had %d lines", file, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workerByPID names the worker process with pid and the other one.
func workerByPID(t testing.TB, topo *topotest.Topology, pid string) (victim, other string) {
	t.Helper()
	for i, w := range topotest.Workers {
		if p, err := topo.PID(w); err == nil && strconv.Itoa(p) == pid {
			return w, topotest.Workers[1-i]
		}
	}
	t.Fatalf("the step ran in process %s, which is no topology worker", pid)
	return "", ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// `gantry run --address` against a cluster leaves steps to the cluster's workers: a client that
// exits when its pipeline ends must not take other executions' steps with it.
func TestRunAgainstClusterRunsNoWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gantry binary")
	}
	bin := env.gantry
	data := t.TempDir()
	cmd := exec.Command(bin, "run", "../examples/01-hello.yaml", "--address", env.srv.Address, "--data-dir", data, "--logs", "--output", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gantry run: %v\n%s", err, stderr.String())
	}
	var res struct {
		ExecutionID string `json:"executionId"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.ExecutionID == "" {
		t.Fatalf("run output %s: %v", out, err)
	}
	if !strings.Contains(stderr.String(), "step logs stay with the workers") {
		t.Errorf("no note about remote logs: %s", stderr.String())
	}
	if local, _ := filepath.Glob(filepath.Join(data, "logs", "*", "*.log")); len(local) > 0 {
		t.Errorf("the client ran steps itself: %v", local)
	}
	if remote, _ := filepath.Glob(filepath.Join(env.logs.Dir, res.ExecutionID, "*.log")); len(remote) == 0 {
		t.Errorf("no step of %s ran on the cluster's worker", res.ExecutionID)
	}
}
