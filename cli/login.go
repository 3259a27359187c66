package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/oauth2"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/server"
)

// oidcFlags configure sign-in with the company's identity provider (gantry server).
type oidcFlags struct {
	issuer, clientID, clientSecret, groupsClaim, redirectURL string
}

func (f *oidcFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.issuer, "oidc-issuer", os.Getenv("GANTRY_OIDC_ISSUER"), "let people sign in to the Web UI and gantry login through this OpenID Connect provider (issuer URL; env GANTRY_OIDC_ISSUER); it must answer at start")
	cmd.Flags().StringVar(&f.clientID, "oidc-client-id", os.Getenv("GANTRY_OIDC_CLIENT_ID"), "Gantry's client ID at the provider (env GANTRY_OIDC_CLIENT_ID)")
	cmd.Flags().StringVar(&f.clientSecret, "oidc-client-secret", "", "Gantry's client secret at the provider; prefer env GANTRY_OIDC_CLIENT_SECRET, which other users of the machine cannot read in the process list")
	cmd.Flags().StringVar(&f.groupsClaim, "oidc-groups-claim", "groups", "the ID token claim listing a person's groups, mapped onto the identity file's groups (their oidcGroups, or the same name)")
	cmd.Flags().StringVar(&f.redirectURL, "oidc-redirect-url", "", "the Web UI's callback as registered at the provider (default http://UI_LISTEN"+sso.CallbackPath+"; set it behind a proxy or TLS)")
}

// provider connects to the identity provider, or returns nil without --oidc-issuer.
func (f oidcFlags) provider(ctx context.Context, uiListen string) (*sso.Provider, error) {
	if f.issuer == "" {
		if f.clientID != "" {
			return nil, errors.New("--oidc-client-id needs --oidc-issuer")
		}
		return nil, nil
	}
	if uiListen == "" {
		return nil, errors.New("--oidc-issuer needs the Web UI (--ui-listen): people sign in there, and gantry login through it")
	}
	redirect := f.redirectURL
	if redirect == "" {
		if _, port, _ := net.SplitHostPort(uiListen); port == "0" {
			return nil, errors.New("--oidc-issuer with --ui-listen on port 0 needs --oidc-redirect-url: the provider must know the callback's address")
		}
		redirect = "http://" + uiListen + sso.CallbackPath
	}
	secret := f.clientSecret
	if secret == "" {
		secret = os.Getenv("GANTRY_OIDC_CLIENT_SECRET")
	}
	return sso.New(ctx, sso.Config{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: secret, RedirectURL: redirect, GroupsClaim: f.groupsClaim})
}

// credential is a sign-in gantry login keeps for one server.
type credential struct {
	Token     string    `yaml:"token"`
	ExpiresAt time.Time `yaml:"expiresAt"`
	User      string    `yaml:"user"`
}

// credentialsPath is where gantry login keeps its sign-ins: owner-only, per user.
func credentialsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory to keep the sign-in in: %w", err)
	}
	return filepath.Join(dir, "gantry", "credentials.yaml"), nil
}

func loadCredentials() (map[string]credential, string, error) {
	path, err := credentialsPath()
	if err != nil {
		return nil, "", err
	}
	out := map[string]credential{}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, path, err
	}
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return out, path, nil
}

func saveCredentials(path string, creds map[string]credential) error {
	b, err := yaml.Marshal(creds)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// storedToken is the token gantry login kept for a server: "" when there is none, an error
// when it expired.
func storedToken(serverURL string) (string, error) {
	creds, _, err := loadCredentials()
	if err != nil {
		return "", err
	}
	c, ok := creds[strings.TrimSuffix(serverURL, "/")]
	if !ok {
		return "", nil
	}
	if !time.Now().Before(c.ExpiresAt) {
		return "", fmt.Errorf("your sign-in to %s expired at %s: run gantry login --server %s", serverURL, c.ExpiresAt.Local().Format(time.Kitchen), serverURL)
	}
	return c.Token, nil
}

func loginCmd() *cobra.Command {
	var serverURL string
	var noBrowser bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "login --server URL",
		Short: "Sign in to a gantry server through the company's identity provider, for the commands with --server",
		Long: `Opens the server's sign-in page in a browser (or prints its address with --no-browser); after you
sign in at the identity provider, the browser comes back to this command on a loopback port and
it keeps a short-lived token for the server in your configuration directory
(~/.config/gantry/credentials.yaml). Commands with --server and no --token use it until it
expires. Tokens of the identity file (gantry user add) keep working for bots and triggers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serverURL == "" {
				return usageErr("gantry login needs --server URL (or env GANTRY_SERVER)")
			}
			base := strings.TrimSuffix(serverURL, "/")
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			var info server.AuthInfo
			if err := (&apiControl{base: base}).do(ctx, http.MethodGet, "/api/v1/auth", nil, &info); err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			if info.OIDC == nil {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("%s signs people in with identity-file tokens only: ask whoever runs it for one (gantry user add) and pass it as --token", base)}
			}
			tok, err := browserSignIn(ctx, cmd, info.OIDC.SignIn, noBrowser)
			if err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			var got server.SignInToken
			if err := (&apiControl{base: base}).do(ctx, http.MethodPost, "/api/v1/auth/token", tok, &got); err != nil {
				return &exitError{code: ExitInvalid, err: err}
			}
			creds, path, err := loadCredentials()
			if err != nil {
				return err
			}
			creds[base] = credential{Token: got.Token, ExpiresAt: got.ExpiresAt, User: got.User}
			if err := saveCredentials(path, creds); err != nil {
				return fmt.Errorf("keep the sign-in in %s: %w", path, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed in to %s as %s (groups: %s) until %s\n", base, got.User, strings.Join(got.Groups, ", "), got.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "server", os.Getenv("GANTRY_SERVER"), "the gantry server's API (http://host:port; env GANTRY_SERVER)")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "print the sign-in address instead of opening a browser")
	cmd.Flags().DurationVar(&wait, "timeout", 5*time.Minute, "how long to wait for the sign-in")
	return cmd
}

func logoutCmd() *cobra.Command {
	var serverURL string
	cmd := &cobra.Command{
		Use:   "logout --server URL",
		Short: "Sign out of a gantry server: its token is refused from now on and forgotten here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base := strings.TrimSuffix(serverURL, "/")
			creds, path, err := loadCredentials()
			if err != nil {
				return err
			}
			c, ok := creds[base]
			if !ok {
				return usageErr("not signed in to %s", base)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			// An expired token is refused anyway: forget it even when the server says so.
			err = (&apiControl{base: base, token: c.Token}).do(ctx, http.MethodPost, "/api/v1/auth/sign-out", nil, nil)
			delete(creds, base)
			if serr := saveCredentials(path, creds); serr != nil {
				return serr
			}
			if err != nil && time.Now().Before(c.ExpiresAt) {
				return &exitError{code: ExitInvalid, err: fmt.Errorf("forgot the sign-in here, but the server did not sign it out: %w", err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed out of %s\n", base)
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "server", os.Getenv("GANTRY_SERVER"), "the gantry server's API (env GANTRY_SERVER)")
	return cmd
}

// browserSignIn sends a browser through the server's sign-in page and waits on a loopback
// port for the handoff code it comes back with.
func browserSignIn(ctx context.Context, cmd *cobra.Command, signIn string, noBrowser bool) (server.SignInRedeem, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return server.SignInRedeem{}, fmt.Errorf("listen on loopback for the sign-in to come back: %w", err)
	}
	defer ln.Close()
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	state, verifier := base64.RawURLEncoding.EncodeToString(b), oauth2.GenerateVerifier()
	link := signIn + "?" + url.Values{"cli_port": {strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, "cli_state": {state},
		"cli_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}}.Encode()
	fmt.Fprintf(cmd.OutOrStdout(), "sign in at: %s\n", link)
	if !noBrowser {
		openBrowser(link)
	}
	codes := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/callback" || q.Get("state") != state || q.Get("code") == "" {
			http.Error(w, "this is not the sign-in gantry login is waiting for", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprint(w, `<!doctype html><title>Gantry: signed in</title><p id="done" style="font-family:sans-serif">Signed in: go back to the terminal.</p>`)
		select {
		case codes <- q.Get("code"):
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	select {
	case code := <-codes:
		return server.SignInRedeem{Code: code, Verifier: verifier}, nil
	case <-ctx.Done():
		return server.SignInRedeem{}, errors.New("no sign-in came back before --timeout: run gantry login again")
	}
}

// openBrowser tries the desktop's way of opening an address; the printed address is the
// fallback.
func openBrowser(link string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if c := exec.Command(name, link); c.Start() == nil {
		go func() { _ = c.Wait() }()
	}
}
