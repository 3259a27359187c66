package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/webui"
)

// startUI serves the Temporal Web UI in front of the frontend e talks to, with the connection's
// TLS files, and records it for the commands that join this data directory's server. With
// --codec-keys the UI decodes payloads for users who sign in with a token of identityFile (in
// one of groups, when given).
// With idp, people also sign in through the company's identity provider.
func startUI(ctx context.Context, e *engine, conn connFlags, listen, identityFile string, groups []string, idp *sso.Provider) (*webui.Server, error) {
	o := webui.Options{Listen: listen, Temporal: e.address, Namespace: conn.namespace,
		CAFile: conn.secure.ca, CertFile: conn.secure.cert, KeyFile: conn.secure.key, ServerName: conn.secure.serverName}
	if identityFile == "" {
		identityFile = filepath.Join(conn.dataDir, "users.yaml")
	}
	// The identity file is read on each call: users added while the UI runs can sign in, and a
	// removed token stops working at once.
	gate := &access.Gate{IdentityFile: identityFile, Starter: e.starter, Log: e.log, SSO: idp}
	user := func(token string) (*identity.User, error) {
		u, _, err := gate.User(ctx, token)
		return u, err
	}
	o.SSO, o.Directory = idp, gate.Directory
	o.SignIn = webui.UserName(user)
	o.Logs = webui.NewStepLogs(e.logs, e.starter)
	o.Access, o.User = gate, user
	o.Decisions = &webui.Decisions{Starter: e.starter, User: user, Access: gate}
	o.Executions = e.starter
	o.Services, o.Rollbacks = e.starter.Ledger(), e.starter
	if conn.codecKeys != "" {
		keys, err := codec.LoadFile(conn.codecKeys)
		if err != nil {
			return nil, err
		}
		c := &codec.Codec{Keys: keys}
		o.Codec = c.Handler(codec.ServerOptions{User: user, Groups: groups})
	}
	ui, err := webui.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	e.announceUI(conn.dataDir, ui.URL)
	return ui, nil
}

// uiFlags are the Web UI's flags beyond its address.
func uiFlags(cmd *cobra.Command, groups *[]string) {
	cmd.Flags().StringArrayVar(groups, "ui-codec-group", nil, "with --codec-keys, only members of these groups see decoded payloads in the Web UI (repeatable; default any user of the identity file)")
}

func uiCmd() *cobra.Command {
	var conn connFlags
	var listen, identityFile string
	var groups []string
	cmd := &cobra.Command{
		Use:   "ui [--ui-listen ADDR] [--address host:port | --data-dir DIR]",
		Short: "Serve the Temporal Web UI for a data directory's server or a cluster, until interrupted",
		Long: `Serves the Temporal Web UI (embedded in gantry) for the Temporal frontend of --address, or for
the embedded server of the data directory (started here if no gantry process serves it).
gantry server serves the same UI itself on --ui-listen. With --codec-keys, encrypted payloads
show in plain text to users who sign in at /gantry/sign-in with a token of the identity file;
signed-in users read each step's log at /gantry/logs/EXECUTION/STEP, linked from the live tree.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			e, err := connect(ctx, conn, false, newLogger(false))
			if err != nil {
				return usageErr("%v", err)
			}
			defer e.close()
			ui, err := startUI(ctx, e, conn, listen, identityFile, groups, nil)
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
	cmd.Flags().StringVar(&identityFile, "identity", "", "identity file of the users who may sign in to read logs and decode payloads (default DATA_DIR/users.yaml)")
	uiFlags(cmd, &groups)
	conn.add(cmd)
	return cmd
}
