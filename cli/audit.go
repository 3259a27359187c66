package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/starter"
)

func auditCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var since, output string
	var q starter.AuditQuery
	cmd := &cobra.Command{
		Use:   "audit [--since 24h|TIME] [--execution ID] [--user U]",
		Short: "Show the audit trail: starts, aborts, pauses, interventions, decisions, inputs and refusals",
		Long: `Reads the audit trail back from Temporal: each execution's history (its start, and every abort,
pause, resume, intervention, approval vote and input accepted, with the outcome) and the refusals
the API and the Web UI kept. Nothing else stores it, so it survives restarts. --executions bounds
how many executions' histories are read, newest first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if d, err := time.ParseDuration(since); err == nil {
				q.Since = time.Now().Add(-d)
			} else if t, err := time.Parse(time.RFC3339, since); err == nil {
				q.Since = t
			} else {
				return usageErr("--since %q is neither a duration (24h) nor an RFC 3339 time", since)
			}
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				recs, err := c.Audit(ctx, q)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), recs)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tUSER\tACTION\tEXECUTION\tPATH\tOUTCOME\tDETAIL")
				for _, r := range recs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format(time.DateTime), r.User, r.Action, r.Execution, r.Path, r.Outcome, r.Detail)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "24h", "how far back: a duration or an RFC 3339 time")
	cmd.Flags().StringVar(&q.Execution, "execution", "", "one execution only")
	cmd.Flags().StringVar(&q.User, "user", "", "one user's records only")
	cmd.Flags().IntVar(&q.Executions, "executions", 100, "read at most this many executions' histories, newest first")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}
