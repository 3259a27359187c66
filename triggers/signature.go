package triggers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// ErrSignature means a delivery is unsigned or badly signed.
var ErrSignature = errors.New("missing or invalid webhook signature")

// VerifyGitHub checks X-Hub-Signature-256 (spec 13.5): exactly one header, "sha256=" and the hex
// HMAC-SHA256 of the raw body keyed with the secret, compared in constant time.
func VerifyGitHub(h http.Header, body []byte, secret string) error {
	vals := h.Values("X-Hub-Signature-256")
	if len(vals) != 1 {
		return ErrSignature
	}
	got, ok := strings.CutPrefix(vals[0], "sha256=")
	if !ok {
		return ErrSignature
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return ErrSignature
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return ErrSignature
	}
	return nil
}
