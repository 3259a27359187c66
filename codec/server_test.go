package codec

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gantry-cd/gantry/identity"
)

func TestCodecServer(t *testing.T) {
	keys, err := NewKeys("k1", map[string][]byte{"k1": key(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := &Codec{Keys: keys}
	users := &identity.Directory{}
	ops, _ := users.AddUser("olga", "olga@example.com", []string{"sre"})
	dev, _ := users.AddUser("dave", "dave@example.com", []string{"devs"})
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := users.Save(path); err != nil {
		t.Fatal(err)
	}
	if users, err = identity.Load(path); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(ServerOptions{Origins: []string{"http://ui.local"}, User: users.Authenticate, Groups: []string{"sre"}}))
	defer srv.Close()

	p, _ := converter.GetDefaultDataConverter().ToPayload("step output 42")
	enc, _ := c.Encode([]*commonpb.Payload{p})
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: enc})
	post := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://ui.local")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := post(""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.StatusCode)
	}
	if r := post("gty_wrong"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", r.StatusCode)
	}
	if r := post(dev); r.StatusCode != http.StatusForbidden {
		t.Errorf("user outside the groups: %d", r.StatusCode)
	}
	r := post(ops)
	if r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "http://ui.local" {
		t.Fatalf("authorised decode: %d, CORS %q", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
	}
	var raw json.RawMessage
	json.NewDecoder(r.Body).Decode(&raw)
	var out commonpb.Payloads
	if err := protojson.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(out.Payloads[0], &s); err != nil || s != "step output 42" {
		t.Errorf("decoded %q %v", s, err)
	}
	pre, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	pre.Header.Set("Origin", "http://evil.local")
	resp, _ := http.DefaultClient.Do(pre)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS allowed an unknown origin")
	}
}
