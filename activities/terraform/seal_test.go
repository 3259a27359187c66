package terraform

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/gantry-cd/gantry/codec"
)

func keys(t *testing.T, current string, ids ...string) *codec.Keys {
	t.Helper()
	m := map[string][]byte{}
	for _, id := range ids {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		m[id] = k
	}
	ks, err := codec.NewKeys(current, m)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestSealOpen(t *testing.T) {
	k := keys(t, "k1", "k1")
	plan := []byte("PK\x03\x04 a saved plan with s3cr3t inside")
	sealed, err := Seal(k, plan)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("s3cr3t")) {
		t.Fatal("the sealed plan is readable")
	}
	got, err := Open(k, sealed)
	if err != nil || !bytes.Equal(got, plan) {
		t.Fatalf("open: %q %v", got, err)
	}
	// Another worker without the key cannot open it, and says which key it needs.
	if _, err := Open(keys(t, "k2", "k2"), sealed); err == nil || !strings.Contains(err.Error(), `"k1"`) {
		t.Errorf("open without the key: %v", err)
	}
	// A changed byte is refused, not applied.
	bad := bytes.Clone(sealed)
	bad[len(bad)-1] ^= 1
	if _, err := Open(k, bad); err == nil {
		t.Error("an altered plan opened")
	}
	if _, err := Open(k, plan); err == nil {
		t.Error("an unsealed plan opened")
	}
}
