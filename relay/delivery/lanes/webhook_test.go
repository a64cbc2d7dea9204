package lanes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// TestWebhookSender: records go to a real HTTP receiver as webhook
// requests (body the value, webhook-id the id header, the mapped headers
// as HTTP headers), in key order through the lanes; a 4xx is a permanent
// *Error, a 503 is tried again in place.
func TestWebhookSender(t *testing.T) {
	var mu sync.Mutex
	var bodies, ids []string
	status := map[string]int{"e2": http.StatusBadRequest}
	fails503 := 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get("webhook-id")
		if id == "e1" && fails503 > 0 {
			fails503--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if code := status[id]; code != 0 {
			w.WriteHeader(code)
			return
		}
		if r.Header.Get("Tenant") != "acme" || r.Header.Get("webhook-signature") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		bodies, ids = append(bodies, string(b)), append(ids, id)
	}))
	defer srv.Close()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := webhook.Config{URL: srv.URL + "/hooks", SecretFile: secretFile, Timeout: 5 * time.Second}
	secret, err := cfg.ReadSecret()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := webhook.New(cfg, secret, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Webhook(ws), quick(Config{Lanes: 2}))
	defer p.Close()
	o := newOutcomes(3)
	for _, id := range []string{"e0", "e1", "e2"} {
		p.Produce(context.Background(), &kgo.Record{Topic: "wallet", Key: []byte("k"), Value: []byte(`{"n":"` + id + `"}`),
			Headers: []kgo.RecordHeader{{Key: "id", Value: []byte(id)}, {Key: "tenant", Value: []byte("acme")}}}, o.done)
	}
	o.wait(t)
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != "e0" || ids[1] != "e1" || bodies[1] != `{"n":"e1"}` {
		t.Fatalf("the receiver took %v %v, want e0 and e1 (after one 503), in order, their values as bodies", ids, bodies)
	}
	var e *Error
	if err := o.errs[`{"n":"e2"}`]; !errors.As(err, &e) || !sink.Permanent(err) || e.Retried != 0 {
		t.Fatalf("e2, refused with a 400: %v, want a permanent *Error", err)
	}
}
