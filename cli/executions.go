package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/activities/gitstore"
	"github.com/gantry-cd/gantry/pipeline"
	"github.com/gantry-cd/gantry/remote"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/starter"
	"github.com/gantry-cd/gantry/triggers"
	"github.com/gantry-cd/gantry/webui"
	"github.com/gantry-cd/gantry/worker"
	"github.com/gantry-cd/gantry/workflows"
)

func statusCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status EXECUTION",
		Short: "Show an execution's node tree (live while it runs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				tree, err := c.Tree(ctx, args[0])
				if err != nil {
					return err
				}
				if output == "json" {
					return writeJSON(cmd.OutOrStdout(), args[0], &workflows.PipelineResult{Status: tree.Status, Tree: tree})
				}
				printTree(cmd.OutOrStdout(), tree, pages{execution: args[0]})
				records, done, err := c.Notifications(ctx, args[0])
				if err != nil {
					return err
				}
				printNotifications(cmd.OutOrStdout(), records, done)
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func listCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	var pipeline, output string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recent pipeline executions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
				list, err := c.List(ctx, pipeline, limit)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(cmd.OutOrStdout(), struct {
						Executions []starter.Summary `json:"executions"`
					}{append([]starter.Summary{}, list...)})
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "EXECUTION\tPIPELINE\tSTATUS\tTRIGGER\tSTARTED\tDURATION")
				for _, s := range list {
					d := "-"
					if !s.End.IsZero() {
						d = s.End.Sub(s.Start).Round(time.Millisecond).String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Pipeline, s.Status, s.Trigger, s.Start.Local().Format(time.DateTime), d)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "only executions of this pipeline identifier")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many executions")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func logsCmd() *cobra.Command {
	var conn connFlags
	var rf remoteFlags
	cmd := &cobra.Command{
		Use:   "logs EXECUTION STEP-PATH",
		Short: "Print a step's output, e.g. gantry logs build-3 build.compile",
		Long: `Prints the output a step wrote (stdout and stderr, secrets masked) from the log store in
DATA_DIR/logs. Each attempt that printed something starts with a "# gantry:" line naming the
worker that ran it; a step that printed nothing has an empty log.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if rf.server != "" {
				return withControl(cmd, conn, rf, func(ctx context.Context, c control) error {
					text, err := c.(*apiControl).stepLog(ctx, args[0], args[1])
					if err == nil {
						_, err = io.WriteString(cmd.OutOrStdout(), text)
					}
					return err
				})
			}
			r, err := conn.secretStore(ctx)
			if err != nil {
				return usageErr("%v", err)
			}
			st, err := conn.logBucket.store(ctx, filepath.Join(conn.dataDir, "logs"), r, false, zap.NewNop())
			if err != nil {
				return usageErr("%v", err)
			}
			where := st.Dir
			if st.Remote != nil {
				where += " or " + st.Remote.Bucket.URL("")
			}
			if ok, err := st.Exists(ctx, args[0], args[1]); err != nil {
				return fmt.Errorf("read the log of step %s of execution %s: %v", args[1], args[0], err)
			} else if !ok {
				return usageErr("no log for step %s of execution %s in %s (step paths are identifiers joined by dots, as `gantry status` shows them)", args[1], args[0], where)
			}
			return st.Copy(ctx, cmd.OutOrStdout(), args[0], args[1])
		},
	}
	conn.add(cmd)
	rf.add(cmd, nil)
	return cmd
}

func serverCmd() *cobra.Command {
	var conn connFlags
	var listen, pipelines, identityFile, remoteEntities string
	var templateDirs []string
	var strict bool
	var buildInfra pipeline.BuildInfra
	var uiListen string
	var uiGroups []string
	var oidc oidcFlags
	var limits workflows.Settings
	runWorker := true
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve the JSON API and a worker (and the embedded Temporal server) until interrupted",
		Long: `Runs a worker and the JSON API (see server/openapi.yaml, also served at /api/v1/openapi.yaml) on
--listen. With no --address it also serves the embedded Temporal server on the data directory;
other gantry commands on the same --data-dir connect to it. Every API call needs a token from
the identity file (gantry user add). It also serves the Temporal Web UI on --ui-listen (pipeline
runs, their stages and live trees); with --codec-keys, users sign in at /gantry/sign-in with
their token to see encrypted payloads in plain text.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := newLogger(true)
			if !runWorker && conn.address == "" {
				return usageErr("--run-worker=false needs --address: the embedded server needs this process's worker")
			}
			// Before anything starts: a provider that does not answer is a reason not to.
			idp, err := oidc.provider(ctx, uiListen)
			if err != nil {
				return usageErr("%v", err)
			}
			conn.buildMachine, conn.containerd = buildInfra.Machines, buildInfra.Containerd
			e, err := connect(ctx, conn, runWorker, log)
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			if conn.address == "" && e.server == nil {
				return usageErr("another gantry server already serves %s", conn.dataDir)
			}
			if identityFile == "" {
				identityFile = filepath.Join(conn.dataDir, "users.yaml")
			}
			reg, err := remote.Open(remoteEntities, filepath.Join(conn.dataDir, "remote-entities.json"))
			if err != nil {
				return usageErr("%v", err)
			}
			git := &gitstore.Fetcher{Secrets: e.secrets, CacheDir: filepath.Join(conn.dataDir, "git")}
			api := server.New(server.Options{SSO: idp, Remote: reg, Git: git, Starter: e.starter, IdentityFile: identityFile, PipelinesDir: pipelines, TemplateDirs: templateDirs, Strict: strict, BuildInfra: &buildInfra, Log: log,
				Secrets: e.secrets, Logs: e.logs, Events: &triggers.EventLog{Path: eventsPath(conn.dataDir)}, Policies: e.policies,
				Settings: workflows.Settings{MaxRunning: limits.MaxRunning, MaxRunningPerPipeline: limits.MaxRunningPerPipeline}})
			for _, w := range api.AccessWarnings() {
				log.Warn(w, zap.String("identityFile", identityFile))
			}
			if pipelines != "" {
				// Cron fires of pipelines kept in Git are read by a server, at the fire.
				side := worker.ServerSide(e.starter, api.LoadCron)
				if err := side.Start(); err != nil {
					return usageErr("the server's own Temporal worker: %v", err)
				}
				defer side.Stop()
				go syncSchedules(ctx, api, log)
			}
			srv := &http.Server{Addr: listen, Handler: api, ReadHeaderTimeout: 10 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- srv.ListenAndServe() }()
			uiNote := "no Web UI (--ui-listen is empty)"
			if uiListen != "" {
				ui, err := startUI(ctx, e, conn, uiListen, identityFile, uiGroups, idp)
				switch {
				case err != nil && (cmd.Flags().Changed("ui-listen") || idp != nil):
					return usageErr("%v", err)
				case err != nil:
					log.Warn("the Web UI is not served", zap.Error(err))
					uiNote = "no Web UI: " + err.Error()
				default:
					defer ui.Stop()
					uiNote = "Web UI on " + ui.URL
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gantry server: API on http://%s, %s, Temporal at %s, namespace %s, data in %s\n", listen, uiNote, e.address, conn.namespace, conn.dataDir)
			select {
			case <-ctx.Done():
			case err := <-errc:
				return usageErr("API server on %s: %v", listen, err)
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8088", "address of the JSON API")
	cmd.Flags().StringVar(&uiListen, "ui-listen", webui.DefaultListen, "address of the Temporal Web UI; empty serves none")
	uiFlags(cmd, &uiGroups)
	oidc.add(cmd)
	cmd.Flags().StringVar(&pipelines, "pipelines", "", "directory of pipeline files that start requests may name")
	cmd.Flags().StringVar(&remoteEntities, "remote-entities", "", "file declaring the pipelines, input sets, templates and entities kept in Git (docs/git.md); those registered through the API are kept in the data directory")
	templatesFlag(cmd, &templateDirs)
	strictFlag(cmd, &strict)
	buildInfraFlags(cmd, &buildInfra)
	cmd.Flags().StringVar(&identityFile, "identity", "", "identity file (default DATA_DIR/users.yaml)")
	cmd.Flags().IntVar(&limits.MaxRunning, "max-running", envInt("GANTRY_MAX_RUNNING"), "most executions started through this server that run at once; further ones wait QUEUED, in order (0: no limit; env GANTRY_MAX_RUNNING)")
	cmd.Flags().IntVar(&limits.MaxRunningPerPipeline, "max-running-per-pipeline", envInt("GANTRY_MAX_RUNNING_PER_PIPELINE"), "most executions of one pipeline that run at once; further ones wait QUEUED, in order (0: no limit; env GANTRY_MAX_RUNNING_PER_PIPELINE)")
	cmd.Flags().BoolVar(&runWorker, "run-worker", true, "also run pipelines and steps in this process; false makes it an API tier in front of separate `gantry worker`s (needs --address)")
	conn.add(cmd)
	longRunning(cmd)
	return cmd
}

func workerCmd() *cobra.Command {
	var conn connFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker against a Temporal cluster until interrupted",
		Long: `Runs pipeline workflows and steps for the task queue. With --address it joins an external
Temporal cluster (registering Gantry's search attributes if they are missing); without, it uses
the embedded server of the data directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := newLogger(true)
			e, err := connect(ctx, conn, true, log)
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			if conn.address != "" {
				if err := registerAttributes(ctx, e, conn.namespace); err != nil {
					log.Warn("could not register search attributes; executions will not start until they exist",
						zap.Error(err), zap.String("namespace", conn.namespace))
				}
			}
			log.Info("worker running", zap.String("taskQueue", conn.taskQueue), zap.String("namespace", conn.namespace))
			<-ctx.Done()
			log.Info("worker stopping: no new work is taken; running steps may finish", zap.Duration("shutdownGrace", conn.stopGrace))
			return nil
		},
	}
	conn.add(cmd)
	cmd.Flags().BoolVar(&conn.buildMachine, "build-machine", os.Getenv("GANTRY_BUILD_MACHINE") == "true",
		"also run the CI stages that name a runtime (Cloud, Docker) on this machine, their steps without an image as this process's user: keep build machines apart from deploy workers, with --tags (env GANTRY_BUILD_MACHINE=true)")
	cmd.Flags().StringVar(&conn.containerd, "containerd", os.Getenv("GANTRY_CONTAINERD"),
		"as a build machine, the containerd socket through which the steps that name an image run, in containers (e.g. /run/containerd/containerd.sock; env GANTRY_CONTAINERD)")
	longRunning(cmd)
	return cmd
}

// syncSchedules keeps Temporal's schedules in step with the cron triggers of the pipelines
// directory, and the freezes' notices workflows with its freeze files: at start, then
// whenever its files change.
func syncSchedules(ctx context.Context, api *server.Server, log *zap.Logger) {
	last := ""
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		if fp := api.Fingerprint(); fp != last {
			if err := api.SyncSchedules(ctx); err != nil {
				log.Error("cron triggers and freeze notices could not be synchronised with Temporal; retrying", zap.Error(err))
			} else {
				last = fp
				log.Info("cron triggers and freeze notices synchronised with Temporal")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func eventsPath(dataDir string) string { return filepath.Join(dataDir, "trigger-events.jsonl") }

// printNotifications lists an execution's notification deliveries, failures with their reason.
func printNotifications(w io.Writer, records []workflows.DeliveryRecord, done bool) {
	if len(records) == 0 {
		return
	}
	count := map[string]int{}
	for _, r := range records {
		count[r.Status]++
	}
	state := "still sending"
	if done {
		state = "done"
	}
	fmt.Fprintf(w, "\nNotifications: %d delivered, %d failed, %d pending (%s)\n", count[workflows.DeliveryDelivered],
		count[workflows.DeliveryFailed], count[workflows.DeliveryPending], state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range records {
		what := fmt.Sprintf("%d attempt(s)", r.Attempts)
		if r.Code != 0 {
			what += fmt.Sprintf(", last code %d", r.Code)
		}
		if r.Error != "" && r.Status != workflows.DeliveryDelivered {
			what += ": " + r.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\trule %s\t%s\t%s\n", r.Status, r.Event, r.Node, r.Rule, r.Target, what)
	}
	tw.Flush()
}
