package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
)

// secureFlags are how a process authenticates to a Temporal cluster: mutual TLS with a client
// certificate (self-hosted), or an API key over TLS (Temporal Cloud).
type secureFlags struct {
	tls        bool
	cert, key  string
	ca         string
	serverName string
	apiKey     string
}

func (f *secureFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.tls, "tls", os.Getenv("GANTRY_TEMPORAL_TLS") == "true", "connect with TLS (implied by the other --tls-* flags and --api-key) (env GANTRY_TEMPORAL_TLS=true)")
	fl.StringVar(&f.cert, "tls-cert", os.Getenv("GANTRY_TEMPORAL_TLS_CERT"), "client certificate (PEM) for mutual TLS (env GANTRY_TEMPORAL_TLS_CERT)")
	fl.StringVar(&f.key, "tls-key", os.Getenv("GANTRY_TEMPORAL_TLS_KEY"), "client certificate's private key (PEM) (env GANTRY_TEMPORAL_TLS_KEY)")
	fl.StringVar(&f.ca, "tls-ca", os.Getenv("GANTRY_TEMPORAL_TLS_CA"), "CA bundle (PEM) that signed the server's certificate; default the system roots (env GANTRY_TEMPORAL_TLS_CA)")
	fl.StringVar(&f.serverName, "tls-server-name", os.Getenv("GANTRY_TEMPORAL_TLS_SERVER_NAME"), "server name to verify, when it differs from the address's host (env GANTRY_TEMPORAL_TLS_SERVER_NAME)")
	fl.StringVar(&f.apiKey, "api-key", "", "API key for Temporal Cloud; prefer the env GANTRY_TEMPORAL_API_KEY, which stays out of process listings")
}

// apply sets the TLS and credential options of a client.
func (f *secureFlags) apply(o *client.Options) error {
	key := f.apiKey
	if key == "" {
		key = os.Getenv("GANTRY_TEMPORAL_API_KEY")
	}
	if !f.tls && f.cert == "" && f.ca == "" && f.serverName == "" && key == "" {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if (f.cert == "") != (f.key == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return fmt.Errorf("client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("--tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s holds no PEM certificate", f.ca)
		}
		cfg.RootCAs = pool
	}
	o.ConnectionOptions.TLS = cfg
	if key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	return nil
}
