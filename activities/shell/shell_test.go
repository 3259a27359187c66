package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/activities/shell"
	"github.com/gantry-cd/gantry/contract"
)

func runScript(t *testing.T, script string, timeout time.Duration, outs ...string) (contract.StepResult, error) {
	t.Helper()
	return runShell(t, "Bash", script, timeout, outs...)
}

func runShell(t *testing.T, shellName, script string, timeout time.Duration, outs ...string) (contract.StepResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &shell.Activity{Secrets: &secrets.Store{}, Logs: logs.Store{Dir: t.TempDir()}}
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	spec := map[string]any{"shell": shellName, "source": map[string]any{"type": "Inline", "spec": map[string]any{"script": script}}}
	var ov []map[string]any
	for _, o := range outs {
		ov = append(ov, map[string]any{"name": o, "type": "String", "value": o})
	}
	spec["outputVariables"] = ov
	raw, _ := json.Marshal(spec)
	v, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{ExecutionID: "x-1", StepPath: "s.a", Type: "ShellScript", Spec: raw, Timeout: timeout})
	var res contract.StepResult
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

func category(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

func TestTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	_, err := runScript(t, "sleep 60 & echo $! > "+pidFile+"; wait", time.Second)
	if category(err) != string(contract.Timeout) {
		t.Fatalf("want a Timeout failure, got %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("background child %d outlived the step", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExitCodesAndOutputs(t *testing.T) {
	res, err := runScript(t, "A=1; B='two words'; false", 0, "A", "B", "UNSET")
	if category(err) != string(contract.Unknown) || !strings.Contains(err.Error(), "exited with code 1") {
		t.Fatalf("a failing last command fails the step: %v", err)
	}
	res, err = runScript(t, "false; A=1; B='two words'", 0, "A", "B", "UNSET")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": "1", "B": "two words", "UNSET": ""}
	got := res.Outputs["outputVariables"].(map[string]any)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("output %s = %q, want %q", k, got[k], v)
		}
	}
	// An explicit exit ends the shell before outputs are recorded (spec 11.2.5 Decision).
	if _, err := runScript(t, "A=1; exit 0", 0, "A"); err == nil || !strings.Contains(err.Error(), "explicit exit") {
		t.Errorf("explicit exit with outputs: %v", err)
	}
}

// A relative workspace directory (gantry run --data-dir .gantry) must work: bash runs in the
// workspace, so paths handed to it are absolute.
func TestRelativeWorkDir(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("work", 0o700); err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &shell.Activity{Secrets: &secrets.Store{}, WorkDir: "work"}
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	raw := []byte(`{"source": {"type": "Inline", "spec": {"script": "exit 0"}}}`)
	if _, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{StepPath: "s.a", Spec: raw}); err != nil {
		t.Fatal(err)
	}
}

// shell: Sh runs POSIX sh, not bash; output variables work the same in both.
func TestShellSh(t *testing.T) {
	for shellName, want := range map[string]string{"Sh": "none", "Bash": "bash"} {
		res, err := runShell(t, shellName, `V=${BASH_VERSION:+bash}; V=${V:-none}`, 0, "V")
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["outputVariables"].(map[string]any)["V"]; got != want {
			t.Errorf("shell %s: ran %v, want %s", shellName, got, want)
		}
	}
}

// A background process the script leaves behind holding the output open does not hold up the
// step beyond a short grace; what the script printed is kept.
func TestBackgroundChildDoesNotHoldTheStep(t *testing.T) {
	dir := t.TempDir()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	store := logs.Store{Dir: dir}
	a := &shell.Activity{Secrets: &secrets.Store{}, Logs: store}
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	raw := []byte(`{"shell": "Sh", "source": {"type": "Inline", "spec": {"script": "echo early; (sleep 20; echo late) &"}}}`)
	start := time.Now()
	if _, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{ExecutionID: "x-1", StepPath: "s.bg", Spec: raw}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the step waited %s for its background child", d)
	}
	var out strings.Builder
	if err := store.Copy(context.Background(), &out, "x-1", "s.bg"); err != nil || !strings.Contains(out.String(), "early") {
		t.Errorf("log %q (%v)", out.String(), err)
	}
}

// Steps of one stage run in subshells of one fork server (the parent of each step's shell);
// another stage gets its own, and a script that reads $$ starts a shell of its own.
func TestStepsOfAStageShareAForkServer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &shell.Activity{Secrets: &secrets.Store{}}
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	parent := func(shellName, path, script string) string {
		t.Helper()
		spec := map[string]any{"shell": shellName, "source": map[string]any{"type": "Inline", "spec": map[string]any{"script": script}},
			"outputVariables": []map[string]any{{"name": "P", "type": "String", "value": "P"}}}
		raw, _ := json.Marshal(spec)
		v, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{ExecutionID: "x-1", StepPath: path, Spec: raw})
		if err != nil {
			t.Fatal(err)
		}
		var res contract.StepResult
		if err := v.Get(&res); err != nil {
			t.Fatal(err)
		}
		return res.Outputs["outputVariables"].(map[string]any)["P"].(string)
	}
	const ppid = `S=$(sh -c 'echo $PPID'); P=$(cut -d' ' -f4 /proc/$S/stat)`
	worker := strconv.Itoa(os.Getpid())
	for _, sh := range []string{"Sh", "Bash"} {
		a1, a2 := parent(sh, "s.a", ppid), parent(sh, "s.b", ppid)
		other := parent(sh, "t.a", ppid)
		own := parent(sh, "s.c", ppid+"; : $$")
		if a1 != a2 || a1 == worker || other == a1 || other == worker || own != worker {
			t.Errorf("%s: parents of step shells: s.a %s, s.b %s, t.a %s, s.c ($$) %s; worker %s", sh, a1, a2, other, own, worker)
		}
	}
}

// Workspaces are removed after their step (in the background): after Close none is left,
// whether the script left files in it or not.
func TestWorkspacesAreRemoved(t *testing.T) {
	work := t.TempDir()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &shell.Activity{Secrets: &secrets.Store{}, WorkDir: work}
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	for i, script := range []string{"true", "mkdir -p a/b; echo x > a/b/c; echo y > f", "A=1; exit 0"} {
		raw, _ := json.Marshal(map[string]any{"source": map[string]any{"type": "Inline", "spec": map[string]any{"script": script}}})
		if _, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{ExecutionID: "x-1", StepPath: "s.s" + strconv.Itoa(i), Spec: raw}); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// The next step of a stage may get the workspace the previous one left, but only when it is
// still empty and private; otherwise it gets a new one.
func TestWorkspaceReuseIsEmpty(t *testing.T) {
	out := t.TempDir()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a := &shell.Activity{Secrets: &secrets.Store{}}
	defer a.Close()
	env.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: contract.ShellScript})
	run := func(i int, script string) (pwd, list string) {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"shell": "Sh", "source": map[string]any{"type": "Inline", "spec": map[string]any{"script": script}},
			"outputVariables": []map[string]any{{"name": "L", "type": "String", "value": "L"}}})
		if _, err := env.ExecuteActivity(contract.ShellScript, contract.StepInput{ExecutionID: "x-1", StepPath: "s.s" + strconv.Itoa(i), Spec: raw}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(out, strconv.Itoa(i)))
		pwd, list, _ = strings.Cut(strings.TrimSpace(string(b)), " ")
		return pwd, list
	}
	record := func(i int) string {
		return `L=x; echo "$PWD $(ls -A | tr '\n' ,)" > ` + filepath.Join(out, strconv.Itoa(i))
	}
	p0, _ := run(0, record(0))
	p1, l1 := run(1, record(1)+"; touch left-behind")
	p2, l2 := run(2, record(2)+"; chmod 755 .")
	p3, l3 := run(3, record(3))
	if p0 == "" || p1 != p0 || l1 != "" {
		t.Errorf("an empty workspace is reused: %s then %s (%q)", p0, p1, l1)
	}
	if p2 == p1 || l2 != "" || p3 == p2 || l3 != "" {
		t.Errorf("a workspace with files or another mode is not reused: %s, %s (%q), %s (%q)", p1, p2, l2, p3, l3)
	}
}
