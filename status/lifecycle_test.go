package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TestWriteBackOfATeamsOwnLifecycle: a table whose poller kept a row
// PENDING with a retry count while it retried, and wrote FAILED only once
// it gave up (write_back retrying: PENDING, failed: FAILED), with its
// reset trigger. A parked event's row stays PENDING, its attempts and
// last attempt counted, its error kept; it never reads FAILED until the
// event is given up on; delivered, it reads DELIVERED with its error
// cleared. None of the relay's own writes of PENDING fires the reset
// trigger, not even over a FAILED row (an operator's retry of a dead
// event); a runbook's reset still does.
func TestWriteBackOfATeamsOwnLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE notification_outbox (id bigint PRIMARY KEY, status varchar(20) NOT NULL DEFAULT 'PENDING'
			CHECK (status IN ('PENDING', 'PROCESSING', 'DELIVERED', 'FAILED')),
			retry_count integer NOT NULL DEFAULT 0, last_error text, last_attempt_at timestamptz, processed_at timestamptz)`,
		`INSERT INTO notification_outbox (id) SELECT g FROM generate_series(1, 4) g`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cols := writeback.Columns{StatusColumn: "status", Delivered: "DELIVERED", Failed: "FAILED", Retrying: "PENDING",
		Pending: []string{"PENDING", "PROCESSING"}, DeliveredAtColumn: "processed_at", ErrorColumn: "last_error",
		AttemptsColumn: "retry_count", LastAttemptColumn: "last_attempt_at"}
	mcfg := migrations.DefaultConfig()
	mcfg.OutboxTable, mcfg.SkipOutbox = "notification_outbox", true
	mcfg.Reset = migrations.Reset{IDColumn: "id", StatusColumn: "status", Pending: cols.Pending}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = migrations.Apply(ctx, conn.Conn(), mcfg)
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := writeback.NewRows([]writeback.Table{{Name: "notification_outbox", IDColumn: "id", Columns: cols}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(pool, "public", "outbox_delivery", SourceTables("public.notification_outbox"), WriteBack(rows))
	for id, dead := range map[string]bool{"1": false, "2": false, "3": true} {
		ev := &decoder.Event{ID: []byte(id), Topic: "notifications.deal-won", Value: []byte(`{}`), CommitLSN: 0x100}
		park := store.Failed
		if dead {
			park = store.Dead
		}
		if err := park(ctx, ev, errors.New("UNKNOWN_TOPIC_OR_PARTITION")); err != nil {
			t.Fatal(err)
		}
	}
	check := func(stage string, want map[int]string) {
		t.Helper()
		r, err := pool.Query(ctx, `SELECT id, status || ' ' || retry_count || ' ' || coalesce(last_error, '-') || ' ' ||
			(last_attempt_at IS NOT NULL) || ' ' || (processed_at IS NOT NULL) || ' reloads=' ||
			(SELECT count(*) FROM outbox_delivery d WHERE d.event_id = o.id::text AND d.reload)
			FROM notification_outbox o`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]string{}
		var id int
		var state string
		if _, err := pgx.ForEachRow(r, []any{&id, &state}, func() error { got[id] = state; return nil }); err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: row %d says %q, want %q", stage, id, got[id], w)
			}
		}
	}
	check("parked", map[int]string{
		1: "PENDING 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0",
		3: "FAILED 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0", // given up on: the team's terminal value
		4: "PENDING 0 - false false reloads=0",
	})
	claim := func(outcome func(r Row) Outcome) map[string]int64 {
		t.Helper()
		if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now()"); err != nil {
			t.Fatal(err)
		}
		ids := map[string]int64{}
		_, err := store.Claim(ctx, 10, func(ctx context.Context, due []Row) []Outcome {
			var out []Outcome
			for _, r := range due {
				ids[r.EventID] = r.ID
				out = append(out, outcome(r))
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	claim(func(r Row) Outcome {
		return Outcome{ID: r.ID, Err: errors.New("MESSAGE_TOO_LARGE"), RetryIn: time.Hour}
	})
	check("failed again", map[int]string{
		1: "PENDING 2 MESSAGE_TOO_LARGE true false reloads=0",
		2: "PENDING 2 MESSAGE_TOO_LARGE true false reloads=0",
	})
	var dead int64
	if err := pool.QueryRow(ctx, "SELECT id FROM outbox_delivery WHERE event_id = '3'").Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Retry(ctx, RetryOptions{IDs: []int64{dead}}); err != nil {
		t.Fatal(err)
	}
	check("an operator's retry of the dead event", map[int]string{3: "PENDING 1 UNKNOWN_TOPIC_OR_PARTITION true false reloads=0"})
	claim(func(r Row) Outcome { return Outcome{ID: r.ID, Delivered: true} })
	check("delivered", map[int]string{
		1: "DELIVERED 2 - true true reloads=0",
		2: "DELIVERED 2 - true true reloads=0",
		3: "DELIVERED 1 - true true reloads=0",
	})
	if _, err := pool.Exec(ctx, "UPDATE notification_outbox SET status = 'PENDING', retry_count = 0 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	check("a runbook's reset", map[int]string{2: "PENDING 0 - true true reloads=1"})
}
