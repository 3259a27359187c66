package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"gopkg.in/yaml.v3"

	"github.com/gantry-cd/gantry/access"
	"github.com/gantry-cd/gantry/cli"
	"github.com/gantry-cd/gantry/identity"
	"github.com/gantry-cd/gantry/identity/sso"
	"github.com/gantry-cd/gantry/internal/oidctest"
	"github.com/gantry-cd/gantry/server"
	"github.com/gantry-cd/gantry/status"
	"github.com/gantry-cd/gantry/webui"
)

// ssoSite is a Web UI and an API whose people sign in through a real provider on loopback.
type ssoSite struct {
	idp    *oidctest.Provider
	sso    *sso.Provider
	ui     *webui.Server
	api    *httptest.Server
	idFile string
	bot    string
}

func startSSOSite(t *testing.T, ctx context.Context) *ssoSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uiAddr := ln.Addr().String()
	ln.Close()
	s := &ssoSite{idFile: filepath.Join(t.TempDir(), "users.yaml")}
	d := &identity.Directory{Groups: []identity.Group{{Name: "release_managers", OIDCGroups: []string{"eng-release"}}, {Name: "viewers", OIDCGroups: []string{"everyone"}}}}
	if s.bot, err = d.AddUser("deploy-bot", "", []string{"release_managers"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Save(s.idFile); err != nil {
		t.Fatal(err)
	}
	s.idp = oidctest.Start(t, map[string][]string{"alice": {"eng-release", "everyone"}, "bob": {"everyone"}}, "http://"+uiAddr+sso.CallbackPath)
	if s.sso, err = sso.New(ctx, sso.Config{Issuer: s.idp.Issuer, ClientID: s.idp.ClientID, ClientSecret: s.idp.ClientSecret, RedirectURL: "http://" + uiAddr + sso.CallbackPath}); err != nil {
		t.Fatal(err)
	}
	gate := &access.Gate{IdentityFile: s.idFile, Starter: env.starter, SSO: s.sso}
	user := func(token string) (*identity.User, error) {
		u, _, err := gate.User(ctx, token)
		return u, err
	}
	s.ui, err = webui.Start(ctx, webui.Options{Listen: uiAddr, Temporal: env.srv.Address, SignIn: webui.UserName(user), User: user, Access: gate,
		Logs: webui.NewStepLogs(env.logs, env.starter), Executions: env.starter, Decisions: &webui.Decisions{Starter: env.starter, User: user, Access: gate},
		SSO: s.sso, Directory: gate.Directory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ui.Stop)
	s.api = httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: s.idFile, SSO: s.sso}))
	t.Cleanup(s.api.Close)
	return s
}

// openStep opens the run's page with a step selected, once the sign-in has landed on it.
func openStep(t *testing.T, b context.Context, page, user string) {
	t.Helper()
	waitText(t, b, "signed in as "+user)
	if err := chromedp.Run(b, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	pageText(t, b, page+"#gate.gate", "APPROVAL_WAITING", "signed in as "+user)
}

// providerLogIn signs in on the provider's login page the browser is on, or waits for it.
func providerLogIn(t *testing.T, b context.Context, user string) {
	t.Helper()
	if err := chromedp.Run(b, chromedp.WaitVisible("#username", chromedp.ByQuery), chromedp.SendKeys("#username", user, chromedp.ByQuery),
		chromedp.SendKeys("#password", oidctest.Password, chromedp.ByQuery), chromedp.Submit("#username", chromedp.ByQuery)); err != nil {
		t.Fatalf("the provider's login page: %v", err)
	}
}

// decide clicks a button of the decision form beneath the graph and returns the page's
// outcome (#result or #refused). The click is remembered by the form's document, not the
// page: when the graph's refresh replaces the form before its click submitted (a loaded
// machine), the new form is clicked too. A loaded machine may take most of a minute to answer.
func decide(t *testing.T, b context.Context, button string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		js := `(() => { const d = document.getElementById("decide"); if (!d || !d.contentDocument) return "";
			const doc = d.contentDocument, o = doc.getElementById("result") || doc.getElementById("refused");
			if (o) return o.id + ": " + o.textContent;
			const btn = doc.getElementById("` + button + `"); if (btn && !doc.gantryClicked) { doc.gantryClicked = true; btn.click(); } return ""; })()`
		_ = chromedp.Run(b, chromedp.Evaluate(js, &out))
		if out != "" {
			return out
		}
	}
	t.Fatal("the decision form gave no outcome")
	return ""
}

// People sign in to the Web UI through the company's identity provider: a member of the
// approver group (mapped from the provider's group) approves from the graph, someone outside
// it is refused; the command line signs in the same way and lists approvals through the API;
// sign-out, expiry and a removed mapping apply to the next request; identity-file tokens keep
// working.
func TestSignInWithOIDC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startSSOSite(t, ctx)
	waiting := startAndWait(t, ctx, strings.Replace(approvalPipeline("sso_decide", "", ""), "minimumCount: 2", "minimumCount: 1", 1))
	page := s.ui.URL + webui.ExecutionsPath + "/" + waiting

	// Bob is a viewer: he signs in, sees the approval, and is refused.
	bob := browser(t, ctx)
	pageText(t, bob, page, "Sign in with your company account")
	if err := chromedp.Run(bob, chromedp.Click("#sso", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	providerLogIn(t, bob, "bob")
	openStep(t, bob, page, "bob")
	if out := decide(t, bob, "approve"); !strings.HasPrefix(out, "refused") || !strings.Contains(out, "release_managers") {
		t.Fatalf("bob's approval: %q", out)
	}

	// Alice is a release manager through her provider group: her approval lets the run go on.
	alice := browser(t, ctx)
	pageText(t, alice, page, "Sign in with your company account")
	if err := chromedp.Run(alice, chromedp.Click("#sso", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	providerLogIn(t, alice, "alice")
	openStep(t, alice, page, "alice")
	screenshot(t, alice, "sso-approval")
	if out := decide(t, alice, "approve"); !strings.HasPrefix(out, "result") {
		t.Fatalf("alice's approval: %q", out)
	}
	res, err := env.starter.Result(ctx, waiting)
	if err != nil || res.Status != status.Succeeded {
		t.Fatalf("run: %v %v", res, err)
	}

	// The command line: gantry login through the same provider, then gantry approvals.
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	second := startAndWait(t, ctx, approvalPipeline("sso_cli", "", ""))
	r, w := io.Pipe()
	done := make(chan int, 1)
	var loginOut bytes.Buffer
	go func() {
		defer w.Close()
		done <- cli.Main([]string{"login", "--server", s.api.URL, "--no-browser", "--timeout", "2m"}, io.MultiWriter(w, &loginOut), &loginOut)
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	link, ok := strings.CutPrefix(strings.TrimSpace(line), "sign in at: ")
	if err != nil || !ok {
		t.Fatalf("gantry login printed %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	if err := chromedp.Run(alice, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	providerLogIn(t, alice, "alice")
	if code := <-done; code != 0 || !strings.Contains(loginOut.String(), "as alice (groups: release_managers, viewers)") {
		t.Fatalf("gantry login: %d %s", code, loginOut.String())
	}
	var out bytes.Buffer
	if code := cli.Main([]string{"approvals", "--server", s.api.URL}, &out, &out); code != 0 || !strings.Contains(out.String(), second) {
		t.Fatalf("gantry approvals after gantry login: %d %s", code, out.String())
	}
	var kept map[string]struct{ Token string }
	b, err := os.ReadFile(filepath.Join(config, "gantry", "credentials.yaml"))
	if err == nil {
		err = yaml.Unmarshal(b, &kept)
	}
	token := kept[s.api.URL].Token
	if err != nil || !sso.LooksLikeIDToken(token) {
		t.Fatalf("the kept sign-in: %v %v", kept, err)
	}

	// A mapping removed from the identity file applies to the next request.
	d, _ := identity.Load(s.idFile)
	saved := *d
	d.Groups = []identity.Group{{Name: "release_managers"}}
	if err := d.Save(s.idFile); err != nil {
		t.Fatal(err)
	}
	if code, body := apiGet(t, s.api.URL+"/api/v1/pending", token); code != http.StatusUnauthorized || !strings.Contains(body, "no group") {
		t.Fatalf("after the mapping went: %d %s", code, body)
	}
	if err := saved.Save(s.idFile); err != nil {
		t.Fatal(err)
	}
	// An expired token is refused (the same token, on a server whose clock is two hours on).
	later, err := sso.New(ctx, sso.Config{Issuer: s.idp.Issuer, ClientID: s.idp.ClientID, RedirectURL: s.ui.URL + sso.CallbackPath,
		Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	expired := httptest.NewServer(server.New(server.Options{Starter: env.starter, IdentityFile: s.idFile, SSO: later}))
	defer expired.Close()
	if code, body := apiGet(t, expired.URL+"/api/v1/pending", token); code != http.StatusUnauthorized || !strings.Contains(body, "expired") {
		t.Fatalf("an expired token: %d %s", code, body)
	}
	// Sign-out: the token is refused from the next request on; the bot's token still works.
	out.Reset()
	if code := cli.Main([]string{"logout", "--server", s.api.URL}, &out, &out); code != 0 {
		t.Fatalf("gantry logout: %d %s", code, out.String())
	}
	if code, body := apiGet(t, s.api.URL+"/api/v1/pending", token); code != http.StatusUnauthorized || !strings.Contains(body, "signed out") {
		t.Fatalf("after sign-out: %d %s", code, body)
	}
	if code, body := apiGet(t, s.api.URL+"/api/v1/pending", s.bot); code != http.StatusOK || !strings.Contains(body, second) {
		t.Fatalf("the identity-file token: %d %s", code, body)
	}
	if err := env.starter.Abort(ctx, second, "test", "done"); err != nil {
		t.Log(err)
	}
}

// apiGet calls the API with a bearer token.
func apiGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
