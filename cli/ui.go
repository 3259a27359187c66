package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/webui"
)

// startUI serves the Temporal Web UI in front of the frontend e talks to, with the connection's
// TLS files, and records it for the commands that join this data directory's server.
func startUI(ctx context.Context, e *engine, conn connFlags, listen string) (*webui.Server, error) {
	ui, err := webui.Start(ctx, webui.Options{Listen: listen, Temporal: e.address, Namespace: conn.namespace,
		CAFile: conn.secure.ca, CertFile: conn.secure.cert, KeyFile: conn.secure.key, ServerName: conn.secure.serverName})
	if err != nil {
		return nil, err
	}
	e.announceUI(conn.dataDir, ui.URL)
	return ui, nil
}

func uiCmd() *cobra.Command {
	var conn connFlags
	var listen string
	cmd := &cobra.Command{
		Use:   "ui [--ui-listen ADDR] [--address host:port | --data-dir DIR]",
		Short: "Serve the Temporal Web UI for a data directory's server or a cluster, until interrupted",
		Long: `Serves the Temporal Web UI (embedded in gantry) for the Temporal frontend of --address, or for
the embedded server of the data directory (started here if no gantry process serves it).
gantry server serves the same UI itself on --ui-listen.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			e, err := connect(ctx, conn, false, newLogger(false))
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			ui, err := startUI(ctx, e, conn, listen)
			if err != nil {
				return usageErr("%v", err)
			}
			defer ui.Stop()
			fmt.Fprintf(cmd.OutOrStdout(), "gantry ui: %s for Temporal at %s, namespace %s\n", ui.URL, e.address, conn.namespace)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "ui-listen", webui.DefaultListen, "address of the Temporal Web UI")
	conn.add(cmd)
	return cmd
}

// uiLink is the execution's page in the Web UI of the server this command joined, or "".
func uiLink(e *engine, namespace, executionID string) string {
	if e.uiURL == "" {
		return ""
	}
	return (&webui.Server{URL: e.uiURL}).ExecutionURL(namespace, executionID)
}
