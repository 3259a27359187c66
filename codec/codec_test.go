package codec

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func key(t *testing.T) []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTripAndRotation(t *testing.T) {
	k1, k2 := key(t), key(t)
	old, err := NewKeys("k1", map[string][]byte{"k1": k1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(map[string]any{"secret": "hunter2-plaintext"})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := (&Codec{Keys: old}).Encode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc[0].Data, []byte("hunter2-plaintext")) || string(enc[0].Metadata[MetaKeyID]) != "k1" {
		t.Fatalf("not encrypted: %v", enc[0])
	}
	// Rotation: k2 is current; payloads sealed with k1 still open.
	rotated, err := NewKeys("k2", map[string][]byte{"k1": k1, "k2": k2})
	if err != nil {
		t.Fatal(err)
	}
	c := &Codec{Keys: rotated}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &got); err != nil || got["secret"] != "hunter2-plaintext" {
		t.Fatalf("decoded %v %v", got, err)
	}
	enc2, _ := c.Encode([]*commonpb.Payload{p})
	if string(enc2[0].Metadata[MetaKeyID]) != "k2" {
		t.Errorf("new payloads sealed with %s", enc2[0].Metadata[MetaKeyID])
	}
	// A process without k2 says which key it lacks.
	if _, err := (&Codec{Keys: old}).Decode(enc2); err == nil || !strings.Contains(err.Error(), `key "k2"`) {
		t.Errorf("missing key: %v", err)
	}
	// Tampering is detected.
	enc2[0].Data[len(enc2[0].Data)-1] ^= 1
	if _, err := c.Decode(enc2); err == nil {
		t.Error("tampered payload decoded")
	}
	// Unencrypted payloads pass through.
	if out, err := c.Decode([]*commonpb.Payload{p}); err != nil || out[0] != p {
		t.Errorf("plain payload: %v", err)
	}
}

func TestKeysRejectBadInput(t *testing.T) {
	if _, err := NewKeys("a", map[string][]byte{"a": make([]byte, 16)}); err == nil {
		t.Error("16-byte key accepted")
	}
	if _, err := NewKeys("b", map[string][]byte{"a": key(t)}); err == nil || !strings.Contains(err.Error(), `current key "b"`) {
		t.Errorf("missing current: %v", err)
	}
}

// LoadOrCreate makes a private key file the first time and reads the same key afterwards,
// also when several callers race to create it.
func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	sealed := make([]*commonpb.Payload, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreate(path, "local")
			if errs[i] = err; err == nil {
				ids[i] = k.Current
				p, err := (&Codec{Keys: k}).Encode([]*commonpb.Payload{{Data: []byte("x")}})
				if errs[i] = err; err == nil {
					sealed[i] = p[0]
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v", err, st.Mode())
	}
	k, err := LoadOrCreate(path, "other")
	if err != nil || k.Current != "local" {
		t.Fatalf("second load: %v, current %q", err, k.Current)
	}
	for i := range sealed {
		if _, err := (&Codec{Keys: k}).Decode([]*commonpb.Payload{sealed[i]}); err != nil {
			t.Errorf("caller %d sealed with another key: %v", i, err)
		}
	}
}
