package relay

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/webhook"
)

// TestRunWebhookMetrics: a relay whose outbox table goes to Kafka and a
// webhook publisher feeds the publisher's metrics from its lanes: the
// receiver answers an event's first request 503 and its second 204, and
// the relay's registry then counts a 5xx and a 2xx request of the
// publisher, two latencies, one retry, nothing parked, the receiver not
// failing.
func TestRunWebhookMetrics(t *testing.T) {
	t.Parallel()
	ctx, db, admin := sharedPG.ConnectDB(t, 3*time.Minute)
	var mu sync.Mutex
	var answered []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		status := http.StatusNoContent
		if len(answered) == 0 {
			status = http.StatusServiceUnavailable
		}
		answered = append(answered, status)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PostgresURL, cfg.Kafka.Brokers, cfg.Slot = db.URL(), newBroker(t), db.Name
	cfg.Publishers = []Publisher{{Name: "partner", Webhook: webhook.Config{URL: srv.URL, SecretFile: secretFile}}}
	cfg.Tables[0].Publishers = []string{"kafka", "partner"}
	logs := &syncbuf.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if _, err := migrations.Apply(ctx, admin, cfg.Migrations(0)); err != nil {
		t.Fatal(err)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if t.Failed() {
			t.Logf("the relay's log:\n%s", logs)
		}
	}()
	waitFor(t, "the relay streams", func() bool { return r.Status().Streaming })
	if _, err := admin.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('wallet', 'k1', 'Opened', '{}')`); err != nil {
		t.Fatal(err)
	}
	if got := readTopic(t, cfg.Kafka.Brokers, "outbox.event.wallet", 1); len(got) != 1 {
		t.Fatalf("Kafka got %q, want the event", got)
	}
	waitFor(t, "the receiver's 503 and 204", func() bool { mu.Lock(); defer mu.Unlock(); return len(answered) == 2 })
	m := r.Metrics()
	waitFor(t, "the 204 counted", func() bool {
		var d dto.Metric
		m.WebhookRequests.WithLabelValues("partner", "2xx").Write(&d)
		return d.GetCounter().GetValue() > 0
	})
	for _, tc := range []struct {
		name   string
		metric prometheus.Metric
		want   float64
	}{
		{"requests 5xx", m.WebhookRequests.WithLabelValues("partner", "5xx"), 1},
		{"requests 2xx", m.WebhookRequests.WithLabelValues("partner", "2xx"), 1},
		{"requests timeout", m.WebhookRequests.WithLabelValues("partner", "timeout"), 0},
		{"retries", m.WebhookRetries.WithLabelValues("partner"), 1},
		{"parked failed", m.WebhookParked.WithLabelValues("partner", "failed"), 0},
		{"failing", m.WebhookFailing.WithLabelValues("partner"), 0},
		{"latencies", m.WebhookRequestDuration.WithLabelValues("partner").(prometheus.Metric), 2},
	} {
		var d dto.Metric
		if err := tc.metric.Write(&d); err != nil {
			t.Fatal(err)
		}
		got := d.GetCounter().GetValue() + d.GetGauge().GetValue() + float64(d.GetHistogram().GetSampleCount())
		if got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
}
