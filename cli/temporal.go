package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	tlog "go.temporal.io/server/common/log"
	"go.uber.org/zap"

	"github.com/gantry-cd/gantry/devserver"
	"github.com/gantry-cd/gantry/workflows"
)

// temporalCmd serves a standalone Temporal server on PostgreSQL: the server process of the
// scaled-out topology (hack/topology), built from the same go.temporal.io/server as the embedded
// one. With --data-dir it keeps its state in SQLite files instead, as the embedded server does: a
// server of its own for processes that would otherwise embed one (the end-to-end tests, whose
// race-instrumented binary would run the server ten times slower).
func temporalCmd() *cobra.Command {
	var (
		pg, dataDir, listen, namespace string
		shards                         int32
		retention                      time.Duration
		verbose                        bool
	)
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Serve a Temporal server on PostgreSQL (or SQLite) for workers on other processes or machines",
		Long: `Runs all four Temporal services (frontend, history, matching, worker) in this process with
their state in PostgreSQL. On start it creates the databases DATABASE and DATABASE_visibility if
they are missing, brings their schema to this build's version, registers the namespace and
Gantry's search attributes. Point workers, servers and the Temporal UI at --listen's address.
Stopping it (SIGTERM) loses nothing: executions carry on when it is started again. With
--data-dir instead of --postgres the state is in SQLite files in that folder, as the embedded
server keeps it: one server process on one machine.`,
		Example: `  gantry temporal --postgres postgres://temporal:secret@127.0.0.1:5432/temporal --listen 127.0.0.1:7233
  gantry worker --address 127.0.0.1:7233`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (pg == "") == (dataDir == "") {
				return usageErr("give --postgres (or GANTRY_POSTGRES_URL), e.g. postgres://temporal:secret@127.0.0.1:5432/temporal, or --data-dir for SQLite files; not both")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := newLogger(true)
			s, err := devserver.Start(ctx, devserver.Options{
				Postgres: pg, DataDir: dataDir, Listen: listen, Namespace: namespace, HistoryShards: shards, Retention: retention,
				Extra: []string{workflows.InternalNamespace(namespace)}, SearchAttributes: workflows.SearchAttributes(), Logger: serverLogger(verbose),
			})
			if err != nil {
				return usageErr("%v", err)
			}
			log.Info("temporal serving", zap.String("address", s.Address), zap.String("namespace", namespace))
			fmt.Fprintf(cmd.OutOrStdout(), "temporal: serving on %s, namespace %s\n", s.Address, namespace)
			<-ctx.Done()
			return s.Stop()
		},
	}
	cmd.Flags().StringVar(&pg, "postgres", os.Getenv("GANTRY_POSTGRES_URL"), "PostgreSQL URL postgres://USER[:PASSWORD]@HOST:PORT/DATABASE[?sslmode=...] (env GANTRY_POSTGRES_URL)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "keep the state in SQLite files in this folder instead of PostgreSQL")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7233", "frontend IP:PORT; the next seven ports carry the history, matching and worker services")
	cmd.Flags().StringVar(&namespace, "namespace", envOr("GANTRY_NAMESPACE", "default"), "namespace to register (env GANTRY_NAMESPACE)")
	cmd.Flags().Int32Var(&shards, "history-shards", 0, "history shards, fixed when the database is first set up (default 4 on PostgreSQL, 1 on SQLite)")
	cmd.Flags().DurationVar(&retention, "retention", 30*24*time.Hour, "how long closed executions are kept, when the namespace is registered")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "log the Temporal services at info level (default: warnings and errors)")
	return cmd
}

// serverLogger adapts a zap logger on stderr for the Temporal services.
func serverLogger(verbose bool) tlog.Logger {
	if verbose {
		return tlog.NewZapLogger(consoleLogger(zap.InfoLevel))
	}
	return tlog.NewZapLogger(consoleLogger(zap.WarnLevel))
}
