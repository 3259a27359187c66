package identity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddAuthenticateSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.yaml")
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := d.AddUser("alice", "alice@example.com", []string{"release_managers"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Save(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), tok) {
		t.Fatal("the token itself is stored")
	}
	d2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	u, err := d2.Authenticate(tok)
	if err != nil || u.Name != "alice" || u.Groups[0] != "release_managers" {
		t.Fatalf("%+v %v", u, err)
	}
	for _, bad := range []string{"", "gty_nope", tok + "x"} {
		if _, err := d2.Authenticate(bad); err != ErrUnauthenticated {
			t.Errorf("token %q: %v", bad, err)
		}
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown-key.yaml": "users:\n  - {name: a, grops: [x]}\n",
		"bad-name.yaml":    "users:\n  - {name: 'a b'}\n",
		"duplicate.yaml":   "users:\n  - {name: a}\n  - {name: a}\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := Load(p); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
