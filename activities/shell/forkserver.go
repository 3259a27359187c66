package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A forkServer is a shell kept running between the steps of one stage on this worker. Each step
// runs in a subshell it forks: a fresh shell state of the real /bin/sh or bash, for a fraction
// of the cost of starting a shell (measured here: dash 0.09 ms instead of 0.26 ms, bash 0.15 ms
// instead of 0.5 ms). The shell and its steps share one process group, which a timeout or abort
// kills; a watcher in the group kills it too when the worker dies (its lifeline pipe ends).
type forkServer struct {
	cmd      *exec.Cmd
	commands *os.File      // the shell's standard input: one line per step
	status   *bufio.Reader // its standard output and error: "gantry-rc:N" after each step
	statusR  *os.File
	lifeline *os.File
	broken   atomic.Bool // killed or out of step with us: not used again
	since    time.Time
	idle     *time.Timer
	// spare is an empty workspace a step of the stage left, for the next one: checking that a
	// directory is still empty costs far less than creating one (ext4: ~50 µs with removal).
	spare string
	// jobs: bash runs each step's subshell as a job of its own (bashInit), and reports its PID
	// (its process group) before the step's command is sent; dash's subshells run in the
	// shell's process group (forkInit).
	jobs bool
	step atomic.Int64 // jobs: the PID and process group of the subshell of the step
	// release gives a step's subshell the worker's CPUs back when the shell is bound to one
	// (pinToOneCPU: bash only); nil when it is not.
	release func(pid int) error
}

// forkInit is what dash runs first. Like bash (bashInit), dash forks the subshell of the next
// step ahead, right after the previous step ended and while the worker still finishes it: the
// subshell waits for one line naming its body and output, then becomes the step. It is a
// foreground subshell, so it starts with default signal handling (an asynchronous one would
// ignore SIGINT and SIGQUIT for good; dash has no job control without a terminal), in the
// shell's process group: the shell survives the signals a step sends its group (`kill 0`), and
// its traps are reset in the subshell. The watcher waits on the lifeline (fd 3): a line means a
// quiet shutdown, end of file means the worker died and the group (the running step included)
// is killed. dash's read returns 1 when a trapped signal interrupts it, so the watcher reads
// again unless a signal did not come. The loop is one command, which dash reads whole before
// it runs any of it, so a subshell reading the pipe finds nothing of the script there; end of
// the commands (the worker closed the server) ends the shell.
const forkInit = `trap : HUP INT TERM USR1 USR2 ALRM
{ trap 's=1' HUP INT TERM USR1 USR2 ALRM; while :; do s=; read -r l <&3 && exit 0; [ -n "$s" ] || kill -9 0; done; } </dev/null >/dev/null 2>&1 &
exec 3<&-
exec 4<&0
echo gantry-ready
while :; do
( IFS=' ' read -r __gantry_i __gantry_o <&4 || { kill -9 "$$"; exit 255; }; exec 4<&- </dev/null >"$__gantry_w$__gantry_o" 2>&1; . "$__gantry_w$__gantry_i" )
echo "gantry-rc:$?"
done
`

// bashInit is what bash runs first. Forking bash costs about twice what forking dash does, and
// bash reads commands from a pipe a byte at a time, so bash forks the subshell of the next step
// ahead, right after the previous step ended and while the worker still finishes it: the
// subshell waits for one line naming its body and output, then becomes the step. Job control
// (set -m) gives each step a process group of its own (so `kill 0` in a step reaches neither
// the shell nor other steps, and the shell needs no traps that could interrupt its wait) and
// leaves SIGINT and SIGQUIT at their defaults in the asynchronous subshell. The shell reports
// each subshell's PID (its group) before the step's command is sent, so a timeout or abort can
// kill it. When the worker dies, the watcher kills the shell's group and the group of each of
// its children (the running step). End of the commands (the worker closed the server) ends
// the shell. The loop is one command, which bash reads whole before it runs any of it: a
// subshell reading the pipe must find nothing of the script there.
const bashInit = `{ trap 's=1' HUP INT TERM USR1 USR2 ALRM; while :; do s=; read -r l <&3 && exit 0; [ -n "$s" ] || { read -r -a c </proc/$$/task/$$/children; kill -9 -- "${c[@]/#/-}" 0; }; done; } </dev/null >/dev/null 2>&1 &
exec 3<&-
{
set -m
exec 4<&0
echo gantry-ready
while :; do
( IFS=' ' read -r __gantry_i __gantry_o <&4 || { kill -9 "$$"; exit 255; }; exec 4<&- </dev/null >"$__gantry_w$__gantry_o" 2>&1; . "$__gantry_w$__gantry_i" ) & __gantry_p=$!
echo "gantry-pid:$__gantry_p"
wait "$__gantry_p"; __gantry_rc=$?
echo "gantry-rc:$__gantry_rc"
done
}
`

// preforkedPrefix starts a step's body: it forgets the shell's own names, so the step sees a
// shell state as fresh as a shell of its own.
const preforkedPrefix = "unset __gantry_w __gantry_i __gantry_o __gantry_p __gantry_rc; "

const (
	statusPrefix = "gantry-rc:"
	pidPrefix    = "gantry-pid:"
	// maxForkBody keeps a step's body within a pipe's default buffer, so it is written before
	// the subshell reads it; bigger scripts start their own shell.
	maxForkBody = 60 * 1024
	// forkIdle is how long an unused fork server waits for its stage's next step.
	forkIdle = 10 * time.Second
	// maxIdleForks bounds the shells kept waiting; the least recently used one goes first.
	maxIdleForks = 32
)

// startForkServer starts shell reading commands from its standard input, with the environment
// env (nil: the worker's), and waits until it is ready.
func startForkServer(shell string, args, env []string) (*forkServer, error) {
	var pipes [6]*os.File // commands r/w, status r/w, lifeline r/w
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(pipes[:])
			return nil, err
		}
		pipes[i], pipes[i+1] = r, w
	}
	cmd := exec.Command(shell, append(args, "-s")...)
	cmd.Dir = "/"
	cmd.Env = env // nil: the worker's
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0], pipes[3], pipes[3]
	cmd.ExtraFiles = []*os.File{pipes[4]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	closeAll([]*os.File{pipes[0], pipes[3], pipes[4]})
	if err != nil {
		closeAll([]*os.File{pipes[1], pipes[2], pipes[5]})
		return nil, err
	}
	f := &forkServer{cmd: cmd, commands: pipes[1], statusR: pipes[2], status: bufio.NewReader(pipes[2]), lifeline: pipes[5],
		jobs: strings.HasPrefix(filepath.Base(shell), "bash")}
	if f.jobs {
		// Dash servers are not bound: with each subshell reporting its PID (dash has no
		// $BASHPID), Sh steps were no faster end to end (3.36 against 3.28 ms over 5
		// alternating runs, with the cheapest report found).
		f.release = pinToOneCPU(cmd.Process.Pid)
	}
	_ = f.statusR.SetReadDeadline(time.Now().Add(5 * time.Second))
	init := forkInit
	if f.jobs {
		init = bashInit
	}
	// The subshells read two descriptor numbers per step, a byte at a time: the directory they
	// are in is set once.
	_, err = f.commands.WriteString("__gantry_w=/proc/" + strconv.Itoa(os.Getpid()) + "/fd/\n" + init)
	var line string
	if err == nil {
		line, err = f.status.ReadString('\n')
	}
	_ = f.statusR.SetReadDeadline(time.Time{})
	if err != nil || line != "gantry-ready\n" {
		f.kill()
		f.close()
		return nil, fmt.Errorf("start %s as a fork server: %q %v", shell, line, err)
	}
	return f, nil
}

// run runs a step body in a new subshell with standard input /dev/null and output to out. It
// returns the subshell's exit status (-1 when the shell was killed before reporting it) and
// whether the subshell read the body, which is false only when the step did not start.
func (f *forkServer) run(ctx context.Context, body string, out *os.File) (code int, ran bool, err error) {
	body = preforkedPrefix + body
	br, err := bodyPipe(body)
	if err != nil {
		return 0, false, err
	}
	defer syscall.Close(br)
	if f.jobs {
		// The subshell was forked when the previous step ended: its PID is waiting here.
		pid, err := f.expect(pidPrefix)
		if err != nil {
			f.kill()
			return 0, false, err
		}
		f.step.Store(int64(pid))
		if f.release != nil {
			if err := f.release(pid); err != nil {
				f.kill() // a step must not run on the shell's one CPU
				return 0, false, fmt.Errorf("give the step's subshell %d the worker's CPUs: %w", pid, err)
			}
		}
	}
	// The subshell opens the body and out through /proc/<worker>/fd/ (its $__gantry_w): both
	// stay open here until it reported, so their descriptor numbers cannot name anything else
	// meanwhile.
	line := strconv.Itoa(br) + " " + strconv.Itoa(fdOf(out)) + "\n"
	stop := context.AfterFunc(ctx, f.kill)
	defer stop()
	code = -1
	if _, err = f.commands.WriteString(line); err == nil {
		code, err = f.expect(statusPrefix)
	}
	// A cancelled step's status is not its own: the shell may report the step killed (137)
	// between the two kills of f.kill, before it dies itself.
	if err != nil || ctx.Err() != nil {
		code = -1
		f.kill() // killed (timeout, abort, `kill -9 0`) or gone: nothing of it may go on running
		awaitStopped(out, int(f.step.Load()), f.cmd.Process.Pid)
	}
	unread, ierr := unreadBytes(br)
	return code, ierr == nil && unread < len(body), nil
}

// expect reads the shell's output up to the next line with prefix and returns its number;
// other lines (bash's notes on jobs killed by a signal) are skipped.
func (f *forkServer) expect(prefix string) (int, error) {
	for {
		l, err := f.status.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if s, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), prefix); ok {
			return strconv.Atoi(s)
		}
	}
}

// kill ends the shell's whole process group: the shell, its watcher, the running step and what
// the stage's steps left running in the background; for bash, also the running step's group.
func (f *forkServer) kill() {
	f.broken.Store(true)
	if pid := f.step.Load(); pid > 0 {
		_ = syscall.Kill(-int(pid), syscall.SIGKILL)
	}
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
}

// close ends the shell; background processes steps left behind keep running, as they would
// after a shell of their own.
func (f *forkServer) close() {
	if f.spare != "" {
		removeWorkspace(f.spare)
	}
	_, _ = f.lifeline.WriteString("q\n")
	closeAll([]*os.File{f.commands, f.lifeline, f.statusR})
	go func() { _ = f.cmd.Wait() }()
}

func fdOf(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(x uintptr) { fd = int(x) })
	}
	return fd
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// forkPool keeps one idle fork server per stage and shell.
type forkPool struct {
	mu   sync.Mutex
	idle map[string]*forkServer
	off  error // why fork servers do not work here: steps start their own shell
}

// take returns the stage's idle fork server or starts one; nil means start a shell instead.
func (p *forkPool) take(key, shell string, args, env []string) *forkServer {
	p.mu.Lock()
	if p.off != nil {
		p.mu.Unlock()
		return nil
	}
	if f := p.idle[key]; f != nil {
		delete(p.idle, key)
		f.idle.Stop()
		p.mu.Unlock()
		return f
	}
	p.mu.Unlock()
	f, err := startForkServer(shell, args, env)
	if err != nil {
		p.disable(err)
		return nil
	}
	return f
}

// give returns a fork server after a step: it waits for the stage's next step, up to forkIdle.
func (p *forkPool) give(key string, f *forkServer) {
	if f.broken.Load() {
		f.close()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle[key] != nil || p.off != nil {
		go f.close()
		return
	}
	if p.idle == nil {
		p.idle = map[string]*forkServer{}
	}
	if len(p.idle) >= maxIdleForks {
		oldest := ""
		for k, g := range p.idle {
			if oldest == "" || g.since.Before(p.idle[oldest].since) {
				oldest = k
			}
		}
		p.idle[oldest].idle.Stop()
		go p.idle[oldest].close()
		delete(p.idle, oldest)
	}
	f.since = time.Now()
	p.idle[key] = f
	f.idle = time.AfterFunc(forkIdle, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.idle[key] == f {
			delete(p.idle, key)
			f.close()
		}
	})
}

// workspace returns the empty workspace the stage's previous step left, or "".
func (p *forkPool) workspace(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.idle[key]
	if f == nil {
		return ""
	}
	dir := f.spare
	f.spare = ""
	return dir
}

// keepWorkspace keeps a step's workspace for the stage's next step if it is still empty and
// as it was created; false means remove it.
func (p *forkPool) keepWorkspace(key, dir string) bool {
	if !emptyWorkspace(dir) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.idle[key]
	if f == nil || f.spare != "" {
		return false
	}
	f.spare = dir
	return true
}

// closeAll ends the idle fork servers; steps after it start their own shell.
func (p *forkPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, f := range p.idle {
		f.idle.Stop()
		f.close()
		delete(p.idle, k)
	}
	if p.off == nil {
		p.off = errors.New("closed")
	}
}

// end kills the idle fork servers whose key matches, and what their steps left running in
// their process groups.
func (p *forkPool) end(match func(key string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, f := range p.idle {
		if match(k) {
			f.idle.Stop()
			f.kill()
			f.close()
			delete(p.idle, k)
		}
	}
}

// disable turns fork servers off for this worker when one could not start or run a step.
func (p *forkPool) disable(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off == nil {
		p.off = err
	}
}

var errForkDidNotRun = errors.New("a subshell of the fork server did not read its step (is /proc readable?)")

// forkable reports whether a step can run in a fork server's subshell with the same result as
// in a shell of its own. A subshell differs in $$ and $0 (the server's), in bash's
// BASH_SOURCE and BASH_SUBSHELL, and in how some shell variables taken from the environment are
// treated; steps that use them start their own shell. Environment values with line breaks
// would shift the script's line numbers in error messages.
func forkable(script string, names, values []string) bool {
	if !canFork {
		return false
	}
	for _, s := range []string{"$$", "${$", "$0", "${0", "BASH_SOURCE", "BASH_SUBSHELL", "BASH_ARGV0", "BASH_EXECUTION_STRING"} {
		if strings.Contains(script, s) {
			return false
		}
	}
	for i, n := range names {
		if !shellName.MatchString(n) || shellSpecial[n] || strings.ContainsAny(values[i], "\n\r") {
			return false
		}
	}
	return true
}

// shellSpecial are variables a shell sets up itself at start, reads from the environment
// specially, or ignores there.
var shellSpecial = map[string]bool{
	"IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PPID": true,
	"PWD": true, "OLDPWD": true, "OPTIND": true, "POSIXLY_CORRECT": true, "PS4": true, "SHLVL": true,
	"BASHPID": true, "GANTRY_STEP_DIR": true,
}

// forkBody is what a subshell sources: the workspace, the step's environment and the script,
// with the preamble on the script's first line so error messages keep its line numbers.
func forkBody(st step) string {
	var b strings.Builder
	b.WriteString("cd -- " + quote(st.workDir()) + " || exit 1; export GANTRY_STEP_DIR=" + quote(st.dir))
	for i, n := range st.names {
		b.WriteString(" " + n + "=" + quote(st.values[i]))
	}
	if st.errexit {
		b.WriteString("; set -e")
	}
	b.WriteString("; eval " + quote(st.script) + "\n")
	b.WriteString(outputTail(st.outs))
	return b.String()
}

// quote single-quotes s for the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
