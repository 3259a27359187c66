package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/starter"
)

func locksCmd() *cobra.Command {
	var conn connFlags
	var output string
	cmd := &cobra.Command{
		Use:   "locks [-o json]",
		Short: "List the Queue keys and resource constraints held now, with their holders and waiters",
		Long: `Lists the locks that run now: Queue step keys (kind queue) and Deployment stages' resource
constraints (kind infrastructure, keyed service/environment/connector/infrastructure), each with
the execution and node holding it, since when, and the executions waiting, in the order they
will get it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEngine(cmd, conn, func(ctx context.Context, e *engine) error {
				locks, err := e.starter.Locks(ctx)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), struct {
						Locks []starter.LockView `json:"locks"`
					}{append([]starter.LockView{}, locks...)})
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tKEY\tHELD BY\tSINCE\tWAITING")
				for _, l := range locks {
					since := "-"
					if !l.Since.IsZero() {
						since = l.Since.Local().Format(time.DateTime)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Kind, l.Key, requests(l.Holders), since, requests(l.Waiting))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	return cmd
}

// requests names lock requests as "execution (node)", the first five and how many more.
func requests(rs []contract.LockRequest) string {
	if len(rs) == 0 {
		return "-"
	}
	var names []string
	for i, r := range rs {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(rs)-5))
			break
		}
		names = append(names, r.Execution+" ("+r.Node+")")
	}
	return strings.Join(names, ", ")
}
