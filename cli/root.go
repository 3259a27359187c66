// Package cli holds the gantry commands: flag parsing, calls into the engine packages, output
// and exit codes. No pipeline logic lives here.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/codec"
)

// Exit codes shared by all commands.
const (
	ExitOK      = 0 // valid, or the run succeeded
	ExitInvalid = 1 // the input is invalid, or the run failed
	ExitUsage   = 2 // bad flags or arguments, or an I/O error
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Main runs the gantry command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printErr(stderr, ee.err)
		}
		return ee.code
	}
	printErr(stderr, err)
	return ExitUsage
}

// newRoot builds the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "gantry",
		Short:         "Run Harness-style CD pipelines on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	root.AddCommand(validateCmd(), expandCmd(), evalCmd(), runCmd(), watchCmd(), statusCmd(), listCmd(), logsCmd(), serverCmd(), uiCmd(), workerCmd(), abortCmd(), pauseCmd(true), pauseCmd(false), interveneCmd(), rerunCmd(), retryCmd(), userCmd(), loginCmd(), logoutCmd(), roleCmd(), auditCmd(), servicesCmd(), rollbackCmd(), freezeCmd(), approvalsCmd(), locksCmd(), notifyCmd(), voteCmd("APPROVE"), voteCmd("REJECT"), inputCmd(), triggersCmd(), policyCmd(), initCmd(), codecCmd(), temporalCmd(), gitCmd())
	return root
}

func printErr(stderr io.Writer, err error) {
	fmt.Fprintln(stderr, "gantry:", err)
	if strings.Contains(err.Error(), codec.Encoding) {
		fmt.Fprintln(stderr, "  hint: this execution's payloads are encrypted; pass --codec-keys FILE (or set GANTRY_CODEC_KEYS) with the key file its workers use")
	}
}
