package triggers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		op, input, value string
		want             bool
	}{
		{"Equals", "main", "main", true},
		{"Equals", "", "", true},
		{"Equals", "main", "", false},
		{"NotEquals", "", "", false},
		{"NotEquals", "dev", "", true},
		{"In", "services/checkout/api.go", "services/checkout/.*, charts/checkout/.*", true},
		{"In", "docs/readme.md", "services/checkout/.*, charts/checkout/.*", false},
		{"In", "a,b", `"a,b", c`, true},
		{"In", "x", "", true},
		{"NotIn", "dependabot[bot]", `dependabot\[bot\], renovate\[bot\]`, false},
		{"NotIn", "alice", `dependabot\[bot\], renovate\[bot\]`, true},
		{"StartsWith", "release/1.2", "release/", true},
		{"StartsWith", "", "release/", false},
		{"EndsWith", "v1.2-rc", "-rc", true},
		{"Contains", "fix: thing", "fix", true},
		{"DoesNotContain", "feat: thing", "fix", true},
		{"DoesNotContain", "", "fix", false},
		{"Regex", "feature/login", "feature/.*", true},
		{"Regex", "x-feature/login", "feature/.*", false},
		{"Regex", "line1\nline2", "line1.line2", true},
		{"", "", "", true},
	}
	for _, c := range cases {
		got, err := Match(c.op, c.input, c.value)
		if err != nil || got != c.want {
			t.Errorf("Match(%q, %q, %q) = %v, %v; want %v", c.op, c.input, c.value, got, err, c.want)
		}
	}
	if _, err := Match("Like", "a", "b"); err == nil {
		t.Error("unknown operator accepted")
	}
	if _, err := Match("Regex", "a", "("); err == nil {
		t.Error("bad regex accepted")
	}
}

func TestVerifyGitHub(t *testing.T) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	good := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	h := http.Header{}
	h.Set("X-Hub-Signature-256", good)
	if err := VerifyGitHub(h, body, "s3cret"); err != nil {
		t.Fatal(err)
	}
	for name, hdr := range map[string][]string{
		"missing":   nil,
		"twice":     {good, good},
		"no prefix": {good[7:]},
		"not hex":   {"sha256=zz"},
		"wrong":     {"sha256=" + hex.EncodeToString(make([]byte, 32))},
	} {
		h := http.Header{}
		for _, v := range hdr {
			h.Add("X-Hub-Signature-256", v)
		}
		if VerifyGitHub(h, body, "s3cret") == nil {
			t.Errorf("%s signature accepted", name)
		}
	}
	if VerifyGitHub(h, append(body, ' '), "s3cret") == nil {
		t.Error("a changed body verified")
	}
}
