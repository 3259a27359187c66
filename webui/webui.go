// Package webui serves the Temporal Web UI (the ui-server module, its assets embedded in the
// gantry binary) in front of a Temporal frontend: pipelines, stages and their histories in a
// browser, for the embedded server and for a cluster alike.
package webui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/ledger"
	"github.com/gantry-cd/gantry/plan"
	"github.com/gantry-cd/gantry/workflows"
	"github.com/temporalio/ui-server/v2/server"
	"github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/rpc"
	"github.com/temporalio/ui-server/v2/server/server_options"
)

// DefaultListen is where `gantry server` serves the UI unless told otherwise.
const DefaultListen = "127.0.0.1:8233"

// Options say where the UI listens and which Temporal frontend it shows.
type Options struct {
	Listen    string // host:port; port 0 picks a free one
	Temporal  string // frontend host:port
	Namespace string
	// TLS files for a frontend that needs them (the --tls-* flags); empty for plaintext.
	CAFile, CertFile, KeyFile, ServerName string
	// Codec serves Temporal's remote codec protocol (POST /decode, /encode), authenticating the
	// cookie the sign-in page sets (codec.TokenCookie). With it, the UI decodes payloads through
	// /gantry/codec on its own origin, so encrypted payloads show in plain text only to a user
	// who signed in at /gantry/sign-in with a token the codec accepts. nil: no decoding.
	Codec http.Handler
	// SignIn checks a token on the sign-in page and names its user; nil: no sign-in page.
	SignIn func(token string) (user string, err error)
	// Logs serves each step's log page to signed-in users (LogsPath); nil: none.
	Logs LogSource
	// Access authorizes what signed-in users ask of the log and decision pages and writes
	// the audit trail; nil allows every signed-in user everything.
	Access Access
	// User names a token's user for Access (with SignIn).
	User func(token string) (*identity.User, error)
	// Decisions serves the pages where signed-in users answer waiting steps (DecidePath);
	// nil: none.
	Decisions *Decisions
	// Executions lists pipeline executions on the executions page (ExecutionsPath, for
	// signed-in users, with User); nil: no such page.
	Executions ExecutionLister
	// Services reads the deployments ledger for the services pages (ServicesPath, for
	// signed-in users, with User); nil: no such pages.
	Services ledger.View
	// Rollbacks, when set, puts a rollback button on a service's page for each target that can
	// be rolled back after its deployment (starter.CanRollBack).
	Rollbacks Rollbacks
	// SSO signs people in with the company's identity provider besides tokens (with
	// Directory, the identity file its groups are mapped onto); nil: tokens only.
	SSO       *sso.Provider
	Directory func() (*identity.Directory, error)
	// LivePollInterval spaces one page's long-polls of a running workflow's history (default
	// DefaultLivePollInterval; negative: not spaced).
	LivePollInterval time.Duration
}

// Access authorizes a signed-in user's request on an execution, or on a pipeline's
// executions (see access.Gate).
type Access interface {
	Allow(ctx context.Context, u *identity.User, a identity.Action, execution string) error
	AllowPipeline(u *identity.User, a identity.Action, pipeline string) error
	AllowPlan(u *identity.User, p *plan.Plan) error
	Audit(ctx context.Context, r workflows.AuditRecord)
}

// Paths gantry serves beside the UI's own.
const (
	SignInPath = "/gantry/sign-in"
	codecPath  = "/gantry/codec"
)

// Server is a running UI.
type Server struct {
	ui    *server.Server
	front *http.Server
	conn  *grpc.ClientConn // the front's own, for readAPI
	inner string           // the ui-server behind the front
	URL   string           // http://host:port
}

// Start serves the UI and returns once it answers. The ui-server runs on a loopback port of
// its own behind gantry's front on Listen, which adds the sign-in page and the codec endpoint
// on the same origin (no CORS, and the sign-in cookie reaches the codec).
func Start(ctx context.Context, o Options) (*Server, error) {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("UI address %q: %w", o.Listen, err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("serve the UI on %s: %w (choose another --ui-listen, or empty to serve none)", o.Listen, err)
	}
	public := "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	// The UI server exits the process when it cannot bind its address: pick a free one first.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, err
	}
	innerPort := inner.Addr().(*net.TCPAddr).Port
	inner.Close()
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	cfg := uiConfig(o, ns, innerPort, public)
	tlsCfg, err := rpc.CreateTLSConfig(o.Temporal, &cfg.TLS)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("UI: TLS to the Temporal frontend %s: %w", o.Temporal, err)
	}
	conn, err := rpc.Dial(o.Temporal, tlsCfg)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("UI: connect to the Temporal frontend %s: %w", o.Temporal, err)
	}
	s := &Server{ui: server.NewServer(server_options.WithConfigProvider(cfg)), URL: public, conn: conn}
	go func() { _ = s.ui.Start() }()
	backend := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(innerPort)}
	s.inner = backend.String()
	mux, err := frontMux(o, ns, conn, backend)
	if err != nil {
		ln.Close()
		conn.Close()
		return nil, err
	}
	s.front = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.front.Serve(ln) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// uiConfig is the ui-server's configuration: on its inner loopback port, for the Temporal
// frontend of o, with the codec endpoint on the public origin.
func uiConfig(o Options, ns string, innerPort int, public string) *config.Config {
	cfg := &config.Config{
		TemporalGRPCAddress: o.Temporal,
		Host:                "127.0.0.1",
		Port:                innerPort,
		EnableUI:            true,
		DefaultNamespace:    ns,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                config.CORS{CookieInsecure: true},
	}
	if o.CAFile != "" || o.CertFile != "" {
		cfg.TLS = config.TLS{CaFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, ServerName: o.ServerName, EnableHostVerification: true}
	}
	if o.Codec != nil {
		cfg.Codec = config.Codec{Endpoint: public + codecPath, IncludeCredentials: true}
	}
	return cfg
}

// frontMux routes gantry's front: the ui-server behind a proxy (its read API answered from
// Temporal directly, live pages polled less often), and the codec, sign-in, log and decision
// pages.
func frontMux(o Options, ns string, conn *grpc.ClientConn, backend *url.URL) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	proxy := httputil.NewSingleHostReverseProxy(backend)
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			return // the browser went away (a reload, a closed tab): nothing to answer
		}
		http.Error(w, "the Temporal UI server behind gantry did not answer: "+err.Error(), http.StatusBadGateway)
	}
	interval := o.LivePollInterval
	if interval == 0 {
		interval = DefaultLivePollInterval
	}
	api, err := newReadAPI(conn, proxy)
	if err != nil {
		return nil, err
	}
	mux.Handle("/", &assets{next: &livePolls{next: api, interval: interval}})
	if o.Codec != nil {
		mux.Handle(codecPath+"/", http.StripPrefix(codecPath, o.Codec))
	}
	if o.SignIn != nil {
		mux.Handle(SignInPath, signIn(o.SignIn, o.SSO))
	}
	if o.SSO != nil {
		h := o.SSO.Handler(sso.HandlerOptions{Directory: o.Directory, Cookie: codec.TokenCookie})
		mux.Handle(sso.StartPath, h)
		mux.Handle(sso.CallbackPath, h)
	}
	if o.Logs != nil {
		mux.Handle(LogsPath, logs(o.Logs, o.SignIn, ns, o.Access, o.User))
	}
	if o.Decisions != nil {
		mux.Handle(DecidePath, o.Decisions.handler(ns))
	}
	if o.Executions != nil && o.User != nil {
		mux.Handle(ExecutionsPath, executions(o.Executions, o.User, o.Access, ns))
		trees := &sharedTrees{read: o.Executions.Tree, fresh: treeFresh}
		mux.Handle(ExecutionsPath+"/", executionPage(o.Executions, trees, o.User, o.Access, ns))
	}
	if o.Services != nil && o.User != nil {
		h := services(o.Services, o.User, o.Access, o.Rollbacks)
		mux.Handle(ServicesPath, h)
		mux.Handle(ServicesPath+"/", h)
	}
	return mux, nil
}

// waitReady returns once the UI answers its health check, or an error after 15 seconds.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the UI on %s did not answer: %v", s.URL, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops serving.
func (s *Server) Stop() {
	if s.front != nil {
		_ = s.front.Close()
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.ui.Stop()
}

// ExecutionURL is the UI page of a workflow: a pipeline execution or a stage.
func (s *Server) ExecutionURL(namespace, workflowID string) string {
	if namespace == "" {
		namespace = "default"
	}
	return s.URL + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}
