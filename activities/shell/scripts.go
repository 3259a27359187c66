package shell

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gantry-cd/gantry/activities/logs"
	"github.com/gantry-cd/gantry/activities/secrets"
)

// Scripts runs shell commands as ShellScript steps run theirs, for steps of other kinds (the
// Run steps of a build machine): in a subshell of a fork server kept per stage where the
// command allows, else in a shell of its own; its output logged line by line with secrets
// masked, its process group killed on timeout or cancellation and when the worker dies.
type Scripts struct {
	// Env is the shells' environment before a command's own variables; nil is the worker's.
	Env   []string
	forks forkPool
}

// Command is one command to run.
type Command struct {
	// Stage names the fork server the command may use: a stage's commands share one per shell.
	Stage string
	// Shell is Sh or Bash.
	Shell string
	// Dir is the working directory.
	Dir string
	// Scratch is a directory of Gantry's own for the command (made and removed here when it
	// needs one): the script, when it starts a shell of its own, and the output variables.
	Scratch string
	Env     map[string]string
	Script  string
	// Errexit runs the script with set -e, as a container step's command runs.
	Errexit bool
	// Outputs are shell variables whose values the script leaves, read when it ends.
	Outputs []string
}

// Result is how a command ended.
type Result struct {
	// Code is the exit status: 128+N when a signal N ended it.
	Code int
	// Last is the command's last line of output, for the failure message.
	Last string
	// Outputs are the values of Command.Outputs, nil when the command failed or ended its
	// shell (an explicit exit) before they were read.
	Outputs map[string]string
}

// Interpreter returns the program and arguments that run a script of shell (Sh or Bash),
// false for another shell.
func Interpreter(shell string) (string, []string, bool) {
	switch strings.ToLower(shell) {
	case "sh":
		// POSIX sh (dash on Debian) starts in less than half bash's time.
		return "/bin/sh", nil, true
	case "bash":
		return bashPath(), []string{"--noprofile", "--norc"}, true
	}
	return "", nil, false
}

// Run runs c, logging its output to log with mask applied. The error is an engine fault (the
// command may not have run, or its output was lost) or the context's.
func (s *Scripts) Run(ctx context.Context, c Command, log *logs.Writer, mask *secrets.Masker) (Result, error) {
	shell, args, ok := Interpreter(c.Shell)
	if !ok {
		return Result{}, fmt.Errorf("shell %q is not Sh or Bash", c.Shell)
	}
	st := step{key: shell + "\x00" + c.Stage, shell: shell, args: args, dir: c.Scratch, work: c.Dir,
		script: c.Script, outs: c.Outputs, errexit: c.Errexit}
	for _, n := range slices.Sorted(maps.Keys(c.Env)) {
		st.names, st.values = append(st.names, n), append(st.values, c.Env[n])
	}
	// A forked command without outputs writes nothing: the directory is made only when needed
	// (a shell of its own makes it for its script).
	if len(c.Outputs) > 0 {
		if err := os.MkdirAll(c.Scratch, 0o700); err != nil {
			return Result{}, fmt.Errorf("%w: %v", errWorkspace, err)
		}
	}
	defer os.RemoveAll(c.Scratch)
	var err error
	var res Result
	res.Last, res.Code, err = s.run(ctx, st, log, mask)
	if err != nil || ctx.Err() != nil || res.Code != 0 || len(c.Outputs) == 0 {
		return res, errors.Join(err, ctx.Err())
	}
	b, err := os.ReadFile(filepath.Join(c.Scratch, outputFile))
	if errors.Is(err, os.ErrNotExist) {
		return res, nil // the script ended its shell before they were read
	}
	if err != nil {
		return res, err
	}
	values := strings.Split(string(b), "\x00")
	res.Outputs = make(map[string]string, len(c.Outputs))
	for i, n := range c.Outputs {
		if i < len(values) {
			res.Outputs[n] = values[i]
		}
	}
	return res, nil
}

// EndStage ends the idle fork servers of a stage whose steps are over, and what its steps left
// running in their process groups.
func (s *Scripts) EndStage(stage string) {
	s.forks.end(func(key string) bool {
		_, k, _ := strings.Cut(key, "\x00")
		return k == stage
	})
}

// Close ends the idle fork servers; later commands start shells of their own.
func (s *Scripts) Close() { s.forks.closeAll() }
