package triggers

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// ErrUnsigned means a delivery carries no signature or token at all.
var ErrUnsigned = errors.New("the delivery is not signed")

// Verify authenticates a Git delivery with the trigger's secret: GitHub and Bitbucket sign the
// body (HMAC-SHA256 in X-Hub-Signature-256 / X-Hub-Signature), GitLab sends the secret as
// X-Gitlab-Token. Comparisons are constant-time.
func Verify(provider string, h http.Header, body []byte, secret string) error {
	switch provider {
	case "Github":
		if len(h.Values("X-Hub-Signature-256")) == 0 {
			return ErrUnsigned
		}
		return VerifyGitHub(h, body, secret)
	case "Bitbucket":
		v := h.Get("X-Hub-Signature")
		if v == "" {
			return ErrUnsigned
		}
		got, ok := strings.CutPrefix(v, "sha256=")
		sig, err := hex.DecodeString(got)
		if !ok || err != nil {
			return ErrSignature
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if !hmac.Equal(sig, mac.Sum(nil)) {
			return ErrSignature
		}
		return nil
	case "Gitlab":
		tok := h.Get("X-Gitlab-Token")
		if tok == "" {
			return ErrUnsigned
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) != 1 {
			return ErrSignature
		}
		return nil
	}
	return ErrSignature
}
