// Package sso signs people in through the company's OpenID Connect provider: the Web UI runs
// the authorization code flow with PKCE, hands the command line the same ID token through a
// loopback redirect (gantry login), and every request's ID token is verified against the
// provider's keys, fetched once and cached, never by calling the provider per request. Who the
// person is in Gantry (their groups, hence roles and approver groups) is the identity file's
// mapping of the token's groups claim, read on every request.
package sso

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gantry-cd/gantry/identity"
)

// Config is what `gantry server --oidc-*` says about the provider.
type Config struct {
	// Issuer is the provider's issuer URL; its discovery document must answer at start.
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is the Web UI's callback as the provider knows it
	// (https://ui.example.com/gantry/oidc/callback).
	RedirectURL string
	// GroupsClaim names the ID token claim listing the person's groups (default "groups").
	GroupsClaim string
	// HTTPClient reaches the provider (default http.DefaultClient).
	HTTPClient *http.Client
	// Now is the clock tokens are checked against (default time.Now).
	Now func() time.Time
}

// Provider is a configured, reachable identity provider.
type Provider struct {
	cfg      Config
	oauth    oauth2.Config
	verifier *gooidc.IDTokenVerifier
	seal     sealer

	mu        sync.Mutex
	verified  map[[32]byte]*Claims
	signedOut map[[32]byte]time.Time
}

// Claims is what Gantry reads from a verified ID token.
type Claims struct {
	Subject string
	// Name is the person's user name: preferred_username, else email, else the subject.
	Name   string
	Email  string
	Groups []string
	Expiry time.Time
}

// New reads the provider's discovery document; a provider that does not answer is an error
// now, not at the first sign-in.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("OIDC needs an issuer URL and a client ID")
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	op, err := gooidc.NewProvider(gooidc.ClientContext(dctx, cfg.HTTPClient), strings.TrimSuffix(cfg.Issuer, "/")+"/")
	if err != nil {
		// Some issuers are written without the trailing slash their tokens carry.
		var err2 error
		if op, err2 = gooidc.NewProvider(gooidc.ClientContext(dctx, cfg.HTTPClient), strings.TrimSuffix(cfg.Issuer, "/")); err2 != nil {
			return nil, fmt.Errorf("OIDC issuer %s: %w", cfg.Issuer, err)
		}
	}
	p := &Provider{
		cfg: cfg,
		oauth: oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
			Endpoint: op.Endpoint(), Scopes: []string{gooidc.ScopeOpenID, "profile", "email", cfg.GroupsClaim}},
		verifier:  op.Verifier(&gooidc.Config{ClientID: cfg.ClientID, Now: cfg.Now}),
		seal:      newSealer(cfg.ClientSecret),
		verified:  map[[32]byte]*Claims{},
		signedOut: map[[32]byte]time.Time{},
	}
	return p, nil
}

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.cfg.Issuer }

// StartURL is the Web UI's address where a browser sign-in starts, next to the callback.
func (p *Provider) StartURL() string {
	return strings.TrimSuffix(p.cfg.RedirectURL, CallbackPath) + StartPath
}

// LooksLikeIDToken says whether a bearer token is a JWT (three dot-separated parts) rather
// than an identity-file token (gty_...).
func LooksLikeIDToken(token string) bool { return strings.Count(token, ".") == 2 }

// maxVerified bounds the cache of verified tokens; past it the cache starts again.
const maxVerified = 10000

var (
	// ErrSignedOut means the token was signed out of Gantry before it expired.
	ErrSignedOut = errors.New("this sign-in was signed out: sign in again")
	// ErrExpired means the token's lifetime is over.
	ErrExpired = errors.New("this sign-in expired: sign in again")
)

// Verify checks an ID token's signature (against the provider's cached keys), issuer,
// audience and expiry, and that it was not signed out. A token verified before is looked up,
// its expiry checked again.
func (p *Provider) Verify(ctx context.Context, raw string) (*Claims, error) {
	key := sha256.Sum256([]byte(raw))
	now := p.cfg.Now()
	p.mu.Lock()
	_, out := p.signedOut[key]
	c := p.verified[key]
	p.mu.Unlock()
	if out {
		return nil, ErrSignedOut
	}
	if c != nil {
		if !now.Before(c.Expiry) {
			return nil, fmt.Errorf("%w (at %s)", ErrExpired, c.Expiry.UTC().Format(time.RFC3339))
		}
		return c, nil
	}
	_, c, err := p.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.verified) >= maxVerified {
		p.verified = map[[32]byte]*Claims{}
	}
	p.verified[key] = c
	p.mu.Unlock()
	return c, nil
}

// verify checks a token with the provider's keys, uncached.
func (p *Provider) verify(ctx context.Context, raw string) (*gooidc.IDToken, *Claims, error) {
	tok, err := p.verifier.Verify(gooidc.ClientContext(ctx, p.cfg.HTTPClient), raw)
	var expired *gooidc.TokenExpiredError
	if errors.As(err, &expired) {
		return nil, nil, fmt.Errorf("%w (at %s)", ErrExpired, expired.Expiry.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return nil, nil, err
	}
	c, err := p.claims(tok)
	return tok, c, err
}

// claims reads the names and groups of a verified token.
func (p *Provider) claims(tok *gooidc.IDToken) (*Claims, error) {
	var all map[string]any
	if err := tok.Claims(&all); err != nil {
		return nil, err
	}
	str := func(k string) string { s, _ := all[k].(string); return s }
	c := &Claims{Subject: tok.Subject, Email: str("email"), Expiry: tok.Expiry, Name: str("preferred_username")}
	if c.Name == "" {
		c.Name = c.Email
	}
	if c.Name == "" {
		c.Name = tok.Subject
	}
	switch g := all[p.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok {
				c.Groups = append(c.Groups, s)
			}
		}
	case string:
		c.Groups = strings.Fields(strings.ReplaceAll(g, ",", " "))
	case nil:
	default:
		return nil, fmt.Errorf("the ID token's %q claim is neither a list nor a string", p.cfg.GroupsClaim)
	}
	return c, nil
}

// User verifies an ID token and maps its person onto the identity file's users and groups.
func (p *Provider) User(ctx context.Context, dir *identity.Directory, raw string) (*identity.User, error) {
	c, err := p.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	return dir.Federated(c.Name, c.Email, c.Groups)
}

// SignOut refuses a token from now until it expires (it is remembered by this process).
func (p *Provider) SignOut(raw string) {
	key := sha256.Sum256([]byte(raw))
	exp := p.cfg.Now().Add(24 * time.Hour)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.verified[key]; c != nil {
		exp = c.Expiry
	}
	delete(p.verified, key)
	now := p.cfg.Now()
	for k, e := range p.signedOut {
		if now.After(e) {
			delete(p.signedOut, k)
		}
	}
	p.signedOut[key] = exp
}
