//go:build linux

package shell

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
)

// ownShells are the shells a step without a fork server starts, as execute starts them.
func ownShells(t *testing.T) map[string][]string {
	return map[string][]string{"sh": {"/bin/sh"}, "bash": {bashPath(), "--noprofile", "--norc"}}
}

// waitForPID reads the PID a script wrote to file.
func waitForPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the script did not write %s", file)
		}
	}
}

// A step in a shell of its own dies with the worker: its lifeline ends, and the watcher on the
// script's first line kills the group, the script's background children included (Pdeathsig
// alone reaches only the shell).
func TestOwnShellDiesWithTheWorker(t *testing.T) {
	for name, sh := range ownShells(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			entry, err := writeScripts(dir, "sleep 60 & echo $! > "+pidFile+"; wait", nil)
			if err != nil {
				t.Fatal(err)
			}
			lifeline, keep, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh[0], append(sh[1:], filepath.Join(dir, entry))...)
			cmd.ExtraFiles = []*os.File{lifeline}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_ = lifeline.Close()
			defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
			child := waitForPID(t, pidFile)
			_ = keep.Close() // what the kernel does when the worker process ends
			for deadline := time.Now().Add(5 * time.Second); running(child); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("background child %d outlived the worker", child)
				}
			}
		})
	}
}

// The watcher is no job of the script's shell: a bare `wait` returns when the script's own
// jobs end, and the step ends while its lifeline is still open.
func TestOwnShellWaitIgnoresTheWatcher(t *testing.T) {
	for name, sh := range ownShells(t) {
		t.Run(name, func(t *testing.T) {
			var s Scripts
			dir := t.TempDir()
			out, err := os.CreateTemp(dir, "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			code, err := s.execute(ctx, step{shell: sh[0], args: sh[1:], dir: dir, script: "sleep 0.1 & wait; exit 3"}, out)
			if err != nil || code != 3 || ctx.Err() != nil {
				t.Fatalf("code %d, err %v, after %s", code, err, time.Since(start))
			}
		})
	}
}

// A cancelled step returns only once nothing of its process group can run: what its stage
// holds is released after it stopped.
func TestCancelledStepReturnsOnceItsGroupIsGone(t *testing.T) {
	for name, sh := range ownShells(t) {
		t.Run(name, func(t *testing.T) {
			var s Scripts
			dir := t.TempDir()
			out, err := os.CreateTemp(dir, "out")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			pidFile := filepath.Join(dir, "pid")
			ctx, cancel := context.WithCancel(context.Background())
			go func() { waitForPID(t, pidFile); cancel() }()
			_, _ = s.execute(ctx, step{shell: sh[0], args: sh[1:], dir: dir, script: "trap '' TERM; sleep 60 & sleep 60 & echo $$ > " + pidFile + "; wait"}, out)
			if pgid := waitForPID(t, pidFile); groupRuns(pgid) {
				t.Fatalf("process group %d still runs after the step returned", pgid)
			}
		})
	}
	eachForkShell(t, func(t *testing.T, f *forkServer) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		ctx, cancel := context.WithCancel(context.Background())
		go func() { waitForPID(t, pidFile); cancel() }()
		runBody(t, f, ctx, "sleep 60 & echo $! > "+pidFile+"; wait")
		child := waitForPID(t, pidFile)
		if running(child) || groupRuns(f.cmd.Process.Pid) {
			t.Fatalf("step process %d or the server's group still runs after the step returned", child)
		}
	})
}

// A killed process its parent has not reaped yet no longer runs.
func TestGroupRunsIgnoresZombies(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !groupRuns(pid) {
		t.Fatal("a running sleep's group is reported gone")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); groupRuns(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped sleep is reported running")
		}
	}
	_ = cmd.Wait()
	if groupRuns(pid) {
		t.Fatal("a reaped sleep's group is reported running")
	}
}
