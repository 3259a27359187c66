package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/internal/oidctest"
	"github.com/gantry-cd/gantry/pipeline/load"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/workflows"
)

// BenchmarkAPIRoles measures what roles cost a request: the same GET of an execution's tree,
// by one of 1,000 users, through a server whose identity file defines 50 roles (authorized:
// the file is read, the execution's pipeline looked up, the roles matched) and through one
// whose file has the same users and no roles. Calls alternate; the ratio is of medians.
func BenchmarkAPIRoles(b *testing.B) {
	ctx := context.Background()
	exec, err := env.starter.Start(ctx, compile(b, "roles_bench.yaml", []byte(outcomeFailedPipeline), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := env.starter.Result(ctx, exec.ID); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	plain, roles := &identity.Directory{}, &identity.Directory{}
	var tok string
	for i := range 1000 {
		group := fmt.Sprintf("team%d", i%50)
		t, err := plain.AddUser(fmt.Sprintf("user%d", i), "", []string{group})
		if err != nil {
			b.Fatal(err)
		}
		roles.Users = append(roles.Users, plain.Users[i])
		tok = t
	}
	for i := range 50 {
		name := fmt.Sprintf("role%d", i)
		if err := roles.SetRole(identity.Role{Name: name, Permissions: []identity.Permission{{Actions: []identity.Action{identity.View, identity.Execute},
			Pipelines: []string{fmt.Sprintf("team%d_*", i), "outcome_*"}}}}); err != nil {
			b.Fatal(err)
		}
		if err := roles.Grant(fmt.Sprintf("team%d", i), name); err != nil {
			b.Fatal(err)
		}
	}
	urls := map[bool]string{}
	for withRoles, d := range map[bool]*identity.Directory{false: plain, true: roles} {
		path := filepath.Join(dir, fmt.Sprintf("users-%v.yaml", withRoles))
		if err := d.Save(path); err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: path}))
		b.Cleanup(srv.Close)
		urls[withRoles] = srv.URL
	}
	took := map[bool][]float64{}
	b.ResetTimer()
	for range b.N {
		for _, withRoles := range []bool{false, true} {
			start := time.Now()
			if err := call(urls[withRoles], tok, "GET", "/api/v1/executions/"+exec.ID, nil, http.StatusOK, nil); err != nil {
				b.Fatal(err)
			}
			took[withRoles] = append(took[withRoles], float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.StopTimer()
	with, without := median(took[true]), median(took[false])
	b.ReportMetric(with, "ms/call-roles")
	b.ReportMetric(without, "ms/call-no-roles")
	b.ReportMetric(with/without, "ratio")
}

// BenchmarkAPICallOIDC measures what signing in with the company's identity provider costs a
// request: the same GET of an execution's tree through one server, signed with an ID token
// (its signature checked against the provider's cached keys, its groups mapped by the
// identity file) and with an identity-file token (the file's 1,000 token hashes compared).
// Calls alternate; the ratio is of medians.
func BenchmarkAPICallOIDC(b *testing.B) {
	ctx := context.Background()
	exec, err := env.starter.Start(ctx, compile(b, "oidc_bench.yaml", []byte(outcomeFailedPipeline), load.Options{}), workflows.Trigger{Type: "MANUAL", User: "bench"}, workflows.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := env.starter.Result(ctx, exec.ID); err != nil {
		b.Fatal(err)
	}
	d := &identity.Directory{Groups: []identity.Group{{Name: "release_managers", OIDCGroups: []string{"eng-release"}}}}
	var fileToken string
	for i := range 1000 {
		if fileToken, err = d.AddUser(fmt.Sprintf("user%d", i), "", []string{"release_managers"}); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "users.yaml")
	if err := d.Save(path); err != nil {
		b.Fatal(err)
	}
	// The ID token comes from a sign-in through the provider's login page.
	var h http.Handler = http.NotFoundHandler()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	b.Cleanup(web.Close)
	idp := oidctest.Start(b, map[string][]string{"alice": {"eng-release"}}, web.URL+sso.CallbackPath)
	p, err := sso.New(ctx, sso.Config{Issuer: idp.Issuer, ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, RedirectURL: web.URL + sso.CallbackPath})
	if err != nil {
		b.Fatal(err)
	}
	h = p.Handler(sso.HandlerOptions{Directory: (&identity.File{Path: path}).Load, Cookie: "session"})
	jar, _ := cookiejar.New(nil)
	resp, err := idp.LogIn(&http.Client{Jar: jar}, web.URL+sso.StartPath, "alice")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	var idToken string
	u, _ := url.Parse(web.URL + "/gantry/")
	for _, c := range jar.Cookies(u) {
		if c.Name == "session" {
			idToken = c.Value
		}
	}
	srv := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: path, SSO: p}))
	b.Cleanup(srv.Close)
	took := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		for _, kind := range []string{"file", "oidc"} {
			tok := map[string]string{"file": fileToken, "oidc": idToken}[kind]
			start := time.Now()
			if err := call(srv.URL, tok, "GET", "/api/v1/executions/"+exec.ID, nil, http.StatusOK, nil); err != nil {
				b.Fatal(kind, err)
			}
			took[kind] = append(took[kind], float64(time.Since(start).Microseconds())/1000)
		}
	}
	b.StopTimer()
	oidc, file := median(took["oidc"]), median(took["file"])
	b.ReportMetric(oidc, "ms/call-oidc")
	b.ReportMetric(file, "ms/call-file-token")
	b.ReportMetric(oidc/file, "ratio")
}
