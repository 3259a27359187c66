// Package webui serves the Temporal Web UI (the ui-server module, its assets embedded in the
// gantry binary) in front of a Temporal frontend: pipelines, stages and their histories in a
// browser, for the embedded server and for a cluster alike.
package webui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/temporalio/ui-server/v2/server"
	"github.com/temporalio/ui-server/v2/server/config"
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
	// CodecEndpoint is gantry's codec server: the UI decodes payloads through it, sending the
	// signed-in user's token, so encrypted payloads are shown only to those allowed.
	CodecEndpoint string
}

// Server is a running UI.
type Server struct {
	ui  *server.Server
	URL string // http://host:port
}

// Start serves the UI and returns once it answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("UI address %q: %w", o.Listen, err)
	}
	// The UI server exits the process when it cannot bind its address: claim it first, so a
	// busy port is an error to report instead.
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("serve the UI on %s: %w (choose another --ui-listen, or empty to serve none)", o.Listen, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	cfg := &config.Config{
		TemporalGRPCAddress: o.Temporal,
		Host:                host,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    ns,
		HideLogs:            true,
		DisableNewsFetch:    true,
		CORS:                config.CORS{CookieInsecure: true},
	}
	if o.CAFile != "" || o.CertFile != "" {
		cfg.TLS = config.TLS{CaFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, ServerName: o.ServerName, EnableHostVerification: true}
	}
	if o.CodecEndpoint != "" {
		cfg.Codec = config.Codec{Endpoint: o.CodecEndpoint, PassAccessToken: true}
	}
	s := &Server{ui: server.NewServer(server_options.WithConfigProvider(cfg)), URL: "http://" + net.JoinHostPort(host, strconv.Itoa(port))}
	go func() { _ = s.ui.Start() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("the UI on %s did not answer: %v", s.URL, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops serving.
func (s *Server) Stop() { s.ui.Stop() }

// ExecutionURL is the UI page of a workflow: a pipeline execution or a stage.
func (s *Server) ExecutionURL(namespace, workflowID string) string {
	if namespace == "" {
		namespace = "default"
	}
	return s.URL + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}
