// Package codec encrypts Temporal payloads with AES-256-GCM, so step inputs, outputs and every
// other payload are ciphertext at rest in workflow history. Each payload names the key that
// sealed it, so keys rotate by adding a new current key and keeping the old ones for reading.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
	"gopkg.in/yaml.v3"
)

// Metadata of an encrypted payload.
const (
	Encoding    = "binary/encrypted"
	MetaKeyID   = "encryption-key-id"
	MetaCipher  = "encryption-cipher"
	CipherName  = "AES256-GCM"
	metaEncoder = "encoding"
)

// Keys is a key ring: AES-256 keys by identifier and the one new payloads are sealed with.
type Keys struct {
	Current string
	byID    map[string]cipher.AEAD
}

// NewKeys builds a key ring from raw 32-byte keys.
func NewKeys(current string, keys map[string][]byte) (*Keys, error) {
	k := &Keys{Current: current, byID: map[string]cipher.AEAD{}}
	for id, raw := range keys {
		if len(raw) != 32 {
			return nil, fmt.Errorf("key %q is %d bytes; AES-256 needs 32", id, len(raw))
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.byID[id] = gcm
	}
	if _, ok := k.byID[current]; !ok {
		return nil, fmt.Errorf("current key %q is not among the keys (%s)", current, strings.Join(k.IDs(), ", "))
	}
	return k, nil
}

// IDs lists the key identifiers.
func (k *Keys) IDs() []string {
	out := make([]string, 0, len(k.byID))
	for id := range k.byID {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// keyFile is the YAML key file: `current: ID` and `keys: {ID: base64 of 32 bytes}`.
type keyFile struct {
	Current string            `yaml:"current"`
	Keys    map[string]string `yaml:"keys"`
}

// LoadFile reads a key file. It must not be readable by others.
func LoadFile(path string) (*Keys, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is readable by group or others (mode %o); chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f keyFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("key file %s: %v", path, err)
	}
	raw := map[string][]byte{}
	for id, v := range f.Keys {
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("key file %s: key %q is not base64: %v", path, id, err)
		}
		raw[id] = k
	}
	keys, err := NewKeys(f.Current, raw)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %v", path, err)
	}
	return keys, nil
}

// Codec is the payload codec.
type Codec struct{ Keys *Keys }

var _ converter.PayloadCodec = (*Codec)(nil)

// Encode seals each payload (its data and metadata) with the current key.
func (c *Codec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	gcm := c.Keys.byID[c.Keys.Current]
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, gcm.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{metaEncoder: []byte(Encoding), MetaKeyID: []byte(c.Keys.Current), MetaCipher: []byte(CipherName)},
			Data:     gcm.Seal(nonce, nonce, plain, []byte(c.Keys.Current)),
		}
	}
	return out, nil
}

// Decode opens encrypted payloads with the key they name; others pass through unchanged, so
// histories written before encryption was turned on still read.
func (c *Codec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[metaEncoder]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.Metadata[MetaKeyID])
		gcm, ok := c.Keys.byID[id]
		if !ok {
			return nil, fmt.Errorf("payload is encrypted with key %q, which this process does not have (it has %s)", id, strings.Join(c.Keys.IDs(), ", "))
		}
		n := gcm.NonceSize()
		if len(p.Data) < n {
			return nil, fmt.Errorf("encrypted payload is truncated")
		}
		plain, err := gcm.Open(nil, p.Data[:n], p.Data[n:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("decrypt payload with key %q: %v", id, err)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, err
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter wraps Temporal's default converter with the codec.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// LoadOrCreate reads a key file, creating it first (mode 600, one random key named id) when
// it does not exist. Two processes creating it at once end with the same file.
func LoadOrCreate(path, id string) (*Keys, error) {
	if _, err := os.Stat(path); err == nil {
		return LoadFile(path)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(keyFile{Current: id, Keys: map[string]string{id: base64.StdEncoding.EncodeToString(raw)}})
	if err != nil {
		return nil, err
	}
	// Written aside and linked into place: a reader never sees a half-written file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !os.IsExist(err) {
		return nil, err
	}
	return LoadFile(path)
}
