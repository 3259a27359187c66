package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/workflows"
)

// withEngine runs fn with a connection (and a worker when this process serves the embedded
// server, so the execution can react).
func withEngine(cmd *cobra.Command, conn connFlags, fn func(ctx context.Context, e *engine) error) error {
	e, err := connect(cmd.Context(), conn, false, newLogger(false))
	if err != nil {
		return usageErr("%v", err)
	}
	defer e.close()
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	if err := fn(ctx, e); err != nil {
		return &exitError{code: ExitInvalid, err: err}
	}
	return nil
}

func abortCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "abort EXECUTION",
		Short: "Abort a running execution: running steps are killed, nothing else starts, no rollback",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				if err := c.Abort(ctx, args[0], currentUser(), reason); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "abort requested for %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the execution's tree")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

// pauseCmd builds pause and resume.
func pauseCmd(pause bool) *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	use, short := "resume EXECUTION", "Resume a paused execution"
	if pause {
		use, short = "pause EXECUTION", "Pause an execution: running steps finish, no stage or step starts until it resumes"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				msg, err := c.Pause(ctx, args[0], currentUser(), pause)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", args[0], msg)
				return nil
			})
		},
	}
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func interveneCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var action string
	cmd := &cobra.Command{
		Use:   "intervene EXECUTION NODE-PATH --action ACTION",
		Short: "Decide for a node waiting for manual intervention, or mark a running step",
		Long: `Resolves a node in INTERVENTION_WAITING with one of Retry, Ignore, MarkAsSuccess, MarkAsFailure,
Abort, StageRollback, StepGroupRollback (inside a group) or PipelineRollback. A running step can be
given MarkAsFailure (its failure strategy then applies, category UserMarkedFailure); a running
Wait step also MarkAsSuccess. Anything else is refused with the reason, and nothing changes.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if action == "" {
				return usageErr("--action is required")
			}
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				msg, err := c.Intervene(ctx, args[0], workflows.InterventionRequest{Path: args[1], Action: action, User: currentUser()})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&action, "action", "", "Retry|Ignore|MarkAsSuccess|MarkAsFailure|Abort|StageRollback|StepGroupRollback|PipelineRollback")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func rerunCmd() *cobra.Command {
	return restartCmd("rerun EXECUTION", "Start a fresh execution with the same pipeline and inputs", false)
}

func retryCmd() *cobra.Command {
	return restartCmd("retry EXECUTION [--from-stage S]", "Retry a failed execution from a stage, carrying earlier stages' outputs forward", true)
}

// restartCmd builds rerun and retry: both start a new execution and follow it like run.
func restartCmd(use, short string, retry bool) *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var fromStage, output string
	var showLogs bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if rf.server != "" {
				// Through the API: the server starts it as the token's user; follow it with status.
				return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
					id, err := c.(*apiControl).restart(ctx, args[0], fromStage, retry)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s started (gantry status %s --server %s)\n", id, id, rf.server)
					return nil
				})
			}
			e, err := connect(ctx, conn, conn.localWorker(), newLogger(false))
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			trig := workflows.Trigger{Type: "MANUAL", User: currentUser()}
			var exec starter.Execution
			if retry {
				exec, err = e.starter.Retry(ctx, args[0], fromStage, trig)
			} else {
				exec, err = e.starter.Rerun(ctx, args[0], trig)
			}
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			return follow(cmd, e, exec, output, showLogs, conn.dataDir)
		},
	}
	if retry {
		cmd.Flags().StringVar(&fromStage, "from-stage", "", "stage to start from (default: the first stage that did not succeed)")
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&showLogs, "logs", false, "stream step output while steps run")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}
