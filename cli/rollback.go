package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/workflows"
)

// rollbackCmd is `gantry rollback SERVICE --env ENV [--infra ID]`: a post-deployment rollback.
func rollbackCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var f ledger.Filter
	var output string
	var showLogs bool
	cmd := &cobra.Command{
		Use:   "rollback SERVICE --env ENV [--infra ID]",
		Short: "Roll a service back to its previous successful deployment in an environment",
		Long: `Runs the rollback steps of the stage that made the service's last successful deployment in the
environment, as a new execution: the release before it runs again (docs/services.md). Kubernetes and
NativeHelm deployments, and ECS and ASG rolling deployments; the infrastructure's resource
constraint applies as to a deployment.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Service = args[0]
			if f.Environment == "" {
				return usageErr("name the environment to roll back with --env")
			}
			if rf.server != "" {
				return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
					started, err := c.(*apiControl).rollback(ctx, f)
					if err != nil {
						return err
					}
					printRollback(cmd.OutOrStdout(), started)
					fmt.Fprintf(cmd.OutOrStdout(), "%s started (gantry status %s --server %s)\n", started.ExecutionID, started.ExecutionID, rf.server)
					return nil
				})
			}
			ctx := cmd.Context()
			e, err := connect(ctx, conn, conn.localWorker(), newLogger(false))
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			rb, err := e.starter.PlanRollback(ctx, f)
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			exec, err := e.starter.StartRollback(ctx, rb, workflows.Trigger{Type: "MANUAL", User: currentUser()})
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			if output != "json" {
				printRollback(cmd.OutOrStdout(), server.RollbackStarted{ExecutionID: exec.ID, Undo: rb.Undo, Restore: rb.Restore})
			}
			return follow(cmd, e, exec, output, showLogs, conn.dataDir)
		},
	}
	cmd.Flags().StringVar(&f.Environment, "env", "", "the environment (required)")
	cmd.Flags().StringVar(&f.Infra, "infra", "", "the infrastructure, when the service runs on several of the environment's")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&showLogs, "logs", false, "stream step output while steps run")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func printRollback(out io.Writer, r server.RollbackStarted) {
	fmt.Fprintf(out, "rolling %s back in %s/%s from %s (%s) to %s (%s)\n", r.Undo.Key.Service, r.Undo.Key.Environment, r.Undo.Key.Infra,
		artifactVersion(r.Undo.Artifact), r.Undo.Execution, artifactVersion(r.Restore.Artifact), r.Restore.Execution)
}

// rollback asks the server for a post-deployment rollback.
func (a *apiControl) rollback(ctx context.Context, f ledger.Filter) (server.RollbackStarted, error) {
	var out server.RollbackStarted
	err := a.do(ctx, "POST", "/api/v1/services/"+url.PathEscape(f.Service)+"/rollback", server.RollbackRequest{Env: f.Environment, Infra: f.Infra}, &out)
	return out, err
}
