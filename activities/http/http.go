// Package http runs Http steps (spec 15.3): it sends the request and returns the response; the
// workflow evaluates output variables and the assertion over it.
package http

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/gantry-cd/gantry/activities/secrets"
	"github.com/gantry-cd/gantry/contract"
	"github.com/gantry-cd/gantry/stepspec"
)

// MaxBodyBytes bounds the response body kept for expressions.
const MaxBodyBytes = 1 << 20

// Activity runs Http steps.
type Activity struct {
	Secrets secrets.Resolver
	Client  *http.Client // nil uses a default client
}

// Run sends the request. Its outputs are httpUrl, httpMethod, httpResponseCode and
// httpResponseBody (masked).
func (a *Activity) Run(ctx context.Context, in contract.StepInput) (contract.StepResult, error) {
	spec, err := stepspec.Decode[stepspec.HttpSpec](in.Spec)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "Http spec: %v", err)
	}
	method := strings.ToUpper(strings.TrimSpace(spec.Method))
	if method == "" {
		method = http.MethodGet
	}
	mask := &secrets.Masker{}
	rawURL, err := secrets.Expand(ctx, a.Secrets, mask, spec.URL)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "url: %v", err)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "url %q is not an absolute http(s) URL", mask.Apply(rawURL))
	}
	body, err := secrets.Expand(ctx, a.Secrets, mask, spec.RequestBody)
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "requestBody: %v", err)
	}
	if in.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		return contract.StepResult{}, contract.Fail(contract.Unknown, "build request: %v", err)
	}
	for _, h := range spec.Headers {
		v, err := secrets.Expand(ctx, a.Secrets, mask, h.Value)
		if err != nil {
			return contract.StepResult{}, contract.Fail(contract.Unknown, "header %s: %v", h.Key, err)
		}
		req.Header.Add(h.Key, v)
	}
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return contract.StepResult{}, classify(ctx, in, mask, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return contract.StepResult{}, classify(ctx, in, mask, err)
	}
	return contract.StepResult{Outputs: map[string]any{
		"httpUrl":          mask.Apply(u.String()),
		"httpMethod":       method,
		"httpResponseCode": resp.StatusCode,
		"httpResponseBody": mask.Apply(string(b)),
	}}, nil
}

// classify maps a transport error to a category: deadline ⇒ Timeout, TLS ⇒ Authentication,
// anything else (refused, DNS, reset) ⇒ Connectivity.
func classify(ctx context.Context, in contract.StepInput, mask *secrets.Masker, err error) error {
	msg := mask.Apply(err.Error())
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return contract.Fail(contract.Timeout, "no response within the step timeout %s: %s", in.Timeout, msg)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return contract.Fail(contract.Authentication, "TLS: %s", msg)
	}
	return contract.Fail(contract.Connectivity, "request failed: %s", msg)
}
