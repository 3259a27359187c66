package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
)

func codecCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "codec", Short: "Payload encryption: key files and the codec server for the Temporal UI"}
	cmd.AddCommand(codecKeyCmd(), codecServerCmd())
	return cmd
}

// codecKeyCmd adds a new random key to a key file and makes it current; older keys stay so
// existing histories still decrypt.
func codecKeyCmd() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "rotate KEYFILE --id ID",
		Short: "Add a new AES-256 key to KEYFILE (created with mode 600 if missing) and make it current",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			var f struct {
				Current string            `yaml:"current"`
				Keys    map[string]string `yaml:"keys"`
			}
			if b, err := os.ReadFile(path); err == nil {
				if _, err := codec.LoadFile(path); err != nil {
					return usageErr("%v", err)
				}
				if err := yaml.Unmarshal(b, &f); err != nil {
					return usageErr("%s: %v", path, err)
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				return usageErr("%v", err)
			}
			if f.Keys == nil {
				f.Keys = map[string]string{}
			}
			if _, ok := f.Keys[id]; ok {
				return usageErr("key %q already exists in %s; pick a new id", id, path)
			}
			raw := make([]byte, 32)
			if _, err := rand.Read(raw); err != nil {
				return err
			}
			f.Keys[id] = base64.StdEncoding.EncodeToString(raw)
			f.Current = id
			b, err := yaml.Marshal(f)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: key %s is current (%d keys); give the file to every worker, client and codec server\n", path, id, len(f.Keys))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "identifier of the new key, e.g. 2026-11")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func codecServerCmd() *cobra.Command {
	var keys, listen, usersFile string
	var opts codec.ServerOptions
	cmd := &cobra.Command{
		Use:   "server --codec-keys FILE --identity users.yaml [--origin URL] [--group G]",
		Short: "Serve Temporal's remote codec endpoint so the Temporal UI can show decrypted payloads to authorised users",
		Long: `Serves POST /decode and /encode for the Temporal Web UI's "remote codec endpoint" setting.
Callers need a bearer token from the identity file (gantry user add), and with --group must be
in one of the groups. --origin allows the UI's address to call it from the browser (CORS).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := codec.LoadFile(keys)
			if err != nil {
				return usageErr("%v", err)
			}
			users, err := identity.Load(usersFile)
			if err != nil {
				return usageErr("%v", err)
			}
			opts.User = users.Authenticate
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usageErr("%v", err)
			}
			srv := &http.Server{Handler: (&codec.Codec{Keys: k}).Handler(opts), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "codec server on http://%s (keys %v, current %s)\n", ln.Addr(), k.IDs(), k.Current)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keys, "codec-keys", os.Getenv("GANTRY_CODEC_KEYS"), "key file (env GANTRY_CODEC_KEYS)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8089", "address to serve on")
	cmd.Flags().StringVar(&usersFile, "identity", "", "identity file with the users allowed to decrypt")
	cmd.Flags().StringArrayVar(&opts.Origins, "origin", nil, "browser origin allowed to call (the Temporal UI, e.g. http://localhost:8080; repeatable)")
	cmd.Flags().StringArrayVar(&opts.Groups, "group", nil, "only members of these groups may decrypt (repeatable; default any user)")
	_ = cmd.MarkFlagRequired("identity")
	return cmd
}
