package webui

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/gantry-cd/gantry/codec"
	"github.com/gantry-cd/gantry/identity/sso"
)

var signInPage = template.Must(template.New("sign-in").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Gantry: sign in</title>
<style>body{font-family:sans-serif;max-width:32em;margin:4em auto}input{width:100%;padding:.4em;margin:.5em 0}</style></head>
<body><h1>Sign in to Gantry</h1>
{{if .User}}<p id="signed-in">Signed in as <b>{{.User}}</b>: the UI shows step logs, and the payloads your groups may read. <a href="/">Open the UI</a></p>
<form method="post"><input type="hidden" name="sign-out" value="1"><button type="submit" id="sign-out">Sign out</button></form>
<h2>Sign in as someone else</h2>{{end}}{{if .Error}}<p id="error" style="color:#b00">{{.Error}}</p>{{end}}
{{if .SSO}}<p><a id="sso" href="/gantry/oidc/start?next={{.Next}}">Sign in with your company account</a></p><p>Or paste a Gantry API token:</p>{{else}}
<p>Paste your Gantry API token (<code>gantry user add</code>) to see executions, their step logs and decision pages, and encrypted payloads in plain text.</p>{{end}}
<form method="post"><input type="hidden" name="next" value="{{.Next}}"><input type="password" name="token" id="token" autocomplete="off" placeholder="token"><button type="submit" id="submit">Sign in</button></form>
</body></html>`))

// signIn serves the page that turns a Gantry token into the cookie the codec endpoint reads.
// The cookie is HttpOnly and scoped to /gantry: the UI's own scripts never see the token.
// With single sign-on it links to the identity provider, and signing out refuses the ID token
// from the next request on, wherever it was copied.
func signIn(check func(string) (string, error), idp *sso.Provider) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := struct {
			User, Error, Next string
			SSO               bool
		}{Next: r.FormValue("next"), SSO: idp != nil}
		if !strings.HasPrefix(data.Next, "/gantry/") || strings.HasPrefix(data.Next, "//") {
			data.Next = "" // only back to Gantry's own pages
		}
		switch r.Method {
		case http.MethodGet:
			if ck, err := r.Cookie(codec.TokenCookie); err == nil && check != nil {
				data.User, _ = check(ck.Value)
			}
		case http.MethodPost:
			// Only this page may sign a browser in or out: no form from another site.
			if o := r.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					http.Error(w, "sign-in from another origin", http.StatusForbidden)
					return
				}
			}
			if r.PostFormValue("sign-out") != "" {
				if ck, err := r.Cookie(codec.TokenCookie); err == nil && idp != nil && sso.LooksLikeIDToken(ck.Value) {
					idp.SignOut(ck.Value)
				}
				http.SetCookie(w, &http.Cookie{Name: codec.TokenCookie, Path: "/gantry", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
				break
			}
			token := r.PostFormValue("token")
			user, err := "", error(nil)
			if check == nil {
				err = http.ErrNotSupported
			} else {
				user, err = check(token)
			}
			if err != nil {
				w.WriteHeader(http.StatusUnauthorized)
				data.Error = "That token is not valid here."
				break
			}
			http.SetCookie(w, &http.Cookie{Name: codec.TokenCookie, Value: token, Path: "/gantry", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if data.Next != "" {
				http.Redirect(w, r, data.Next, http.StatusSeeOther)
				return
			}
			data.User = user
		default:
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = signInPage.Execute(w, data)
	})
}
