package identity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rolesFile = `
users:
  - {name: dev, groups: [web-devs]}
  - {name: lead, groups: [web-devs, web-leads]}
  - {name: ops, groups: [platform]}
  - {name: root, groups: [admins]}
  - {name: auditor, groups: [readers]}
  - {name: nobody, groups: [unknown]}
  - {name: bot, groups: [bots], triggers: ["web-*", nightly]}
groups:
  - {name: web-devs, roles: [web-developer]}
  - {name: web-leads, roles: [web-releaser]}
  - {name: platform, roles: [operator]}
  - {name: admins, roles: [administrator]}
  - {name: readers, roles: [reader]}
  - {name: bots, roles: [web-developer]}
roles:
  - name: web-developer
    permissions:
      - {actions: [view, execute], pipelines: ["web-*"], environments: [PreProduction]}
  - name: web-releaser
    permissions:
      - {actions: [execute, abort], pipelines: ["web-*"], environments: [Production, "prod-*"]}
  - name: operator
    permissions:
      - {actions: [view, execute, abort, create]}
  - name: reader
    permissions:
      - {actions: [view]}
  - name: administrator
    permissions:
      - {actions: [admin]}
`

func loadRoles(t *testing.T, text string) *Directory {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAuthorizeTable(t *testing.T) {
	d := loadRoles(t, rolesFile)
	prod := &Environment{ID: "prod-eu", Type: "Production"}
	staging := &Environment{ID: "staging", Type: "PreProduction"}
	other := &Environment{ID: "dr", Type: "Production"}
	cases := []struct {
		user     string
		action   Action
		pipeline string
		env      *Environment
		allowed  bool
		reason   string // part of the refusal
	}{
		{"dev", Execute, "web-deploy", nil, true, ""},
		{"dev", View, "web-deploy", nil, true, ""},
		{"dev", Execute, "payments-deploy", nil, false, "no role of the user's (web-developer) grants execute"},
		{"dev", View, "payments-deploy", nil, false, "grants view"},
		{"dev", Abort, "web-deploy", nil, false, "grants abort"},
		{"dev", Create, "web-deploy", nil, false, "grants create"},
		{"dev", Admin, "", nil, false, "grants admin"},
		{"dev", Execute, "web-deploy", staging, true, ""},
		{"dev", Execute, "web-deploy", prod, false, "not into this environment"},
		{"lead", Execute, "web-deploy", prod, true, ""},  // by type and by identifier
		{"lead", Execute, "web-deploy", other, true, ""}, // type Production
		{"lead", Abort, "web-deploy", nil, true, ""},
		{"lead", Abort, "payments-deploy", nil, false, "grants abort"},
		{"ops", Execute, "payments-deploy", prod, true, ""},
		{"ops", Create, "anything", nil, true, ""},
		{"ops", Admin, "", nil, false, "grants admin"},
		{"root", Admin, "", nil, true, ""},
		{"root", Execute, "payments-deploy", prod, true, ""}, // admin implies everything
		{"auditor", View, "payments-deploy", nil, true, ""},
		{"auditor", Execute, "payments-deploy", nil, false, "grants execute"},
		{"nobody", View, "web-deploy", nil, false, "holds a role"},
		{"bot", Execute, "web-deploy", staging, true, ""},
		{"bot", Execute, "payments-deploy", nil, false, "grants execute"},
	}
	for _, c := range cases {
		var u *User
		for i := range d.Users {
			if d.Users[i].Name == c.user {
				u = &d.Users[i]
			}
		}
		err := d.Authorize(u, c.action, Resource{Pipeline: c.pipeline, Environment: c.env, Stage: "deploy"})
		if (err == nil) != c.allowed {
			t.Errorf("%s %s %s %v: allowed %v, want %v (%v)", c.user, c.action, c.pipeline, c.env, err == nil, c.allowed, err)
			continue
		}
		var f *Forbidden
		if !c.allowed && (!errors.As(err, &f) || !strings.Contains(err.Error(), c.reason) || !strings.HasPrefix(err.Error(), c.user+" may not "+string(c.action))) {
			t.Errorf("%s %s %s: refusal %q, want one containing %q", c.user, c.action, c.pipeline, err, c.reason)
		}
	}
	if err := d.Authorize(nil, View, Resource{Pipeline: "web-deploy"}); err == nil {
		t.Error("no user was allowed")
	}
	var f *Forbidden
	err := d.Authorize(&d.Users[0], Execute, Resource{Pipeline: "web-deploy", Environment: prod, Stage: "deploy_prod"})
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "environment prod-eu (Production) from stage deploy_prod of pipeline web-deploy") {
		t.Errorf("the environment refusal does not name the stage and environment: %v", err)
	}
}

func TestWithoutRolesEveryoneMayDoEverything(t *testing.T) {
	d := loadRoles(t, "users:\n  - {name: dev, groups: [web-devs]}\ngroups:\n  - {name: web-devs}\n")
	if d.Enforcing() {
		t.Fatal("a file without roles enforces")
	}
	for _, a := range Actions {
		if err := d.Authorize(&d.Users[0], a, Resource{Pipeline: "payments-deploy", Environment: &Environment{ID: "prod", Type: "Production"}}); err != nil {
			t.Errorf("%s refused without roles: %v", a, err)
		}
	}
}

func TestTriggerIdentity(t *testing.T) {
	d := loadRoles(t, rolesFile)
	if u := d.TriggerIdentity("web-push"); u == nil || u.Name != "bot" {
		t.Errorf("web-push acts as %v, want bot", u)
	}
	if u := d.TriggerIdentity("nightly"); u == nil || u.Name != "bot" {
		t.Errorf("nightly acts as %v, want bot", u)
	}
	if u := d.TriggerIdentity("payments-push"); u != nil {
		t.Errorf("payments-push acts as %s, want nobody", u.Name)
	}
}

func TestRolesAreChecked(t *testing.T) {
	for text, want := range map[string]string{
		"users: []\ngroups: [{name: g, roles: [missing]}]\n":                                                             `holds role "missing"`,
		"users: []\nroles: [{name: r, permissions: [{actions: [deploy]}]}]\n":                                            `unknown action "deploy"`,
		"users: []\nroles: [{name: r, permissions: []}]\n":                                                               "grants nothing",
		"users: []\nroles: [{name: r, permissions: [{actions: [view]}]}, {name: r, permissions: [{actions: [view]}]}]\n": "must be unique",
		"users: []\nroles: [{name: r, permissions: [{actions: [view], pipelines: ['[']}]}]\n":                            "bad pattern",
	} {
		path := filepath.Join(t.TempDir(), "users.yaml")
		_ = os.WriteFile(path, []byte(text), 0o600)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", text, err, want)
		}
	}
}

func TestGrantRevokeRemove(t *testing.T) {
	d := &Directory{}
	if err := d.Grant("devs", "dev"); err == nil {
		t.Fatal("granted an undefined role")
	}
	if err := d.SetRole(Role{Name: "dev", Permissions: []Permission{{Actions: []Action{View}}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Grant("devs", "dev"); err != nil || !d.Enforcing() {
		t.Fatalf("grant: %v, enforcing %v", err, d.Enforcing())
	}
	u := &User{Name: "a", Groups: []string{"devs"}}
	if err := d.Authorize(u, View, Resource{Pipeline: "x"}); err != nil {
		t.Fatal(err)
	}
	if !d.Revoke("devs", "dev") || d.Authorize(u, View, Resource{Pipeline: "x"}) == nil {
		t.Fatal("revoked role still grants")
	}
	_ = d.Grant("devs", "dev")
	if !d.RemoveRole("dev") || len(d.Groups[0].Roles) != 0 {
		t.Fatalf("removed role still held: %+v", d.Groups)
	}
}

func TestFileParsesOnlyWhenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.yaml")
	f := &File{Path: path}
	if d, err := f.Load(); err != nil || len(d.Users) != 0 {
		t.Fatalf("a missing file: %v %v", d, err)
	}
	_ = os.WriteFile(path, []byte("users:\n  - {name: a}\n"), 0o600)
	d1, err := f.Load()
	if err != nil || len(d1.Users) != 1 {
		t.Fatalf("%v %v", d1, err)
	}
	if d2, _ := f.Load(); d2 != d1 {
		t.Error("an unchanged file was parsed again")
	}
	_ = os.WriteFile(path, []byte("users:\n  - {name: b}\n"), 0o600) // same size, new content
	if d3, _ := f.Load(); d3 == d1 || d3.Users[0].Name != "b" {
		t.Errorf("a changed file was not read: %+v", d3.Users)
	}
	_ = os.WriteFile(path, []byte("users: [{name: 'bad name'}]\n"), 0o600)
	if _, err := f.Load(); err == nil {
		t.Error("an invalid file loaded")
	}
}

// A person signed in with the identity provider is the file's user of that name or e-mail
// address, joined by the groups that map their provider groups; someone neither listed nor
// mapped is refused.
func TestFederated(t *testing.T) {
	d := &Directory{
		Users:  []User{{Name: "alice", Email: "Alice@example.com", Groups: []string{"auditors"}, TokenHashes: []string{"x"}}, {Name: "bob"}},
		Groups: []Group{{Name: "release_managers", OIDCGroups: []string{"eng-release"}}, {Name: "sre"}},
	}
	for _, c := range []struct {
		name, email string
		claim       []string
		want        string
		err         error
	}{
		{"a.smith", "alice@example.com", []string{"eng-release"}, "alice:auditors,release_managers", nil},
		{"carol", "", []string{"sre", "everyone"}, "carol:sre", nil},
		{"bob", "", nil, "bob:", nil},
		{"dave", "dave@example.com", []string{"everyone"}, "", ErrNoGroup},
	} {
		u, err := d.Federated(c.name, c.email, c.claim)
		if !errors.Is(err, c.err) || (err == nil && u.Name+":"+strings.Join(u.Groups, ",") != c.want) {
			t.Errorf("%s: %+v %v, want %s %v", c.name, u, err, c.want, c.err)
		}
		if err == nil && len(u.TokenHashes) > 0 {
			t.Errorf("%s: a federated user carries the file's token hashes", c.name)
		}
	}
}
