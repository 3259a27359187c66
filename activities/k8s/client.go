package k8s

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/plan"
)

// client talks to one cluster.
type client struct {
	cfg    *rest.Config
	disc   discovery.CachedDiscoveryInterface
	cs     kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// restConfig builds the connection for a connector. Secrets (the token, the CA) come from the
// resolver and are added to the masker.
func restConfig(ctx context.Context, c plan.Connector, r secrets.Resolver, mask *secrets.Masker) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch c.Type {
	case "ManualConfig":
		cfg = &rest.Config{Host: c.MasterURL}
		tok, err := r.Resolve(ctx, c.TokenRef)
		if err != nil {
			return nil, contract.Fail(contract.Authentication, "connector %s: token secret %q: %v", c.ID, c.TokenRef, err)
		}
		mask.Add(tok)
		cfg.BearerToken = tok
		cfg.TLSClientConfig.Insecure = c.InsecureSkipTLSVerify
		if c.CACertRef != "" {
			ca, err := r.Resolve(ctx, c.CACertRef)
			if err != nil {
				return nil, contract.Fail(contract.Authentication, "connector %s: CA certificate secret %q: %v", c.ID, c.CACertRef, err)
			}
			cfg.TLSClientConfig.CAData = []byte(ca)
		}
	case "Kubeconfig":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if c.Kubeconfig != "" {
			rules.ExplicitPath = expandHome(c.Kubeconfig)
		}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	default: // InheritFromDelegate: the worker's own service account, or its kubeconfig.
		cfg, err = rest.InClusterConfig()
		if err != nil {
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, contract.Fail(contract.Authentication, "connector %s (%s): cannot build a cluster configuration: %v", c.ID, c.Type, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "gantry"
	return cfg, nil
}

func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return p
}

func newClient(cfg *rest.Config) (*client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(cs.Discovery())
	return &client{cfg: cfg, disc: disc, cs: cs, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}, nil
}

// classify maps a Kubernetes API error to a failure category (spec 5.2), saying what was being
// done. A cancelled context is returned as is: an abort is not a failure.
func classify(ctx context.Context, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == context.Canceled {
		return ctx.Err()
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return err // already a step failure
	}
	what := fmt.Sprintf(format, args...)
	switch {
	case apierrors.IsUnauthorized(err):
		return contract.Fail(contract.Authentication, "%s: the cluster rejected the credentials: %v", what, err)
	case apierrors.IsForbidden(err):
		return contract.Fail(contract.Authorization, "%s: not allowed: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return contract.Fail(contract.Timeout, "%s: timed out: %v", what, err)
	case isConnectivity(err):
		return contract.Fail(contract.Connectivity, "%s: cannot reach the cluster: %v", what, err)
	}
	return contract.Fail(contract.Unknown, "%s: %v", what, err)
}

func isConnectivity(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ue) || (errors.As(err, &ne) && ne.Timeout()) ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host")
}

// RestConfig is the connection to a connector's cluster, for the other activities that talk
// to clusters (containerized step groups). Secrets it reads are added to mask.
func RestConfig(ctx context.Context, c plan.Connector, r secrets.Resolver, mask *secrets.Masker) (*rest.Config, error) {
	return restConfig(ctx, c, r, mask)
}

// Classify maps a Kubernetes API error to a step failure saying what was being done.
func Classify(ctx context.Context, err error, format string, args ...any) error {
	return classify(ctx, err, format, args...)
}
