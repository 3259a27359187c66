package cli

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/pipeline/diag"
	"github.com/gantry-cd/gantry/pipeline/entities"
	"github.com/gantry-cd/gantry/pipeline/validate"
)

func freezeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "freeze on|off|list",
		Short: "Deployment freezes: turn the global freeze on or off, list active and upcoming windows",
		Long: `While a deployment freeze holds, Deployment stages end FREEZE_FAILED before they deploy.
Freeze windows are freeze: files beside the other entity files; the global freeze stops every
deployment until it is turned off. An execution started with --override-freeze deploys anyway.`,
	}
	cmd.AddCommand(freezeOnCmd(), freezeOffCmd(), freezeListCmd())
	return cmd
}

func freezeOnCmd() *cobra.Command {
	var conn connFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "on",
		Short: "Turn the global deployment freeze on: no Deployment stage deploys until it is off",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEngine(cmd, conn, func(ctx context.Context, e *engine) error {
				st, err := e.starter.FreezeOn(ctx, currentUser(), reason)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "global deployment freeze on (by %s at %s)\n", st.By, st.Since.Local().Format(time.DateTime))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown to every refused deployment")
	conn.add(cmd)
	return cmd
}

func freezeOffCmd() *cobra.Command {
	var conn connFlags
	cmd := &cobra.Command{
		Use:   "off",
		Short: "Turn the global deployment freeze off",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withEngine(cmd, conn, func(ctx context.Context, e *engine) error {
				was, err := e.starter.FreezeOff(ctx, currentUser())
				if err != nil {
					return err
				}
				if !was {
					fmt.Fprintln(cmd.OutOrStdout(), "the global deployment freeze was off")
					return nil
				}
				fmt.Fprintln(cmd.OutOrStdout(), "global deployment freeze off")
				return nil
			})
		},
	}
	conn.add(cmd)
	return cmd
}

func freezeListCmd() *cobra.Command {
	var conn connFlags
	var dirs []string
	var ahead time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "list [--entities DIR] [-o json]",
		Short: "List the global freeze and the freeze windows active now or starting within --ahead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(dirs) == 0 {
				dirs = []string{"."}
			}
			cat, diags := entities.Load(dirs, func(f *pipeline.File) diag.List { _, d := validate.File(f); return d })
			if errs := diags.Errors(); len(errs) > 0 {
				fmt.Fprint(cmd.ErrOrStderr(), diags.Render(cat.Sources))
				return &exitError{code: ExitInvalid, err: fmt.Errorf("%d entity files are invalid", len(errs))}
			}
			return withEngine(cmd, conn, func(ctx context.Context, e *engine) error {
				g, err := e.starter.GlobalFreeze(ctx)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				now := time.Now()
				if output == "json" {
					doc := struct {
						Global  contract.GlobalFreeze `json:"global"`
						Windows []freezeRow           `json:"windows"`
					}{g, append([]freezeRow{}, freezeRows(cat, now, ahead)...)}
					return printJSON(out, doc)
				}
				if g.On {
					fmt.Fprintf(out, "global freeze ON since %s, by %s %s\n", g.Since.Local().Format(time.DateTime), g.By, g.Reason)
				} else {
					fmt.Fprintln(out, "global freeze off")
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "FREEZE\tSTATUS\tFROM\tTO\tFILE")
				for _, r := range freezeRows(cat, now, ahead) {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, r.From.Local().Format(time.DateTime), r.To.Local().Format(time.DateTime), r.File)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringArrayVar(&dirs, "entities", nil, "folder of freeze files (repeatable; default: this folder)")
	cmd.Flags().DurationVar(&ahead, "ahead", 30*24*time.Hour, "list windows that start within this long")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	return cmd
}

// freezeRow is one window of a freeze, as the list shows it.
type freezeRow struct {
	ID    string    `json:"identifier"`
	State string    `json:"status"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	File  string    `json:"file"`
}

// freezeRows are the enabled freezes' windows active at now or starting before now+ahead,
// soonest first.
func freezeRows(cat *entities.Catalog, now time.Time, ahead time.Duration) []freezeRow {
	var rows []freezeRow
	for id, f := range cat.Freezes {
		if f.Freeze.Status == "Disabled" {
			continue
		}
		for _, w := range entities.PlanFreeze(f.Freeze).Windows {
			if from, to, ok := w.At(now); ok {
				rows = append(rows, freezeRow{ID: id, State: "ACTIVE", File: f.Name, From: from, To: to})
			}
			if from, to, ok := w.Next(now); ok && from.Before(now.Add(ahead)) {
				rows = append(rows, freezeRow{ID: id, State: "upcoming", File: f.Name, From: from, To: to})
			}
		}
	}
	slices.SortFunc(rows, func(a, b freezeRow) int { return a.From.Compare(b.From) })
	return rows
}
