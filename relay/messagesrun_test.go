package relay

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/status"
)

// TestRunMessagesOnly: a relay of messages only (no outbox table), on a
// database migrated without one, delivers the committed messages, none of
// a rolled-back transaction; parks a malformed one DEAD and the next
// message of its key WAITING behind it, both named message:outbox; once
// the DEAD one is retried, the poller delivers both from their status
// rows, in order. At least once and exactly once alike. On a server
// before PostgreSQL 14 (PG_BINDIR), Run refuses at start, saying what to
// do.
func TestRunMessagesOnly(t *testing.T) {
	t.Parallel()
	for _, exactlyOnce := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly-once %v", exactlyOnce), func(t *testing.T) {
			t.Parallel()
			ctx, db, admin := sharedPG.ConnectDB(t, 3*time.Minute)
			cfg := DefaultConfig()
			cfg.PostgresURL, cfg.Kafka.Brokers, cfg.Slot = db.URL(), newBroker(t), db.Name
			cfg.Tables, cfg.Messages = nil, []decoder.MessageMapping{{Prefix: "outbox"}}
			cfg.StatusInterval, cfg.Poller.RetryBase = 100*time.Millisecond, 100*time.Millisecond
			cfg.ExactlyOnce.Enabled = exactlyOnce
			logs := &syncbuf.Buffer{}
			cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
			if _, err := migrations.Apply(ctx, admin, cfg.Migrations(0)); err != nil {
				t.Fatal(err)
			}
			var version int
			if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
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
				if err := <-done; err != nil && version >= 140000 {
					t.Errorf("Run: %v", err)
				}
			}()
			if version < 140000 {
				if err := <-done; err == nil || !strings.Contains(err.Error(), "messages need PostgreSQL 14 or later") {
					t.Fatalf("Run on PostgreSQL %d: %v, want a refusal", version, err)
				}
				done <- nil
				return
			}
			for deadline := time.Now().Add(30 * time.Second); !r.Status().Streaming; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the relay did not stream within 30s:\n%s", logs)
				}
			}
			runMessagesOnly(t, ctx, r, admin, cfg.Kafka.Brokers)
			if t.Failed() {
				t.Logf("the relay's log:\n%s", logs)
			}
		})
	}
}

// runMessagesOnly emits TestRunMessagesOnly's messages and checks what
// becomes of them.
func runMessagesOnly(t *testing.T, ctx context.Context, r *Relay, admin *pgx.Conn, brokers []string) {
	emit := func(id, key string, extra string) string {
		return fmt.Sprintf(`SELECT pg_logical_emit_message(true, 'outbox', '{"topic": "orders", "key": "%s", "id": "%s", "payload": {"n": 1}%s}')`, key, id, extra)
	}
	for _, sql := range []string{
		"BEGIN; " + emit("a", "k1", "") + "; " + emit("b", "k2", "") + "; COMMIT",
		emit("bad", "k1", `, "bogus": true`),
		emit("c", "k1", ""),
		"BEGIN; " + emit("rolled back", "k2", "") + "; ROLLBACK",
		emit("e", "k2", ""),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got := readTopic(t, brokers, "orders", 3); !sameIDs(got, "k1:a", "k2:b", "k2:e") {
		t.Fatalf("delivered %q, want a, b and e", got)
	}
	rows := waitStatusRows(t, ctx, admin, 2)
	if rows[0] != "bad DEAD message:outbox" || rows[1] != "c WAITING message:outbox" {
		t.Fatalf("status rows %q, want the malformed message DEAD and the next of its key WAITING, of message:outbox", rows)
	}
	if st := r.Status(); st.Table != "message:outbox" {
		t.Errorf("/status names the sources %q, want message:outbox", st.Table)
	}
	var badID int64
	if err := admin.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = 'bad'").Scan(&badID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Retry(ctx, status.RetryOptions{IDs: []int64{badID}}); err != nil {
		t.Fatal(err)
	}
	got := readTopic(t, brokers, "orders", 5)
	var k1 []string
	for _, kv := range got {
		if strings.HasPrefix(kv, "k1:") {
			k1 = append(k1, kv)
		}
	}
	if strings.Join(k1, " ") != "k1:a k1:bad k1:c" {
		t.Errorf("k1's records %q, want a, then the retried one, then c: in commit order, from the status rows", k1)
	}
}

// waitStatusRows waits (30s at most) until the status table has n rows,
// and returns them as "event_id status source_table", by id.
func waitStatusRows(t *testing.T, ctx context.Context, admin *pgx.Conn, n int) []string {
	t.Helper()
	var rows []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		rows, err = pgx.CollectRows(must(admin.Query(ctx, "SELECT event_id || ' ' || status || ' ' || coalesce(source_table, 'NULL') FROM outbox_delivery ORDER BY id")),
			pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) >= n {
			return rows
		}
	}
	t.Fatalf("status rows %q, want %d", rows, n)
	return nil
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// sameIDs reports whether got holds want, in any order.
func sameIDs(got []string, want ...string) bool {
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	return slices.Equal(got, want)
}

// readTopic reads topic's records (read_committed) until it has n, or
// fails after 30s; it returns them as "key:id", in offset order.
func readTopic(t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for len(ids) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records %q, want %d", topic, len(ids), ids, n)
		}
		f.EachRecord(func(r *kgo.Record) { ids = append(ids, string(r.Key)+":"+header(r, "id")) })
	}
	return ids
}

func newBroker(t *testing.T) []string {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc.ListenAddrs()
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
