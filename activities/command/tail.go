package command

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/sshexec"
	"github.com/gantry-cd/gantry/contract"
)

// tails follows a Script unit's tailFiles: each file from where it ended when the unit
// started (so an earlier run's lines never match), its new lines copied to the step's log,
// until its pattern appears.
type tails struct {
	r      *run
	list   []*tail
	cancel context.CancelFunc
	done   sync.WaitGroup
}

type tail struct {
	file    string
	pattern *regexp.Regexp
	seen    chan struct{}
	once    sync.Once
	lines   *logs.Lines
	buf     []byte
}

// startTails measures the unit's tailed files and starts following them before its script
// runs.
func (r *run) startTails(ctx context.Context, u unit) (*tails, error) {
	t := &tails{r: r, cancel: func() {}}
	if len(u.Spec.TailFiles) == 0 {
		return t, nil
	}
	var sizes strings.Builder
	sizes.WriteString("for f in")
	for _, tf := range u.Spec.TailFiles {
		if strings.TrimSpace(tf.TailFile) == "" {
			return nil, contract.Fail(contract.Unknown, "a tailFiles entry names no file")
		}
		re, err := compilePattern(tf.TailPattern)
		if err != nil {
			return nil, err
		}
		t.list = append(t.list, &tail{file: tf.TailFile, pattern: re, seen: make(chan struct{}),
			lines: &logs.Lines{Log: r.log, Mask: r.mask}})
		sizes.WriteString(" " + sshexec.ShellPath(tf.TailFile))
	}
	sizes.WriteString("; do { wc -c < \"$f\"; } 2>/dev/null || echo 0; done\n") // wc: GNU and BSD alike
	var out bytes.Buffer
	code, err := r.c.Run(ctx, sizes.String(), u.Spec.WorkingDirectory, nil, &out)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(out.String())
	if code != 0 || len(fields) != len(t.list) {
		return nil, contract.Fail(contract.Unknown, "host %s: measure the tailed files: %s", r.host, strings.TrimSpace(out.String()))
	}
	tctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	for i, tl := range t.list {
		size, _ := strconv.ParseInt(fields[i], 10, 64)
		tl.lines.Line(fmt.Sprintf("# following %s for %q", tl.file, tl.pattern.String()))
		t.done.Add(1)
		go func() {
			defer t.done.Done()
			// tail -F follows the name, so a file made or rotated by the script is followed too.
			_, _ = r.c.Run(tctx, fmt.Sprintf("exec tail -c +%d -F -- %s 2>/dev/null\n", size+1, sshexec.ShellPath(tl.file)), u.Spec.WorkingDirectory, nil, tl)
		}()
	}
	return t, nil
}

// Write takes a tailed file's output: each line is logged, and matched.
func (tl *tail) Write(p []byte) (int, error) {
	tl.buf = append(tl.buf, p...)
	for {
		i := bytes.IndexByte(tl.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(tl.buf[:i])
		tl.buf = tl.buf[i+1:]
		tl.lines.Line("[" + tl.file + "] " + line)
		if tl.pattern.MatchString(line) {
			tl.once.Do(func() { close(tl.seen) })
		}
	}
}

// wait waits until every pattern has appeared, or the step's time is up.
func (t *tails) wait(ctx context.Context) error {
	for _, tl := range t.list {
		select {
		case <-tl.seen:
			t.r.log.Line(fmt.Sprintf("# %s: %q appeared", tl.file, tl.pattern.String()))
		case <-ctx.Done():
			return contract.Fail(contract.Timeout, "%q did not appear in %s on host %s before the step's timeout", tl.pattern.String(), tl.file, t.r.host)
		}
	}
	return nil
}

// stop ends the tails.
func (t *tails) stop() {
	t.cancel()
	t.done.Wait()
}
