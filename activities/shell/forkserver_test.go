package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forkShells are the shells fork servers run; both fork each step's subshell ahead, dash in the
// server's process group (forkInit), bash in a process group of its own (bashInit).
var forkShells = []struct {
	name, path string
	args       []string
}{{"sh", "/bin/sh", nil}, {"bash", "bash", []string{"--noprofile", "--norc"}}}

// eachForkShell runs a test against a fork server of each shell.
func eachForkShell(t *testing.T, test func(t *testing.T, f *forkServer)) {
	if !canFork {
		t.Skip("fork servers need Linux")
	}
	for _, sh := range forkShells {
		t.Run(sh.name, func(t *testing.T) {
			path := sh.path
			if path == "bash" {
				path = bashPath()
			}
			f, err := startForkServer(path, sh.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.jobs != (sh.name == "bash") {
				t.Fatalf("%s jobs: %v", path, f.jobs)
			}
			t.Cleanup(func() { f.kill(); f.close() })
			test(t, f)
		})
	}
}

func runBody(t *testing.T, f *forkServer, ctx context.Context, script string) (int, string) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	code, ran, err := f.run(ctx, forkBody(step{dir: t.TempDir(), names: []string{"A"}, values: []string{"it's"}, script: script}), pw)
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
	eachForkShell(t, testStepsAreIsolated)
}

func testStepsAreIsolated(t *testing.T, f *forkServer) {
	ctx := context.Background()
	if code, out := runBody(t, f, ctx, "X=1; cd /; echo \"$A $PWD\"; exit 3"); code != 3 || !strings.HasPrefix(out, "it's /\n") {
		t.Fatalf("code %d output %q", code, out)
	}
	if code, out := runBody(t, f, ctx, "echo \"x=${X-unset} $PWD\""); code != 0 || strings.Contains(out, "x=1") || strings.Contains(out, " /\n") {
		t.Fatalf("state leaked between steps: code %d output %q", code, out)
	}
	// A step's programs ignore no signal the worker does not (the race detector's runtime
	// ignores one), the server's names are not the step's, and it lists the traps a shell of
	// its own would (the signals its parent ignores).
	own, err := exec.Command(f.cmd.Path, append(f.cmd.Args[1:len(f.cmd.Args)-1], "-c", "trap")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if code, out := runBody(t, f, ctx, "grep SigIgn /proc/self/status; set | grep -c __gantry; echo \"$# ${__gantry_i-none}\"; trap"); code != 0 ||
		out != ignoredSignals(t)+"\n0\n0 none\n"+string(own) {
		t.Fatalf("fresh state: code %d output %q", code, out)
	}
	if !f.jobs {
		// A signal the server catches while a step runs does not cut short its wait for the step.
		if code, _ := runBody(t, f, ctx, "kill -USR1 $$; kill -TERM $$; sleep 0.2; exit 7"); code != 7 {
			t.Fatalf("signal to the server: code %d", code)
		}
	} else {
		// Each step has a process group of its own: not the server's, not the previous step's.
		var groups []string
		for i := 0; i < 2; i++ {
			code, out := runBody(t, f, ctx, "cut -d' ' -f5 /proc/self/stat")
			if code != 0 || strings.TrimSpace(out) != strconv.FormatInt(f.step.Load(), 10) || strings.TrimSpace(out) == strconv.Itoa(f.cmd.Process.Pid) {
				t.Fatalf("step group %q, step %d, server %d", out, f.step.Load(), f.cmd.Process.Pid)
			}
			groups = append(groups, out)
		}
		if groups[0] == groups[1] {
			t.Fatalf("two steps in group %s", groups[0])
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if code, _ := runBody(t, f, ctx, fmt.Sprintf("kill -%d 0; sleep 5", sig)); code != 128+int(sig) {
			t.Fatalf("kill -%d 0: code %d", sig, code)
		}
		if code, out := runBody(t, f, ctx, "echo still here"); code != 0 || out != "still here\n" {
			t.Fatalf("after kill -%d 0: code %d output %q", sig, code, out)
		}
	}
}

// A bash fork server forks from one CPU when the worker may use several (a dash server is not
// bound), and the steps of both run on all of the worker's CPUs, as in a shell of their own.
func TestForkServerCPUs(t *testing.T) {
	eachForkShell(t, testCPUs)
}

func testCPUs(t *testing.T, f *forkServer) {
	worker := cpusAllowed(t, "self")
	bound := f.jobs && strings.ContainsAny(worker, ",-")
	servers := map[string]bool{}
	for i := 0; i < 2; i++ {
		g := f
		if i == 1 {
			var err error
			if g, err = startForkServer(f.cmd.Path, f.cmd.Args[1:len(f.cmd.Args)-1], nil); err != nil {
				t.Fatal(err)
			}
			defer func() { g.kill(); g.close() }()
		}
		code, out := runBody(t, g, context.Background(), "grep Cpus_allowed_list /proc/self/status")
		if code != 0 || strings.TrimSpace(strings.TrimPrefix(out, "Cpus_allowed_list:")) != worker {
			t.Fatalf("step: code %d output %q; worker's CPUs %s", code, out, worker)
		}
		server := cpusAllowed(t, strconv.Itoa(g.cmd.Process.Pid))
		if (g.release != nil) != bound || bound == (server == worker) || bound && strings.ContainsAny(server, ",-") {
			t.Fatalf("server on CPUs %s, worker's %s, bound %v", server, worker, g.release != nil)
		}
		servers[server] = true
	}
	if bound && len(servers) != 2 {
		t.Fatalf("two servers on the same CPU: %v", servers)
	}
}

// cpusAllowed returns the Cpus_allowed_list of a process ("self" or a PID).
func cpusAllowed(t *testing.T, pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/" + pid + "/status")
	return ""
}

// When the worker dies its lifeline closes, and the watcher kills the group: no step keeps
// running behind a lost worker's back.
func TestForkServerDiesWithTheWorker(t *testing.T) {
	eachForkShell(t, testDiesWithTheWorker)
}

func testDiesWithTheWorker(t *testing.T, f *forkServer) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	go func() {
		_, _, _ = f.run(context.Background(), forkBody(step{dir: t.TempDir(), script: "sleep 60 & echo $! > " + pidFile + "; wait"}), pw)
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
	eachForkShell(t, testCancel)
}

func testCancel(t *testing.T, f *forkServer) {
	// Cancelled once the step runs (its marker file exists), however long a loaded machine
	// takes to start it: a step cancelled before it ran is another case.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	marker := filepath.Join(t.TempDir(), "started")
	cancelled := make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
		}
		cancelled <- time.Now()
		cancel()
	}()
	code, _ := runBody(t, f, ctx, "touch "+marker+"; sleep 30")
	at := <-cancelled
	if code != -1 || !f.broken.Load() || time.Since(at) > 10*time.Second {
		t.Fatalf("code %d broken %v, %s after the cancel", code, f.broken.Load(), time.Since(at))
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

// ignoredSignals is the SigIgn line of this process, which its children inherit.
func ignoredSignals(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "SigIgn:") {
			return l
		}
	}
	t.Fatal("no SigIgn in /proc/self/status")
	return ""
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

// BenchmarkForkServerStep runs `true` steps through a fork server of each shell, and as the
// baseline, in a shell of their own started per step (what the worker does without fork
// servers). Run with -benchtime 500x and alternate builds: this machine's fork cost drifts.
func BenchmarkForkServerStep(b *testing.B) {
	if !canFork {
		b.Skip("fork servers need Linux")
	}
	for _, sh := range forkShells {
		path := sh.path
		if path == "bash" {
			path = bashPath()
		}
		body := forkBody(step{dir: b.TempDir(), names: []string{"A"}, values: []string{"x"}, script: "true"})
		b.Run(sh.name+"/fork-server", func(b *testing.B) {
			f, err := startForkServer(path, sh.args, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer f.close()
			for i := 0; i < b.N; i++ {
				if code, ran, err := f.run(context.Background(), body, os.Stderr); err != nil || !ran || code != 0 {
					b.Fatal(code, ran, err)
				}
			}
		})
		b.Run(sh.name+"/own-shell", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := exec.Command(path, append(sh.args, "-c", body)...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
