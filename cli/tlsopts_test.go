package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

func writeCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gantry-worker"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600)
	return cert, key
}

func TestSecureFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	var o client.Options
	if err := (&secureFlags{}).apply(&o); err != nil || o.ConnectionOptions.TLS != nil || o.Credentials != nil {
		t.Fatalf("no flags: plain connection expected, got %v %v", o.ConnectionOptions.TLS, err)
	}
	f := &secureFlags{cert: cert, key: key, ca: cert, serverName: "temporal.internal", apiKey: "tk_123"}
	if err := f.apply(&o); err != nil {
		t.Fatal(err)
	}
	cfg := o.ConnectionOptions.TLS
	if cfg == nil || len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.ServerName != "temporal.internal" || o.Credentials == nil {
		t.Fatalf("mTLS + API key options: %+v", cfg)
	}
	for _, bad := range []struct {
		f    secureFlags
		want string
	}{
		{secureFlags{cert: cert}, "go together"},
		{secureFlags{ca: key}, "holds no PEM certificate"},
		{secureFlags{cert: key, key: key}, "client certificate"},
	} {
		var o client.Options
		if err := bad.f.apply(&o); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.f, err, bad.want)
		}
	}
	t.Setenv("GANTRY_TEMPORAL_API_KEY", "from-env")
	var oe client.Options
	if err := (&secureFlags{}).apply(&oe); err != nil || oe.Credentials == nil || oe.ConnectionOptions.TLS == nil {
		t.Errorf("API key from the environment: %v", err)
	}
}
