package container

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/container/runner"
	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// The test binary plays gantry-helper for the build machine's steps.
func TestMain(m *testing.M) {
	if os.Getenv("GANTRY_TEST_STEP_HELPER") == "1" && len(os.Args) > 1 {
		switch os.Args[len(os.Args)-1] {
		case "run":
			os.Exit(runner.Run(os.Stdin, os.Stdout))
		case "supervise":
			os.Exit(runner.Supervise(os.Stdin, os.Stdout))
		}
	}
	os.Exit(m.Run())
}

func testMachine(t *testing.T) (*Machine, logs.Store) {
	t.Helper()
	store := logs.Store{Dir: t.TempDir()}
	return &Machine{Root: filepath.Join(t.TempDir(), "build"), Secrets: &secrets.Store{}, Logs: store, Name: "test/1",
		Helper: []string{os.Args[0]}, HelperEnv: []string{"GANTRY_TEST_STEP_HELPER=1"}}, store
}

// machineStep runs one step of a stage on m: its workspace made first.
func machineStep(t *testing.T, m *Machine, pod *contract.PodInput, typ string, spec map[string]any, timeout time.Duration) (contract.StepResult, error) {
	t.Helper()
	return machineStepAt(t, m, pod, "s."+strings.ToLower(typ), typ, spec, timeout)
}

// machineStepAt is machineStep for the step at path.
func machineStepAt(t *testing.T, m *Machine, pod *contract.PodInput, path, typ string, spec map[string]any, timeout time.Duration) (contract.StepResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	if pod.Workspace == "" {
		env.RegisterActivity(m.WorkspaceStart)
		v, err := env.ExecuteActivity(m.WorkspaceStart, *pod)
		if err != nil {
			t.Fatal(err)
		}
		var ws contract.Workspace
		if err := v.Get(&ws); err != nil {
			t.Fatal(err)
		}
		pod.Workspace, pod.Machine = ws.Dir, ws.Machine
	}
	raw, _ := json.Marshal(spec)
	env.RegisterActivity(m.Step)
	v, err := env.ExecuteActivity(m.Step, contract.StepInput{ExecutionID: "e-1", StepPath: path, Type: typ, Spec: raw,
		Timeout: timeout, Pod: &contract.PodStep{Pod: *pod}, Env: map[string]string{"CI": "true"}})
	var res contract.StepResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// A step without an image runs on the machine in the stage's workspace: its environment,
// secrets resolved and masked in the log, output variables (a secret one masked), a JUnit
// report; the worker's own GANTRY_ settings stay out of its environment.
func TestMachineRunStep(t *testing.T) {
	t.Setenv("GANTRY_SECRET_API_TOKEN", "s3cr3t-value")
	m, store := testMachine(t)
	pod := &contract.PodInput{ExecutionID: "e-1", Name: "gantry-s-1", Pod: plan.Pod{Machine: &plan.Machine{}}}
	res, err := machineStep(t, m, pod, "Run", map[string]any{"shell": "Bash",
		"command": `echo "token <+secrets.getValue("api_token")> in $PWD for $HARNESS_WORKSPACE ci=$CI"
env | grep -c '^GANTRY_SECRET_' || true
mkdir -p out && printf '<testsuite tests="1"><testcase name="a"/></testsuite>' > out/t.xml
NAME=gantry; TOKEN=<+secrets.getValue("api_token")>`,
		"outputVariables": []any{map[string]any{"name": "NAME"}, map[string]any{"name": "TOKEN", "type": "Secret"}},
		"reports":         map[string]any{"type": "JUnit", "spec": map[string]any{"paths": []any{"/harness/out/*.xml"}}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	outs := res.Outputs["outputVariables"].(map[string]any)
	if outs["NAME"] != "gantry" || outs["TOKEN"] != secrets.Mask {
		t.Errorf("outputs %v", outs)
	}
	if res.Tests == nil || res.Tests.Total != 1 {
		t.Errorf("tests %+v, want the report read from the workspace", res.Tests)
	}
	b, _ := os.ReadFile(store.Path("e-1", "s.run"))
	log := string(b)
	if strings.Contains(log, "s3cr3t") || !strings.Contains(log, "token "+secrets.Mask+" in "+pod.Workspace+" for "+pod.Workspace+" ci=true") {
		t.Errorf("log:\n%s", log)
	}
	if !strings.Contains(log, "\n0\n") {
		t.Errorf("the step saw the worker's GANTRY_SECRET_ variables:\n%s", log)
	}
}

// A step past its timeout fails as Timeout, its whole process group ended; a failing command
// names its exit code; a Background step runs on until the workspace is removed.
func TestMachineTimeoutExitAndBackground(t *testing.T) {
	m, _ := testMachine(t)
	pod := &contract.PodInput{ExecutionID: "e-1", Name: "gantry-s-2", Pod: plan.Pod{Machine: &plan.Machine{}}}
	pidFile := filepath.Join(t.TempDir(), "pid")
	_, err := machineStep(t, m, pod, "Run", map[string]any{"shell": "Sh", "command": "sleep 300 & echo $! > " + pidFile + "; wait"}, time.Second)
	if f := contract.Classify(err); f == nil || f.Category != contract.Timeout {
		t.Fatalf("failure %+v, want Timeout", f)
	}
	waitDead(t, pidOf(t, pidFile))
	_, err = machineStep(t, m, pod, "Run", map[string]any{"shell": "Sh", "command": "echo nope; exit 3"}, time.Minute)
	if f := contract.Classify(err); f == nil || !strings.Contains(f.Message, "exited with code 3") || !strings.Contains(f.Message, "build machine test/1") {
		t.Fatalf("failure %+v", f)
	}
	bgPid := filepath.Join(t.TempDir(), "bg")
	if _, err := machineStep(t, m, pod, "Background", map[string]any{"shell": "Sh", "command": "echo $$ > " + bgPid + "; exec sleep 300"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, bgPid)
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the background step is not running")
	}
	if err := m.WorkspaceStop(t.Context(), *pod); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if _, err := os.Stat(filepath.Dir(pod.Workspace)); !os.IsNotExist(err) {
		t.Errorf("workspace still there: %v", err)
	}
}

// A workspace whose worker died (its lock free) is removed by the next sweep, and the process
// group recorded in it ended; a workspace of a live worker (locked) is left alone.
func TestMachineSweepsDeadWorkersWorkspaces(t *testing.T) {
	m, _ := testMachine(t)
	dead := filepath.Join(m.Root, "gantry-dead")
	if err := os.MkdirAll(filepath.Join(dead, "gantry", "groups"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, "lock"), nil, 0o600)
	orphan := exec.Command("sh", "-c", "sleep 300 & wait")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	go orphan.Wait()
	if err := runner.RecordGroup(filepath.Join(dead, "gantry", "groups", "x"), orphan.Process.Pid); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(m.Root, "gantry-live")
	os.MkdirAll(live, 0o700)
	lock, _ := os.OpenFile(filepath.Join(live, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	m.Sweep()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead worker's workspace is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live worker's workspace was removed: %v", err)
	}
	waitDead(t, orphan.Process.Pid)
}

func pidOf(t *testing.T, file string) int {
	t.Helper()
	for range 100 {
		b, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitDead waits until pid has ended (a zombie no one reaps counts).
func waitDead(t *testing.T, pid int) {
	t.Helper()
	for range 300 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

// A workspace's steps go through its supervisor; one that is gone (killed) leaves the next
// step to a helper of its own, and the workspace still stops cleanly.
func TestMachineSupervisorGone(t *testing.T) {
	m, _ := testMachine(t)
	pod := &contract.PodInput{ExecutionID: "e-1", Name: "gantry-s-3", Pod: plan.Pod{Machine: &plan.Machine{}}}
	if _, err := machineStep(t, m, pod, "Run", map[string]any{"shell": "Sh", "command": "true"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	ws := m.live[pod.Name]
	if ws == nil || ws.sock == "" || ws.supervisor == nil {
		t.Fatalf("workspace %+v has no supervisor", ws)
	}
	_ = ws.supervisor.Process.Kill()
	_ = ws.supervisor.Wait()
	res, err := machineStep(t, m, pod, "Run", map[string]any{"shell": "Sh", "command": "X=after", "outputVariables": []any{map[string]any{"name": "X"}}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["outputVariables"].(map[string]any)["X"] != "after" {
		t.Errorf("outputs %v", res.Outputs)
	}
	if err := m.WorkspaceStop(t.Context(), *pod); err != nil {
		t.Fatal(err)
	}
}
