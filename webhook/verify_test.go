package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testSecret is the secret of the tests' senders and verifiers: 32 bytes.
const testSecret = "whsec_c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk="

// verifier checks a request as a receiver does, written from the Standard
// Webhooks specification alone (not from the package's signer): the three
// headers present, the timestamp within the tolerance of now, and one of
// the space-separated signatures a "v1,<base64>" equal, in constant time,
// to the HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes
// (the base64 after whsec_).
type verifier struct {
	key       []byte
	tolerance time.Duration
}

func newVerifier(t testing.TB, secret string) verifier {
	t.Helper()
	enc, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		t.Fatalf("secret %q: no whsec_ prefix", secret)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	return verifier{key: key, tolerance: 5 * time.Minute}
}

func (v verifier) verify(h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers: id %q, timestamp %q, signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q: %v", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > v.tolerance || d < -v.tolerance {
		return fmt.Errorf("webhook-timestamp %s is %s from now", ts, d)
	}
	mac := hmac.New(sha256.New, v.key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, enc, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no signature matches")
}

// request is one request a receiver got.
type request struct {
	method, path string
	header       http.Header
	body         []byte
	verified     error
}

// receiver is an HTTP test server that verifies every request it gets
// and answers it with answer (204 when nil).
type receiver struct {
	srv    *httptest.Server
	v      verifier
	answer func(w http.ResponseWriter, r *http.Request)

	mu  sync.Mutex
	got []request
}

// newReceiver starts a plain HTTP receiver; tls, when not nil, makes it
// HTTPS with that configuration.
func newReceiver(t testing.TB, answer func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{v: newVerifier(t, testSecret), answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, request{method: r.Method, path: r.URL.RequestURI(), header: r.Header.Clone(), body: body,
		verified: rc.v.verify(r.Header, body, time.Now())})
	rc.mu.Unlock()
	if rc.answer == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rc.answer(w, r)
}

// requests returns the requests so far, each verified, failing the test
// on one that is not.
func (rc *receiver) requests(t testing.TB) []request {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for i, r := range rc.got {
		if r.verified != nil {
			t.Errorf("request %d (webhook-id %s) does not verify: %v", i, r.header.Get("webhook-id"), r.verified)
		}
	}
	return append([]request(nil), rc.got...)
}

// TestVerifierRefuses checks that the tests' verifier can fail: a
// request whose body, id, timestamp or signature changed, or whose
// timestamp is out of the tolerance, does not verify.
func TestVerifierRefuses(t *testing.T) {
	v := newVerifier(t, testSecret)
	now := time.Unix(1_700_000_000, 0)
	good := func() (http.Header, []byte) {
		mac := hmac.New(sha256.New, v.key)
		mac.Write([]byte("evt_1.1700000000.{}"))
		h := http.Header{}
		h.Set("webhook-id", "evt_1")
		h.Set("webhook-timestamp", "1700000000")
		h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		return h, []byte("{}")
	}
	h, body := good()
	if err := v.verify(h, body, now); err != nil {
		t.Fatalf("the good request does not verify: %v", err)
	}
	for name, change := range map[string]func(h http.Header, body []byte) (http.Header, []byte){
		"body": func(h http.Header, _ []byte) (http.Header, []byte) { return h, []byte("{ }") },
		"id":   func(h http.Header, b []byte) (http.Header, []byte) { h.Set("webhook-id", "evt_2"); return h, b },
		"timestamp": func(h http.Header, b []byte) (http.Header, []byte) {
			h.Set("webhook-timestamp", "1700000001")
			return h, b
		},
		"version": func(h http.Header, b []byte) (http.Header, []byte) {
			h.Set("webhook-signature", "v2"+h.Get("webhook-signature")[2:])
			return h, b
		},
		"no headers": func(_ http.Header, b []byte) (http.Header, []byte) { return http.Header{}, b },
	} {
		h, body := change(good())
		if err := v.verify(h, body, now); err == nil {
			t.Errorf("%s changed: the request verifies", name)
		}
	}
	h, body = good()
	if err := v.verify(h, body, now.Add(6*time.Minute)); err == nil {
		t.Error("6 minutes late: the request verifies")
	}
}
