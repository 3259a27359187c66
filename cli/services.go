package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/server"
)

// servicesCmd is `gantry services`: what runs where, a service's deployments, DORA.
func servicesCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var f ledger.Filter
	var output string
	cmd := &cobra.Command{
		Use:   "services [--env ENV] [--env-type Production|PreProduction]",
		Short: "List the services deployed: each environment and infrastructure with its version and last deployment",
		Long: `Reads the deployments ledger (docs/services.md): every Deployment stage that ended recorded its
service, artifact, environment, infrastructure, execution and outcome there. VERSION is what the last
successful deployment deployed; LAST is the newest deployment, whatever its outcome.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				targets, err := c.Ledger().Targets(ctx, f)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), map[string]any{"services": server.GroupServices(targets)})
				}
				return printTargets(cmd.OutOrStdout(), targets)
			})
		},
	}
	cmd.Flags().StringVar(&f.Environment, "env", "", "one environment only")
	cmd.Flags().StringVar(&f.EnvironmentType, "env-type", "", "Production or PreProduction environments only")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	cmd.AddCommand(serviceShowCmd(), doraCmd())
	return cmd
}

func printTargets(out io.Writer, targets []contract.LedgerSummary) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tENVIRONMENT\tINFRASTRUCTURE\tVERSION\tINSTANCES\tDEPLOYED\tLAST\tBY\tEXECUTION")
	for _, t := range targets {
		version, deployed := "-", "-"
		if c := t.Current; c != nil {
			version, deployed = artifactVersion(c.Artifact), c.Ended.Local().Format(time.DateTime)
		}
		last, by, exec := "-", "-", "-"
		if l := t.Last; l != nil {
			last, by, exec = l.Outcome+" "+l.Ended.Local().Format(time.DateTime), startedBy(*l), l.Execution
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Key.Service, t.Key.Environment, envType(t.EnvironmentType), t.Key.Infra, version,
			ledger.InstancesText(t.Instances), deployed, last, by, exec)
	}
	return tw.Flush()
}

// printInstances lists each target's last reading: when, its drift or failure, its instances.
func printInstances(out io.Writer, read []contract.InstanceSnapshot) error {
	for _, s := range read {
		fmt.Fprintf(out, "\nInstances in %s/%s: %s", s.Key.Environment, s.Key.Infra, ledger.InstancesText(&s))
		if !s.SyncedAt.IsZero() {
			fmt.Fprintf(out, ", read %s", s.SyncedAt.Local().Format(time.DateTime))
		}
		fmt.Fprintln(out)
		if s.Error != "" {
			fmt.Fprintf(out, "  the read at %s failed: %s\n", s.TriedAt.Local().Format(time.DateTime), s.Error)
		}
		for _, d := range s.Drift {
			fmt.Fprintf(out, "  drift: %s\n", d)
		}
		if len(s.Instances) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tARTIFACT\tWHERE\tREADY")
		for _, i := range s.Instances {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%t\n", i.Name, i.Artifact, cmp.Or(i.Node, "-"), i.Ready)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if n := s.Count - len(s.Instances); n > 0 {
			fmt.Fprintf(out, "  and %d more\n", n)
		}
	}
	return nil
}

func artifactVersion(a *contract.LedgerArtifact) string {
	if a == nil || a.Version == "" {
		return "-"
	}
	return a.Version
}

func envType(t string) string {
	if t == "Production" {
		return "prod"
	}
	if t == "" {
		return "?"
	}
	return "pre-prod"
}

func startedBy(d contract.DeploymentRecord) string {
	if d.StartedBy != "" {
		return d.StartedBy
	}
	if d.Trigger != "" {
		return strings.ToLower(d.Trigger)
	}
	return "-"
}

func serviceShowCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var f ledger.Filter
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "show SERVICE [--env ENV] [--infra ID] [--limit N]",
		Short: "Show a service: where it runs, its instances and its newest deployments",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Service = args[0]
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				lv := c.Ledger()
				targets, err := lv.Targets(ctx, f)
				if err != nil {
					return err
				}
				if len(targets) == 0 {
					return fmt.Errorf("service %s has no deployment recorded; `gantry services` lists those that have", f.Service)
				}
				deps, err := lv.Deployments(ctx, f, limit)
				if err != nil {
					return err
				}
				read, err := lv.Instances(ctx, f)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), map[string]any{"service": server.GroupServices(targets)[0], "deployments": deps, "instances": read})
				}
				out := cmd.OutOrStdout()
				if err := printTargets(out, targets); err != nil {
					return err
				}
				if err := printInstances(out, read); err != nil {
					return err
				}
				fmt.Fprintln(out)
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ENDED\tENVIRONMENT\tINFRASTRUCTURE\tVERSION\tOUTCOME\tTOOK\tBY\tEXECUTION\tSTAGE")
				for _, d := range deps {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Ended.Local().Format(time.DateTime), d.Key.Environment, d.Key.Infra,
						artifactVersion(d.Artifact), d.Outcome, d.Ended.Sub(d.Started).Round(time.Second), startedBy(d), d.Execution, d.Stage)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&f.Environment, "env", "", "one environment only")
	cmd.Flags().StringVar(&f.Infra, "infra", "", "one infrastructure only")
	cmd.Flags().IntVar(&limit, "limit", 20, "newest deployments shown")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func doraCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var f ledger.Filter
	var output, from, to string
	var days int
	cmd := &cobra.Command{
		Use:   "dora [SERVICE] [--env ENV] [--days 30 | --from DATE --to DATE]",
		Short: "Show the DORA figures: deployment frequency, lead time for changes, change failure rate, time to restore",
		Long: `Computes the four keys from the deployments ledger over whole days (UTC), for production
environments unless --env or --env-type says otherwise (docs/services.md defines each figure).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				f.Service = args[0]
			}
			if f.Environment == "" && f.EnvironmentType == "" {
				f.EnvironmentType = "Production"
			}
			end := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
			if to != "" {
				t, err := time.Parse(time.DateOnly, to)
				if err != nil {
					return usageErr("--to %q is not a date (2026-11-30)", to)
				}
				end = t
			}
			start := end.AddDate(0, 0, -days)
			if from != "" {
				t, err := time.Parse(time.DateOnly, from)
				if err != nil || !t.Before(end) {
					return usageErr("--from %q is not a date before --to", from)
				}
				start = t
			}
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				d, err := c.Ledger().DORA(ctx, f, start, end)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), d)
				}
				printDORA(cmd.OutOrStdout(), d)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&f.Environment, "env", "", "one environment only")
	cmd.Flags().StringVar(&f.Infra, "infra", "", "one infrastructure only")
	cmd.Flags().StringVar(&f.EnvironmentType, "env-type", "", "Production (the default without --env) or PreProduction")
	cmd.Flags().IntVar(&days, "days", 30, "the window's length in days, up to today")
	cmd.Flags().StringVar(&from, "from", "", "the window's first day (a date)")
	cmd.Flags().StringVar(&to, "to", "", "the day after the window (a date; default tomorrow)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func printDORA(out io.Writer, d ledger.DORA) {
	fmt.Fprintf(out, "%s to %s (%d days): %d deployments, %d succeeded, %d failed (%d rolled back), %d aborted\n",
		d.From.Format(time.DateOnly), d.To.AddDate(0, 0, -1).Format(time.DateOnly), d.Days, d.Deployments, d.Succeeded, d.Failed, d.RolledBack, d.Aborted)
	fmt.Fprintf(out, "deployment frequency   %.2f per day\n", d.FrequencyPerDay)
	fmt.Fprintf(out, "lead time for changes  %s\n", meanDuration(d.LeadTimeSeconds, d.LeadSamples, "deployment whose commit time is known"))
	if d.ChangeFailureRate != nil {
		fmt.Fprintf(out, "change failure rate    %.1f%%\n", *d.ChangeFailureRate*100)
	} else {
		fmt.Fprintln(out, "change failure rate    - (no deployment)")
	}
	fmt.Fprintf(out, "time to restore        %s\n", meanDuration(d.RestoreSeconds, d.Restores, "restore"))
}

func meanDuration(secs *float64, n int, what string) string {
	if secs == nil {
		return "- (no " + what + ")"
	}
	return fmt.Sprintf("%s (mean of %d)", (time.Duration(*secs) * time.Second).Round(time.Second), n)
}

// apiLedger reads the ledger through a server's API.
type apiLedger struct{ a *apiControl }

func (a *apiControl) Ledger() ledger.View { return apiLedger{a} }

func filterValues(f ledger.Filter) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"service": f.Service, "env": f.Environment, "infra": f.Infra, "envType": f.EnvironmentType} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

func (l apiLedger) Targets(ctx context.Context, f ledger.Filter) ([]contract.LedgerSummary, error) {
	var out struct {
		Services []server.Service `json:"services"`
	}
	v := filterValues(f)
	v.Del("service")
	if err := l.a.do(ctx, "GET", "/api/v1/services?"+v.Encode(), nil, &out); err != nil {
		return nil, err
	}
	var targets []contract.LedgerSummary
	for _, s := range out.Services {
		if f.Service == "" || s.Service == f.Service {
			targets = append(targets, s.Targets...)
		}
	}
	return targets, nil
}

func (l apiLedger) Deployments(ctx context.Context, f ledger.Filter, limit int) ([]contract.DeploymentRecord, error) {
	v := filterValues(f)
	v.Del("service")
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Deployments []contract.DeploymentRecord `json:"deployments"`
	}
	return out.Deployments, l.a.do(ctx, "GET", "/api/v1/services/"+url.PathEscape(f.Service)+"?"+v.Encode(), nil, &out)
}

func (l apiLedger) Instances(ctx context.Context, f ledger.Filter) ([]contract.InstanceSnapshot, error) {
	v := filterValues(f)
	v.Del("service")
	var out struct {
		Instances []contract.InstanceSnapshot `json:"instances"`
	}
	return out.Instances, l.a.do(ctx, "GET", "/api/v1/services/"+url.PathEscape(f.Service)+"/instances?"+v.Encode(), nil, &out)
}

func (l apiLedger) DORA(ctx context.Context, f ledger.Filter, from, to time.Time) (ledger.DORA, error) {
	v := filterValues(f)
	v.Set("from", from.Format(time.DateOnly))
	v.Set("to", to.Format(time.DateOnly))
	var out struct {
		DORA ledger.DORA `json:"dora"`
	}
	return out.DORA, l.a.do(ctx, "GET", "/api/v1/dora?"+v.Encode(), nil, &out)
}
