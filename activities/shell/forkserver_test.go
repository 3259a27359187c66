package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startTestForkServer(t *testing.T) *forkServer {
	t.Helper()
	if !canFork {
		t.Skip("fork servers need Linux")
	}
	f, err := startForkServer("/bin/sh", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.kill(); f.close() })
	return f
}

func runBody(t *testing.T, f *forkServer, ctx context.Context, script string) (int, string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	code, ran, err := f.run(ctx, forkBody(t.TempDir(), []string{"A"}, []string{"it's"}, script, ""), pw)
	pw.Close()
	if err != nil || !ran {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	_ = pr.SetReadDeadline(time.Now().Add(2 * time.Second))
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := pr.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return code, out.String()
}

// Each step gets a fresh subshell: what one step sets does not reach the next, and a step that
// signals its process group (`kill 0`, a common cleanup idiom) does not take the server down.
func TestForkServerStepsAreIsolated(t *testing.T) {
	f := startTestForkServer(t)
	ctx := context.Background()
	if code, out := runBody(t, f, ctx, "X=1; cd /; echo \"$A $PWD\"; exit 3"); code != 3 || !strings.HasPrefix(out, "it's /\n") {
		t.Fatalf("code %d output %q", code, out)
	}
	if code, out := runBody(t, f, ctx, "echo \"x=${X-unset} $PWD\""); code != 0 || strings.Contains(out, "x=1") || strings.Contains(out, " /\n") {
		t.Fatalf("state leaked between steps: code %d output %q", code, out)
	}
	if code, _ := runBody(t, f, ctx, "kill 0; sleep 5"); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("kill 0: code %d", code)
	}
	if code, out := runBody(t, f, ctx, "echo still here"); code != 0 || out != "still here\n" {
		t.Fatalf("after kill 0: code %d output %q", code, out)
	}
}

// When the worker dies its lifeline closes, and the watcher kills the group: no step keeps
// running behind a lost worker's back.
func TestForkServerDiesWithTheWorker(t *testing.T) {
	f := startTestForkServer(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	go func() {
		_, _, _ = f.run(context.Background(), forkBody(t.TempDir(), nil, nil, "sleep 60 & echo $! > "+pidFile+"; wait", ""), pw)
	}()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the step did not start")
		}
	}
	_ = f.lifeline.Close() // what the kernel does when the worker process ends
	for deadline := time.Now().Add(5 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("step process %d outlived the lifeline", pid)
		}
	}
}

// A cancelled step is killed with the server's group; the server is not used again.
func TestForkServerCancel(t *testing.T) {
	f := startTestForkServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	code, _ := runBody(t, f, ctx, "sleep 30")
	if code != -1 || !f.broken.Load() || time.Since(start) > 10*time.Second {
		t.Fatalf("code %d broken %v after %s", code, f.broken.Load(), time.Since(start))
	}
}

func TestForkable(t *testing.T) {
	if !canFork {
		t.Skip("fork servers need Linux")
	}
	for script, want := range map[string]bool{"echo hi": true, "echo $$": false, "cd $(dirname $0)": false, `echo "${BASH_SOURCE[0]}"`: false} {
		if got := forkable(script, nil, nil); got != want {
			t.Errorf("forkable(%q) = %v", script, got)
		}
	}
	if forkable("true", []string{"IFS"}, []string{" "}) || forkable("true", []string{"KEY"}, []string{"a\nb"}) || forkable("true", []string{"a-b"}, []string{""}) {
		t.Error("special, multi-line or non-shell-name variables must start their own shell")
	}
}

// running reports whether a process exists and is not a zombie waiting to be reaped.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
