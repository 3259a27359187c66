package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
)

// SignInRoutes are the calls gantry login makes before it has a token.
var SignInRoutes = []WebhookRoute{
	{"GET", "/api/v1/auth", func(s *Server) http.HandlerFunc { return s.authInfo }},
	{"POST", "/api/v1/auth/token", func(s *Server) http.HandlerFunc { return s.redeem }},
}

// AuthInfo says how people sign in to this server.
type AuthInfo struct {
	// OIDC is set when people sign in with the company's identity provider.
	OIDC *OIDCInfo `json:"oidc,omitempty"`
}

// OIDCInfo is where the browser part of gantry login starts.
type OIDCInfo struct {
	Issuer string `json:"issuer"`
	SignIn string `json:"signIn"`
}

// SignInRedeem is gantry login's token call: the handoff code the loopback redirect brought,
// and the PKCE verifier only that command holds.
type SignInRedeem struct {
	Code     string `json:"code"`
	Verifier string `json:"verifier"`
}

// SignInToken is what a redeemed login code gives the command line.
type SignInToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	User      string    `json:"user"`
	Groups    []string  `json:"groups"`
}

func (s *Server) authInfo(w http.ResponseWriter, _ *http.Request) {
	var out AuthInfo
	if s.o.SSO != nil {
		out.OIDC = &OIDCInfo{Issuer: s.o.SSO.Issuer(), SignIn: s.o.SSO.StartURL()}
	}
	writeJSON(w, http.StatusOK, out)
}

// redeem turns gantry login's handoff code and PKCE verifier into an ID token to send as the
// bearer token, for a person the identity file lets in.
func (s *Server) redeem(w http.ResponseWriter, r *http.Request) {
	if s.o.SSO == nil {
		fail(w, http.StatusNotFound, "no-oidc", "this server signs people in with identity-file tokens only (gantry user add)")
		return
	}
	var req SignInRedeem
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "bad-request", "send {\"code\": ..., \"verifier\": ...}: %v", err)
		return
	}
	token, c, err := s.o.SSO.Redeem(r.Context(), req.Code, req.Verifier)
	if err != nil {
		fail(w, http.StatusUnauthorized, "unauthenticated", "%v", err)
		return
	}
	dir, err := s.gate.Directory()
	if err != nil {
		fail(w, http.StatusInternalServerError, "identity", "the server's identity file cannot be read")
		return
	}
	u, err := dir.Federated(c.Name, c.Email, c.Groups)
	if err != nil {
		fail(w, http.StatusForbidden, "forbidden", "%s: %v", c.Name, err)
		return
	}
	writeJSON(w, http.StatusOK, SignInToken{Token: token, ExpiresAt: c.Expiry, User: u.Name, Groups: u.Groups})
}

// signOut refuses the caller's ID token from the next request on.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, _ *identity.User) {
	tok := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if s.o.SSO == nil || !sso.LooksLikeIDToken(tok) {
		fail(w, http.StatusBadRequest, "not-signed-in", "an identity-file token is not a sign-in: remove its hash from the identity file to revoke it")
		return
	}
	s.o.SSO.SignOut(tok)
	w.WriteHeader(http.StatusNoContent)
}
