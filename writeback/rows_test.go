package writeback

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestRowsWriteEachOutcome writes each later outcome of a parked event to
// its row, in the caller's transaction, with the columns the table names:
// delivered with its time (in UTC for a timestamp without time zone),
// failed with the reason, the attempts and the next attempt, dead with its
// own value.
func TestRowsWriteEachOutcome(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TABLE app_outbox (id bigint PRIMARY KEY, status varchar(20) NOT NULL DEFAULT 'PENDING',
		sent_at timestamp, last_error varchar(12), retry_count smallint NOT NULL DEFAULT 0, next_attempt_at timestamptz)`)
	exec(t, ctx, pool, `INSERT INTO app_outbox (id) VALUES (1), (2), (3)`)
	rows, err := NewRows([]Table{{Name: "app_outbox", IDColumn: "id", Columns: Columns{StatusColumn: "status",
		Delivered: "SENT", Failed: "FAILED", Dead: "DEAD_LETTERED", DeliveredAtColumn: "sent_at", ErrorColumn: "last_error",
		AttemptsColumn: "retry_count", NextAttemptColumn: "next_attempt_at"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL TimeZone = 'Pacific/Honolulu'"); err != nil {
			return err
		}
		for _, w := range []struct {
			table, id string
			o         outboxrow.Outcome
		}{
			{"public.app_outbox", "1", outboxrow.Outcome{State: outboxrow.Delivered, Attempts: 2}},
			{"public.app_outbox", "2", outboxrow.Outcome{State: outboxrow.Failed, Reason: "UNKNOWN_TOPIC_OR_PARTITION: no such topic", Attempts: 1, NextAttempt: next}},
			{"public.app_outbox", "3", outboxrow.Outcome{State: outboxrow.Dead, Reason: "invalid topic", Attempts: -1}},
			{"public.app_outbox", "4", outboxrow.Outcome{State: outboxrow.Delivered}}, // no such row
			{"public.other", "1", outboxrow.Outcome{State: outboxrow.Dead}},           // a table that does not write back
		} {
			if err := rows.Write(ctx, tx, w.table, w.id, w.o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	r, _ := pool.Query(ctx, `SELECT id || ' ' || status || ' ' || coalesce(last_error, '-') || ' ' || retry_count || ' ' ||
		coalesce(to_char(next_attempt_at AT TIME ZONE 'UTC', 'HH24:MI'), '-') || ' ' ||
		coalesce((abs(extract(epoch FROM sent_at - (now() AT TIME ZONE 'UTC'))) < 60)::text, '-') FROM app_outbox ORDER BY id`)
	got, err = pgx.CollectRows(r, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 SENT - 2 - true", "2 FAILED UNKNOWN_TOPI 1 12:00 -", "3 DEAD_LETTERED invalid topi 0 - -"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRowsRefusedRowKeepsTheTransaction: a row that a trigger refuses, or
// a column that does not exist, is logged and counted, and the caller's
// transaction goes on and commits.
func TestRowsRefusedRowKeepsTheTransaction(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "a", "b")
	exec(t, ctx, pool, `CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id = 'a' THEN RAISE EXCEPTION 'row a is frozen'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER frozen BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION frozen()`)
	exec(t, ctx, pool, `CREATE TABLE marks (n int)`)
	broken := table
	broken.Name = "outbox_broken"
	exec(t, ctx, pool, `CREATE TABLE outbox_broken (id text PRIMARY KEY, status text)`)
	exec(t, ctx, pool, `INSERT INTO outbox_broken VALUES ('a', 'PENDING')`)
	log := &syncbuf.Buffer{}
	rows, err := NewRows([]Table{table, broken}, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, w := range []struct{ table, id string }{{"public.outbox", "a"}, {"public.outbox", "b"}, {"public.outbox_broken", "a"}} {
			if err := rows.Write(ctx, tx, w.table, w.id, outboxrow.Outcome{State: outboxrow.Delivered}); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO marks VALUES (1)")
		return err
	})
	if err != nil {
		t.Fatalf("the transaction failed: %v", err)
	}
	if got := states(t, ctx, pool, "outbox", "status", "error"); got["a"] != "PENDING" || got["b"] != "DELIVERED" {
		t.Fatalf("rows %v, want a refused and b delivered", got)
	}
	if n := scalar[int](t, ctx, pool, "SELECT count(*) FROM marks"); n != 1 || rows.Refused() != 2 {
		t.Fatalf("%d marks committed, %d refused; want 1 and 2", n, rows.Refused())
	}
	for _, want := range []string{"write-back refused row", "id=a", "row a is frozen", "P0001", "has no column", "add the column"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestRowsReturnsWhatIsNotTheRows: a lock timeout (or a deadlock, a lost
// connection) is the transaction's, not the row's: Write returns it, so
// that the caller rolls back and tries again, and counts nothing.
func TestRowsReturnsWhatIsNotTheRows(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	table := outboxTable(t, ctx, pool, "outbox", "a")
	exec(t, ctx, pool, `CREATE FUNCTION busy() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'busy' USING ERRCODE = 'lock_not_available'; END $$;
		CREATE TRIGGER busy BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION busy()`)
	rows, err := NewRows([]Table{table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return rows.Write(ctx, tx, "public.outbox", "a", outboxrow.Outcome{State: outboxrow.Delivered})
	})
	if err == nil || !strings.Contains(err.Error(), "55P03") || rows.Refused() != 0 {
		t.Fatalf("Write: %v, %d refused; want the lock timeout returned, nothing refused", err, rows.Refused())
	}
}
