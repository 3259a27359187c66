package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Built runs a script under hack/ that builds something if its cache is cold (hack/TOOL/build.sh
// when only TOOL is given) and returns the last line it printed: the path of what it built. It
// runs through hack/tool.sh, which waits for a build of the same tool already under way (make
// test builds the tools beside the tests).
func Built(tool string, script ...string) (string, error) {
	out, err := Run(Hack("tool.sh"), append([]string{tool}, script...)...)
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w", strings.Join(append([]string{tool}, script...), "/"), err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1], nil
}

// Daemon is a server a test started, writing its output to a log file; it dies with the test.
type Daemon struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartDaemon starts cmd as name, its standard output and error going to the file log.
func StartDaemon(name, log string, cmd *exec.Cmd) (*Daemon, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = f, f, DieWithTest()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &Daemon{name: name, log: log, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(d.done) }()
	return d, nil
}

// Ready calls ready every interval until it answers nil. If the daemon exits first the error
// carries its log; if timeout passes first the daemon is stopped and the error carries
// ready's last answer.
func (d *Daemon) Ready(timeout, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-d.done:
			return fmt.Errorf("%s exited: %s", d.name, d.Output())
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			d.Stop()
			return fmt.Errorf("%s not ready within %s: %v", d.name, timeout, err)
		}
	}
}

// Output is what the daemon wrote so far.
func (d *Daemon) Output() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// Stop kills the daemon and waits for it.
func (d *Daemon) Stop() {
	if d.cmd.Process != nil {
		_ = d.cmd.Process.Kill()
	}
	<-d.done
}
