package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TestWriteBackFollowsTheStatusTable: with WriteBack, every change of a
// parked event's status row reaches its outbox row in the same
// transaction: parked, delivered, failed again, dead by the poller,
// retried and purged by an operator; a row sent again and already parked
// keeps what it says; a table without write-back is left alone.
func TestWriteBackFollowsTheStatusTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TYPE outbox_state AS ENUM ('pending', 'published', 'failed', 'dead_lettered')`,
		`CREATE TABLE app_outbox (id text PRIMARY KEY, status outbox_state NOT NULL DEFAULT 'pending', published_at timestamptz,
			last_error text, retry_count int NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO app_outbox (id) SELECT 'e-' || g FROM generate_series(1, 6) g`,
		`CREATE TABLE plain_outbox (id text PRIMARY KEY, status text NOT NULL DEFAULT 'PENDING')`,
		`INSERT INTO plain_outbox VALUES ('e-1')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "app_outbox", IDColumn: "id", Columns: writeback.Columns{
		StatusColumn: "status", Delivered: "published", Failed: "failed", Dead: "dead_lettered", DeliveredAtColumn: "published_at",
		ErrorColumn: "last_error", AttemptsColumn: "retry_count", NextAttemptColumn: "next_attempt_at"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.app_outbox", "public.plain_outbox"), WriteBack(rows))
	park := func(id string, table int, dead bool) {
		t.Helper()
		ev := &decoder.Event{ID: []byte(id), Table: table, Topic: "orders", Value: []byte(`{}`), CommitLSN: 0x100 + uint64(table)}
		f := store.Failed
		if dead {
			f = store.Dead
		}
		if err := f(ctx, ev, errors.New("UNKNOWN_TOPIC_OR_PARTITION")); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"e-1", "e-2", "e-3", "e-4", "e-5"} {
		park(id, 0, false)
	}
	park("e-6", 0, true)
	park("e-1", 1, false) // the other table: no write-back
	check := func(stage string, want map[string]string) {
		t.Helper()
		r, _ := pool.Query(ctx, `SELECT o.id, o.status || ' ' || o.retry_count || ' ' || coalesce(o.last_error, '-') || ' ' ||
			(o.published_at IS NOT NULL) || ' ' || (o.next_attempt_at = coalesce(d.next_attempt_at, o.next_attempt_at))
			FROM app_outbox o LEFT JOIN outbox_delivery d ON d.event_id = o.id AND d.source_table = 'public.app_outbox'`)
		got := map[string]string{}
		var id, state string
		if _, err := pgx.ForEachRow(r, []any{&id, &state}, func() error { got[id] = state; return nil }); err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: row %s says %q, want %q", stage, id, got[id], w)
			}
		}
	}
	check("parked", map[string]string{
		"e-1": "failed 1 UNKNOWN_TOPIC_OR_PARTITION false true",
		"e-6": "dead_lettered 1 UNKNOWN_TOPIC_OR_PARTITION false false", // no next attempt
	})
	// Sent again after a crash: already parked, the row keeps what the
	// poller made of it since.
	if _, err := pool.Exec(ctx, "UPDATE app_outbox SET status = 'published' WHERE id = 'e-5'"); err != nil {
		t.Fatal(err)
	}
	park("e-5", 0, false)
	check("parked again", map[string]string{"e-5": "published 1 UNKNOWN_TOPIC_OR_PARTITION false true"})

	ids := map[string]int64{}
	_, err = store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
		var out []Outcome
		for _, r := range due {
			if r.SourceTable != "public.app_outbox" {
				continue
			}
			ids[r.EventID] = r.ID
			switch r.EventID {
			case "e-1":
				out = append(out, Outcome{ID: r.ID, Delivered: true})
			case "e-2":
				out = append(out, Outcome{ID: r.ID, Err: errors.New("still missing"), RetryIn: time.Hour})
			case "e-3":
				out = append(out, Outcome{ID: r.ID, Dead: true, Err: errors.New("gave up")})
			}
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	check("claimed", map[string]string{
		"e-1": "published 1 - true true", // the error cleared once delivered
		"e-2": "failed 2 still missing false true",
		"e-3": "dead_lettered 2 gave up false true",
	})
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{ids["e-3"]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Purge(ctx, PurgeOptions{IDs: []int64{ids["e-4"]}}); err != nil {
		t.Fatal(err)
	}
	check("retried and purged", map[string]string{
		"e-3": "failed 1 gave up false true", // counted afresh: the fast path's failure
		"e-4": "dead_lettered 1 given up: purged from the status table by an operator false true",
	})
	var plain string
	if err := pool.QueryRow(ctx, "SELECT status FROM plain_outbox").Scan(&plain); err != nil || plain != "PENDING" {
		t.Fatalf("a table without write-back says %q (%v), want PENDING", plain, err)
	}
	if t.Failed() {
		var dump []string
		r, _ := pool.Query(ctx, "SELECT id || ' ' || event_id || ' ' || status || ' ' || attempts FROM outbox_delivery ORDER BY id")
		dump, _ = pgx.CollectRows(r, pgx.RowTo[string])
		t.Log(fmt.Sprint(strings.Join(dump, "\n")))
	}
}

// TestAdoptAndReload: Adopt parks the rows with a pending status as Reload
// rows; the poller's outcome stores the record it read and counts no
// failed attempt before it (an adopted or reset row was never refused).
func TestAdoptAndReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL, retry_count int NOT NULL DEFAULT 0)`,
		`INSERT INTO app_outbox VALUES (1, 'NEW'), (2, 'SENT'), (3, 'PROCESSING'), (4, 'FAILED')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "app_outbox", IDColumn: "id", Columns: writeback.Columns{
		StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", AttemptsColumn: "retry_count", Pending: []string{"NEW", "PROCESSING"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(pool, "public", "outbox_delivery", WriteBack(rows))
	var n int64
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		n, err = store.Adopt(ctx, tx, Adoptable{Schema: "public", Name: "app_outbox", Source: "public.app_outbox",
			IDColumn: "id", StatusColumn: "status", Pending: []string{"NEW", "PROCESSING"}})
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("Adopt = %d, %v; want the 2 pending rows", n, err)
	}
	_, err = store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
		var out []Outcome
		for _, r := range due {
			if !r.Reload || r.Topic != "" || r.SourceTable != "public.app_outbox" {
				t.Errorf("claimed %+v, want a reload row of public.app_outbox", r)
			}
			loaded := r
			loaded.Topic, loaded.Value, loaded.Reload = "orders", []byte(`{"id": `+r.EventID+`}`), false
			out = append(out, Outcome{ID: r.ID, Delivered: true, Loaded: &loaded})
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := pool.Query(ctx, `SELECT o.id || ' ' || o.status || ' ' || o.retry_count || ' ' || coalesce(d.status || ' ' || d.topic || ' ' ||
		coalesce(convert_from(d.record_value, 'UTF8'), 'no-copy') || ' ' || d.reload, '-') FROM app_outbox o
		LEFT JOIN outbox_delivery d ON d.event_id = o.id::text ORDER BY o.id`)
	got, err := pgx.CollectRows(r, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// A delivered row keeps the topic it went to, not a copy of the
	// record: its outbox row is the record.
	want := []string{`1 SENT 0 DELIVERED orders no-copy true`, "2 SENT 0 -", `3 SENT 0 DELIVERED orders no-copy true`, "4 FAILED 0 -"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// newTestPool is a pool on a migrated database of its own.
func newTestPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, db := newTestDB(t)
	pool, err := pgxpool.New(context.Background(), db.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestReloadRowAttempts: a row sent as its outbox row is now (adopted, or
// reset) counts only the poller's failed attempts: 1, 2, then 2 once
// delivered.
func TestReloadRowAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text NOT NULL, retry_count int NOT NULL DEFAULT 0)`,
		`INSERT INTO app_outbox VALUES (1, 'NEW')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "app_outbox", IDColumn: "id", Columns: writeback.Columns{
		StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", AttemptsColumn: "retry_count", Pending: []string{"NEW"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(pool, "public", "outbox_delivery", WriteBack(rows))
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := store.Adopt(ctx, tx, Adoptable{Schema: "public", Name: "app_outbox", Source: "public.app_outbox",
			IDColumn: "id", StatusColumn: "status", Pending: []string{"NEW"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, delivered := range []bool{false, false, true} {
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now()"); err != nil {
			t.Fatal(err)
		}
		_, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
			loaded := due[0]
			loaded.Topic = "orders"
			if delivered {
				return []Outcome{{ID: due[0].ID, Delivered: true, Loaded: &loaded}}
			}
			return []Outcome{{ID: due[0].ID, Err: errors.New("UNKNOWN_TOPIC_OR_PARTITION"), RetryIn: time.Minute, Loaded: &loaded}}
		})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT retry_count FROM app_outbox").Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if fmt.Sprint(got) != "[1 2 2]" {
		t.Fatalf("retry_count %v over fail, fail, deliver; want [1 2 2]", got)
	}
}

// TestWriteBackOfHeldEvents: a WAITING or PAUSED event's outbox row stays
// pending when it is parked (it was not sent, and will be) and says
// delivered once the poller delivered it, with no failed attempt; a
// skipped event's row says dead.
func TestWriteBackOfHeldEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE app_outbox (id text PRIMARY KEY, status text NOT NULL DEFAULT 'pending', retry_count int NOT NULL DEFAULT 0, last_error text)`,
		`INSERT INTO app_outbox (id) SELECT 'e-' || g FROM generate_series(1, 4) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "app_outbox", IDColumn: "id", Columns: writeback.Columns{
		StatusColumn: "status", Delivered: "published", Failed: "failed", Dead: "dead", ErrorColumn: "last_error", AttemptsColumn: "retry_count"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.app_outbox"), WriteBack(rows))
	for i, p := range []struct{ id, state string }{{"e-1", Failed}, {"e-2", Waiting}, {"e-3", Paused}, {"e-4", Waiting}} {
		ev := &decoder.Event{ID: []byte(p.id), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: uint64(0x100 * (i + 1))}
		if p.id == "e-3" {
			ev.Key = []byte("other")
		}
		switch p.state {
		case Failed:
			err = store.Failed(ctx, ev, errors.New("refused"))
		case Waiting:
			err = store.Waiting(ctx, ev, errors.New("waits for e-1"))
		case Paused:
			err = store.Paused(ctx, ev)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string, want map[string]string) {
		t.Helper()
		r, _ := pool.Query(ctx, `SELECT id, status || ' ' || retry_count FROM app_outbox`)
		got := map[string]string{}
		var id, state string
		if _, err := pgx.ForEachRow(r, []any{&id, &state}, func() error { got[id] = state; return nil }); err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: row %s says %q, want %q", stage, id, got[id], w)
			}
		}
	}
	check("parked", map[string]string{"e-1": "failed 1", "e-2": "pending 0", "e-3": "pending 0", "e-4": "pending 0"})
	var head int64
	if err := pool.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = 'e-1'").Scan(&head); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Skip(ctx, SkipOptions{IDs: []int64{head}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
		var out []Outcome
		for _, r := range due {
			out = append(out, Outcome{ID: r.ID, Delivered: true})
		}
		return out
	}); err != nil {
		t.Fatal(err)
	}
	check("skipped, then delivered", map[string]string{"e-1": "dead 1", "e-2": "published 0", "e-3": "published 0", "e-4": "published 0"})
}
