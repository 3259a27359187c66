package sso

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gantry-cd/gantry/identity"
)

// The paths of the browser's sign-in, served by the Web UI.
const (
	StartPath    = "/gantry/oidc/start"
	CallbackPath = "/gantry/oidc/callback"
	flowCookie   = "gantry_oidc_"
	flowLifetime = 10 * time.Minute
	// handoffLifetime bounds how long the command line has to redeem its code.
	handoffLifetime = 2 * time.Minute
)

// flow is a sign-in under way, kept sealed in a cookie of the browser that started it, so any
// replica of the UI can finish it.
type flow struct {
	State, Nonce, Verifier, Next string
	// The command line's loopback listener, its state and PKCE challenge (gantry login).
	CLIPort                int
	CLIState, CLIChallenge string
	Expires                time.Time
}

// handoff is the code the command line redeems for the ID token at the API: sealed, short-
// lived and bound to the challenge of a verifier only that command knows.
type handoff struct {
	Token, Challenge string
	Expires          time.Time
}

// HandlerOptions say how a finished sign-in becomes a session.
type HandlerOptions struct {
	// Directory is the identity file now: a person none of whose groups it maps is refused.
	Directory func() (*identity.Directory, error)
	// Cookie names the Web UI's session cookie (scoped to /gantry), set to the ID token.
	Cookie string
}

// Handler serves StartPath and CallbackPath.
func (p *Provider) Handler(o HandlerOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StartPath, p.start)
	mux.HandleFunc("GET "+CallbackPath, func(w http.ResponseWriter, r *http.Request) { p.callback(w, r, o) })
	return mux
}

// start sends the browser to the provider with a new state, nonce and PKCE verifier.
func (p *Provider) start(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: safeNext(q.Get("next")), Expires: p.cfg.Now().Add(flowLifetime)}
	if port := q.Get("cli_port"); port != "" {
		n, err := strconv.Atoi(port)
		f.CLIPort, f.CLIState, f.CLIChallenge = n, q.Get("cli_state"), q.Get("cli_challenge")
		if err != nil || n < 1 || n > 65535 || f.CLIState == "" || len(f.CLIState) > 128 || f.CLIChallenge == "" || len(f.CLIChallenge) > 128 {
			page(w, http.StatusBadRequest, "This sign-in link is damaged", "Run gantry login again and open the address it prints.")
			return
		}
	}
	b, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{Name: flowCookie + f.State, Value: p.seal.seal(b), Path: "/gantry/oidc", MaxAge: int(flowLifetime / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, p.oauth.AuthCodeURL(f.State, gooidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)), http.StatusFound)
}

// callback finishes a sign-in: the code is exchanged (with the flow's verifier), the ID token
// verified (with its nonce), the person mapped onto the identity file's groups; then the
// browser gets its session cookie, or the command line its handoff code.
func (p *Provider) callback(w http.ResponseWriter, r *http.Request, o HandlerOptions) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		page(w, http.StatusUnauthorized, "The identity provider did not sign you in", e+": "+q.Get("error_description"))
		return
	}
	state := q.Get("state")
	ck, err := r.Cookie(flowCookie + state)
	var f flow
	if err == nil {
		err = p.seal.open(ck.Value, &f)
	}
	if err != nil || f.State != state || !p.cfg.Now().Before(f.Expires) {
		page(w, http.StatusBadRequest, "This sign-in was not started here, or took longer than 10 minutes", "Start again from the sign-in page.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: flowCookie + state, Path: "/gantry/oidc", MaxAge: -1, HttpOnly: true})
	ctx, cancel := context.WithTimeout(gooidc.ClientContext(r.Context(), p.cfg.HTTPClient), 30*time.Second)
	defer cancel()
	tok, err := p.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		page(w, http.StatusBadGateway, "The identity provider did not complete the sign-in", err.Error())
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, c, err := p.verify(ctx, raw)
	if err == nil && idt.Nonce != f.Nonce {
		err = errors.New("the ID token's nonce is not this sign-in's")
	}
	if err != nil {
		page(w, http.StatusUnauthorized, "The identity provider's answer was not accepted", err.Error())
		return
	}
	dir, err := o.Directory()
	if err != nil {
		page(w, http.StatusInternalServerError, "The server's identity file cannot be read", "Tell whoever runs Gantry.")
		return
	}
	u, err := dir.Federated(c.Name, c.Email, c.Groups)
	if err != nil {
		page(w, http.StatusForbidden, "Signed in as "+c.Name+", who may not use Gantry", err.Error()+". Ask whoever runs Gantry to map one of your groups in the identity file.")
		return
	}
	if f.CLIPort != 0 {
		b, _ := json.Marshal(handoff{Token: raw, Challenge: f.CLIChallenge, Expires: p.cfg.Now().Add(handoffLifetime)})
		back := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(f.CLIPort), Path: "/callback",
			RawQuery: url.Values{"state": {f.CLIState}, "code": {p.seal.seal(b)}}.Encode()}
		http.Redirect(w, r, back.String(), http.StatusFound)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: o.Cookie, Value: raw, Path: "/gantry", Expires: c.Expiry, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	next := f.Next
	if next == "" {
		next = "/gantry/sign-in"
	}
	// A page, not a redirect: the cookie is SameSite=Strict, and a redirect chain that began
	// at the provider would not carry it to the next page.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = signedInPage.Execute(w, struct{ User, Next string }{u.Name, next})
}

// ErrHandoff means a login code is not one this server issued, expired, or does not match
// the verifier.
var ErrHandoff = errors.New("the login code is invalid or expired, or not this command's: run gantry login again")

// Redeem turns the command line's handoff code and PKCE verifier into the ID token.
func (p *Provider) Redeem(ctx context.Context, code, verifier string) (string, *Claims, error) {
	var h handoff
	if err := p.seal.open(code, &h); err != nil || !p.cfg.Now().Before(h.Expires) || oauth2.S256ChallengeFromVerifier(verifier) != h.Challenge {
		return "", nil, ErrHandoff
	}
	c, err := p.Verify(ctx, h.Token)
	if err != nil {
		return "", nil, err
	}
	return h.Token, c, nil
}

var signedInPage = template.Must(template.New("signed-in").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={{.Next}}"><title>Gantry: signed in</title></head>
<body style="font-family:sans-serif;max-width:32em;margin:4em auto"><p id="signed-in">Signed in as <b>{{.User}}</b>. <a href="{{.Next}}">Continue</a></p></body></html>`))

var messagePage = template.Must(template.New("message").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Gantry: {{.Title}}</title></head>
<body style="font-family:sans-serif;max-width:40em;margin:4em auto"><h1 id="title">{{.Title}}</h1><p id="detail">{{.Detail}}</p>
<p><a href="/gantry/sign-in">Sign in</a></p></body></html>`))

func page(w http.ResponseWriter, code int, title, detail string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = messagePage.Execute(w, struct{ Title, Detail string }{title, detail})
}

// safeNext keeps only a return address on Gantry's own pages.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/gantry/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	return next
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sealer encrypts and authenticates what travels through the browser. Its key derives from
// the client secret, which every replica of the server shares; without one it is random,
// and a sign-in must finish on the process that began it.
type sealer struct{ aead cipher.AEAD }

func newSealer(secret string) sealer {
	key := sha256.Sum256([]byte("gantry-oidc-seal\x00" + secret))
	if secret == "" {
		_, _ = rand.Read(key[:])
	}
	block, _ := aes.NewCipher(key[:])
	aead, _ := cipher.NewGCM(block)
	return sealer{aead}
}

func (s sealer) seal(plain []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, nil))
}

func (s sealer) open(sealed string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return errors.New("not sealed here")
	}
	plain, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], nil)
	if err != nil {
		return fmt.Errorf("not sealed here: %w", err)
	}
	return json.Unmarshal(plain, v)
}
