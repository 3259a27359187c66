package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/internal/doctest"
)

// sessionGuides are the guides whose examples need a data directory (runs, approvals, users,
// roles) and make up one session: each guide's code blocks run in order, as a reader would
// type them, on a fresh data directory of their own. The other guides' examples that need
// a server show a moment of a longer story (a lock held by a deployment, an execution's
// number in a cluster) and are not run; those that need nothing run in cli's
// TestDocsCommandBlocksRunAsWritten.
var sessionGuides = []string{"commands.md", "approvals.md", "access.md"}

// readOnly commands are asked again while their output lags behind (visibility is a moment
// behind the executions); the others run once.
var readOnly = map[string]bool{"approvals": true, "list": true, "status": true, "locks": true}

// Every `$ gantry` line of the session guides runs as written, from the repository's root,
// with the gantry binary and GANTRY_HOME set to the session's data directory, and prints every
// line the guide shows after it (times, durations, process IDs and host names may differ; a
// line with "..." stands for more). `gantry run` and `gantry watch` go on in a terminal of their
// own: the next line runs once the lines the guide shows for them are out, and a later `gantry
// run` once they have ended. A token a guide shows as `gty_0d31...` after `gantry user add`
// stands for the token that command printed wherever the guide uses it. A block with another
// command in it (an export, a curl) sets up what cannot be had here and is not run.
func TestGuidesRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gantry binary")
	}
	for _, g := range sessionGuides {
		t.Run(g, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "docs", g))
			if err != nil {
				t.Fatal(err)
			}
			s := &guideSession{t: t, guide: g, data: t.TempDir(), tokens: map[string]string{}}
			defer s.end()
			ran := 0
			for _, block := range doctest.Blocks(string(b)) {
				if block.Shell {
					continue
				}
				for _, ex := range block.Examples {
					if s.example(ex) {
						ran++
					}
				}
			}
			if ran == 0 {
				t.Errorf("%s: no example ran: the guide's code blocks are no longer found", g)
			}
		})
	}
}

type guideSession struct {
	t      *testing.T
	guide  string
	data   string
	tokens map[string]string // a token as the guide shows it → the one printed
	terms  []*terminal       // the runs going on in terminals of their own
}

// terminal is a command that goes on beside the session.
type terminal struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (c *terminal) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *terminal) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// example runs one example; false when it is not one this test runs.
func (s *guideSession) example(ex doctest.Example) bool {
	t := s.t
	words, err := doctest.ShellWords(ex.Command)
	if err != nil {
		t.Errorf("%s:%d: %v", s.guide, ex.Line, err)
		return false
	}
	for i := range words {
		for shown, printed := range s.tokens {
			words[i] = strings.ReplaceAll(words[i], shown, printed)
		}
	}
	vars := doctest.Env(words)
	args := words[len(vars)+1:]
	if len(args) == 0 || doctest.SelfContained[args[0]] {
		return false
	}
	cmd := exec.Command(env.gantry, args...)
	cmd.Dir = ".."
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GANTRY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "GANTRY_HOME="+s.data), vars...)
	var want []string
	for _, line := range ex.Output {
		if !doctest.Elided(line) {
			want = append(want, line)
		}
	}
	missing := func(got string) []string {
		var out []string
		for _, w := range want {
			if !doctest.Shows(got, w) {
				out = append(out, w)
			}
		}
		return out
	}
	if args[0] == "run" || args[0] == "watch" {
		if args[0] == "run" {
			s.waitTerminals(3 * time.Minute)
		}
		term := &terminal{cmd: cmd, done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = term, term
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait(); close(term.done) }()
		s.terms = append(s.terms, term)
		deadline := time.After(2 * time.Minute)
		for len(missing(term.output())) > 0 {
			select {
			case <-term.done:
			case <-deadline:
			case <-time.After(100 * time.Millisecond):
				continue
			}
			break
		}
		if m := missing(term.output()); len(m) > 0 {
			t.Errorf("%s:%d: `%s` does not print\n  %s\nit printed:\n%s", s.guide, ex.Line, ex.Command, strings.Join(m, "\n  "), term.output())
		}
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
		c.Dir, c.Env = cmd.Dir, cmd.Env
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		cancel()
		got := stdout.String() + stderr.String()
		m := missing(got)
		if len(m) == 0 || !readOnly[args[0]] || time.Now().After(deadline) {
			if len(m) > 0 {
				t.Errorf("%s:%d: `%s` (%v) does not print\n  %s\nit printed:\n%s", s.guide, ex.Line, ex.Command, err, strings.Join(m, "\n  "), got)
			}
			if len(args) > 1 && args[0] == "user" && args[1] == "add" {
				s.takeToken(ex, stdout.String())
			}
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// takeToken records the token `gantry user add` printed for the one the guide shows.
func (s *guideSession) takeToken(ex doctest.Example, printed string) {
	for _, line := range ex.Output {
		if shown := strings.TrimSpace(line); strings.HasPrefix(shown, "gty_") {
			s.tokens[shown] = strings.TrimSpace(printed)
		}
	}
}

// waitTerminals waits for the runs going on to end.
func (s *guideSession) waitTerminals(limit time.Duration) {
	deadline := time.After(limit)
	for _, term := range s.terms {
		select {
		case <-term.done:
		case <-deadline:
			s.t.Errorf("%s: `gantry %s` did not end within %s:\n%s", s.guide, strings.Join(term.cmd.Args[1:], " "), limit, term.output())
			return
		}
	}
}

// end waits for the session's runs and stops what is left.
func (s *guideSession) end() {
	s.waitTerminals(3 * time.Minute)
	for _, term := range s.terms {
		_ = term.cmd.Process.Kill()
		<-term.done
	}
}
