package codec

import (
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/gantry-cd/gantry/identity"
)

// ServerOptions configure the codec endpoint the Temporal UI calls to show decrypted payloads.
type ServerOptions struct {
	// Origins may call from a browser (the Temporal UI's address); "" entries are ignored.
	Origins []string
	// User authenticates the bearer token; Groups, when set, restricts decryption to members.
	User   func(token string) (*identity.User, error)
	Groups []string
}

// TokenCookie carries a user's token from the Web UI's sign-in page to the codec endpoint.
const TokenCookie = "gantry_token"

// Handler serves POST /encode and /decode (Temporal's remote codec protocol) for authorised
// users, with CORS for the UI's origin.
func (c *Codec) Handler(o ServerOptions) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(o.Origins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-Namespace")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			// The Web UI gantry serves signs users in with a cookie on its own origin.
			if ck, err := r.Cookie(TokenCookie); err == nil && ck.Value != "" {
				token, ok = ck.Value, true
			}
		}
		if !ok {
			http.Error(w, "missing bearer token (or sign in to the Web UI)", http.StatusUnauthorized)
			return
		}
		u, err := o.User(token)
		if err != nil {
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		if len(o.Groups) > 0 && !slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(o.Groups, g) }) {
			http.Error(w, "not in a group allowed to decrypt", http.StatusForbidden)
			return
		}
		codec.ServeHTTP(w, r)
	})
}
