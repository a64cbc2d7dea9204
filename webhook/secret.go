package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
)

// SecretPrefix starts a signing secret in its Standard Webhooks form,
// whsec_ followed by the standard base64 of the key's bytes.
const SecretPrefix = "whsec_"

// The specification's bounds of a symmetric key, in bytes.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// secretForm is the form every secret problem shows, with a way to make
// one.
const secretForm = "want " + SecretPrefix + "<base64 of 24 to 64 random bytes>, as " +
	`echo "whsec_$(head -c 32 /dev/urandom | base64)" makes`

// Secret is a webhook signing key. The zero Secret is none. It never shows
// its key: String, GoString, Format (every verb) and LogValue say
// "whsec_[redacted]", and a struct that holds a Secret prints only a
// pointer for it.
type Secret struct {
	k *secretKey
}

type secretKey struct{ b []byte }

// ParseSecret reads a secret in its Standard Webhooks form, whsec_ and the
// standard base64 (padded) of 24 to 64 bytes; surrounding white space (a
// file's newline) is ignored. Its errors say what is wrong and show the
// expected form, never s.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	enc, ok := strings.CutPrefix(s, SecretPrefix)
	switch {
	case s == "":
		return Secret{}, errors.New("the signing secret is empty: " + secretForm)
	case !ok:
		return Secret{}, errors.New("the signing secret does not start with " + SecretPrefix + ": " + secretForm)
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		var bad base64.CorruptInputError
		if errors.As(err, &bad) {
			return Secret{}, fmt.Errorf("the signing secret is not valid base64 after %s (at its byte %d): %s",
				SecretPrefix, int64(bad)+int64(len(SecretPrefix)), secretForm)
		}
		return Secret{}, errors.New("the signing secret is not valid base64 after " + SecretPrefix + ": " + secretForm)
	}
	if len(b) < MinSecretBytes || len(b) > MaxSecretBytes {
		return Secret{}, fmt.Errorf("the signing secret holds %d bytes, the specification's are %d to %d: %s",
			len(b), MinSecretBytes, MaxSecretBytes, secretForm)
	}
	return Secret{k: &secretKey{b: b}}, nil
}

// IsZero reports whether s is no secret.
func (s Secret) IsZero() bool { return s.k == nil }

// String is "whsec_[redacted]", or "whsec_(none)" for the zero Secret.
func (s Secret) String() string {
	if s.IsZero() {
		return SecretPrefix + "(none)"
	}
	return SecretPrefix + "[redacted]"
}

// GoString is String, so that %#v hides the key too.
func (s Secret) GoString() string { return s.String() }

// Format writes String for every verb (%x and %q too).
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// LogValue is String, for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText is String, so that encoding/json and YAML show no key.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// signature returns the webhook-signature header's value for a message of
// id sent at ts (Unix seconds) with body: "v1," and the base64 of
// HMAC-SHA256(key, id "." ts "." body).
func (s Secret) signature(id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, s.k.b)
	var buf [24]byte
	io.WriteString(mac, id)
	mac.Write(strconv.AppendInt(append(buf[:0], '.'), ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	var sum [sha256.Size]byte
	out := make([]byte, 3, 3+base64.StdEncoding.EncodedLen(sha256.Size))
	copy(out, "v1,")
	out = base64.StdEncoding.AppendEncode(out, mac.Sum(sum[:0]))
	return string(out)
}

// masks are the strings of the key an error must not show: its
// Standard Webhooks form and its base64.
func (s Secret) masks() []string {
	if s.IsZero() {
		return nil
	}
	enc := base64.StdEncoding.EncodeToString(s.k.b)
	return []string{SecretPrefix + enc, enc, strings.TrimRight(enc, "=")}
}
