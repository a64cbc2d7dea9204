package relay

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/status"
)

// TestRetryWakesThePoller: with the poller's interval and the retry
// backoff an hour, a retry of a DEAD event (another process's, through
// the status table) is delivered at once, with the event held behind it:
// the retry's notification wakes the poller.
func TestRetryWakesThePoller(t *testing.T) {
	t.Parallel()
	ctx, db, admin := sharedPG.ConnectDB(t, 3*time.Minute)
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 140000 {
		t.Skip("messages need PostgreSQL 14 or later")
	}
	cfg := DefaultConfig()
	cfg.PostgresURL, cfg.Kafka.Brokers, cfg.Slot = db.URL(), newBroker(t), db.Name
	cfg.Tables, cfg.Messages = nil, []decoder.MessageMapping{{Prefix: "outbox"}}
	cfg.Poller.Interval, cfg.Poller.RetryBase = time.Hour, time.Hour
	logs := &syncbuf.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
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
	// The poller has made its first look (it finds nothing) and listens:
	// its next look is an hour away.
	waitFor(t, "the poller's first look and its listening", func() bool {
		var listening bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN "+status.DueChannel+"')").
			Scan(&listening); err != nil {
			t.Fatal(err)
		}
		var cycles dto.Metric
		if err := r.Metrics().PollerCycles.Write(&cycles); err != nil {
			t.Fatal(err)
		}
		return listening && cycles.GetCounter().GetValue() >= 1
	})
	emit := func(id, key, extra string) string {
		return fmt.Sprintf(`SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "orders", "key": "%s", "id": "%s", "payload": {"n": 1}%s}')`, key, id, extra)
	}
	for _, sql := range []string{emit("bad", "k1", `, "bogus": true`), emit("c", "k1", "")} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if rows := waitStatusRows(t, ctx, admin, 2); rows[0] != "bad DEAD message:outbox" || rows[1] != "c WAITING message:outbox" {
		t.Fatalf("status rows %q, want the malformed message DEAD and the next of its key WAITING", rows)
	}
	var badID int64
	if err := admin.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = 'bad'").Scan(&badID); err != nil {
		t.Fatal(err)
	}
	// As `cdc-relay failed retry` does, from another process.
	if _, err := status.NewStore(admin, "public", "outbox_delivery").Retry(ctx, status.RetryOptions{IDs: []int64{badID}}); err != nil {
		t.Fatal(err)
	}
	if got := readTopic(t, cfg.Kafka.Brokers, "orders", 2); got[0] != "k1:bad" || got[1] != "k1:c" {
		t.Fatalf("delivered %q, want the retried event, then the one behind it, within 30 s: the poller's interval is an hour", got)
	}
}

// waitFor waits up to 30 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}
