package retention

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// pg is the package's PostgreSQL: every test's database is a copy of one
// with the relay's tables and the default outbox table.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{
	Template: func(ctx context.Context, conn *pgx.Conn) error {
		_, err := migrations.Apply(ctx, conn, migrations.DefaultConfig())
		return err
	},
})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// startDB makes a database of the test's own on the package's cluster,
// with the relay's tables and the default outbox table, and returns a
// pool on it. The pool's sessions run in a time zone far from UTC, so a
// comparison that depended on the session's time zone would fail the
// tests.
func startDB(t testing.TB) (context.Context, *pgxpool.Pool) {
	t.Helper()
	db := pg.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	cfg, err := pgxpool.ParseConfig(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "Pacific/Honolulu" // UTC-10
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return ctx, pool
}

// options are the Options for the default tables with cfg.
func options(cfg Config) Options {
	return Options{OutboxSchema: "public", OutboxTable: "outbox", TimestampColumn: "created_at",
		StatusSchema: "public", StatusTable: "outbox_delivery", IDColumn: "id", SourceTable: "public.outbox", Config: cfg}
}

func exec(t testing.TB, ctx context.Context, db DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t testing.TB, ctx context.Context, db DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// insertOutbox inserts n default-layout outbox rows created age ago.
func insertOutbox(t testing.TB, ctx context.Context, db DB, n int, age time.Duration) {
	t.Helper()
	exec(t, ctx, db, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT 'order', i::text, 'OrderPlaced', jsonb_build_object('seq', i), now() - $2::interval
		FROM generate_series(1, $1) AS i`, n, age)
}

// insertStatus inserts n status rows in state st, last updated age ago.
func insertStatus(t testing.TB, ctx context.Context, db DB, st string, n int, age time.Duration) {
	t.Helper()
	exec(t, ctx, db, `INSERT INTO outbox_delivery (topic, last_error, status, updated_at)
		SELECT 't', 'test', $2, now() - $3::interval FROM generate_series(1, $1)`, n, st, age)
}

// quiet is a Config with only the given retentions and a logger that
// writes to the test's log.
func quiet(t *testing.T, outbox, status time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Outbox, cfg.Status = outbox, status
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	return cfg
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestOutboxRetentionByTimestampType(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	tests := []struct {
		name, typ string
		// value is the column's SQL value for a row age ago ($1, an
		// interval).
		value string
		unit  decoder.TimestampUnit
	}{
		{"timestamptz", "timestamptz", "now() - $1::interval", ""},
		{"timestamp in UTC", "timestamp", "(now() AT TIME ZONE 'UTC') - $1::interval", ""},
		{"bigint epoch milliseconds", "bigint", "(extract(epoch FROM now() - $1::interval) * 1000)::bigint", ""},
		// Unit unset: judged by the newest value (read as milliseconds, every
		// row was older than the retention).
		{"bigint epoch seconds, judged", "bigint", "extract(epoch FROM now() - $1::interval)::bigint", ""},
		{"bigint epoch seconds, given", "bigint", "extract(epoch FROM now() - $1::interval)::bigint", decoder.UnitSeconds},
		{"bigint epoch microseconds, judged", "bigint", "(extract(epoch FROM now() - $1::interval) * 1000000)::bigint", ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := "events_" + string(rune('a'+i))
			// A column name that needs quoting.
			exec(t, ctx, pool, `CREATE TABLE `+table+` (id bigserial PRIMARY KEY, "Occurred At" `+tc.typ+`)`)
			insert := func(age string, n int) {
				exec(t, ctx, pool, `INSERT INTO `+table+` ("Occurred At") SELECT `+tc.value+` FROM generate_series(1, $2)`, age, n)
			}
			insert("3 days", 4)     // old
			insert("61 minutes", 3) // old
			insert("59 minutes", 5) // kept; 10 hours off if read in the session's time zone
			insert("0 seconds", 6)  // kept
			exec(t, ctx, pool, `INSERT INTO `+table+` ("Occurred At") VALUES (NULL)`)

			c := New(pool, Options{OutboxSchema: "public", OutboxTable: table, TimestampColumn: "Occurred At", TimestampUnit: tc.unit,
				StatusSchema: "public", StatusTable: "outbox_delivery", Config: quiet(t, time.Hour, 0)})
			res, err := c.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.OutboxRows != 7 || res.StatusRows != 0 {
				t.Fatalf("deleted %d outbox and %d status rows, want 7 and 0", res.OutboxRows, res.StatusRows)
			}
			if res.Statements != 1 || res.Longest <= 0 || res.Elapsed < res.Longest {
				t.Fatalf("result %+v: want 1 statement with its duration", res)
			}
			if n := count(t, ctx, pool, `SELECT count(*) FROM `+table); n != 12 {
				t.Fatalf("%d rows left, want 12 (11 new, 1 NULL)", n)
			}
			if n := count(t, ctx, pool, `SELECT count(*) FROM `+table+` WHERE "Occurred At" < `+tc.value, "60 minutes"); n != 0 {
				t.Fatalf("%d rows older than the retention left", n)
			}
			// Nothing more to delete.
			if res, err = c.RunOnce(ctx); err != nil || res.OutboxRows != 0 {
				t.Fatalf("second cleanup: %+v, %v", res, err)
			}
		})
	}
}

func TestStatusRetentionNeverDeletesFailed(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	for _, st := range []string{"FAILED", "DELIVERED", "DEAD"} {
		insertStatus(t, ctx, pool, st, 3, 400*24*time.Hour) // old
		insertStatus(t, ctx, pool, st, 2, 2*time.Hour)      // old
		insertStatus(t, ctx, pool, st, 4, 30*time.Minute)   // kept
	}
	insertOutbox(t, ctx, pool, 5, 400*24*time.Hour) // kept: outbox retention is off

	res, err := New(pool, options(quiet(t, 0, time.Hour))).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusRows != 10 || res.OutboxRows != 0 {
		t.Fatalf("deleted %d status and %d outbox rows, want 10 and 0", res.StatusRows, res.OutboxRows)
	}
	left := map[string]int64{}
	rows, _ := pool.Query(ctx, `SELECT status, count(*) FROM outbox_delivery GROUP BY status`)
	var st string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error { left[st] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := (map[string]int64{"FAILED": 9, "DELIVERED": 4, "DEAD": 4}); len(left) != 3 ||
		left["FAILED"] != want["FAILED"] || left["DELIVERED"] != want["DELIVERED"] || left["DEAD"] != want["DEAD"] {
		t.Fatalf("rows left by status: %v, want %v", left, want)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox_delivery WHERE status <> 'FAILED' AND updated_at < now() - interval '1 hour'`); n != 0 {
		t.Fatalf("%d old DELIVERED or DEAD rows left", n)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != 5 {
		t.Fatalf("%d outbox rows left, want 5", n)
	}
}

func TestBatchRows(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 25, 2*time.Hour)
	insertOutbox(t, ctx, pool, 3, 0)
	insertStatus(t, ctx, pool, "DELIVERED", 20, 2*time.Hour)
	insertStatus(t, ctx, pool, "FAILED", 20, 2*time.Hour)

	cfg := quiet(t, time.Hour, time.Hour)
	cfg.BatchRows = 10
	res, err := New(pool, options(cfg)).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Outbox: 10, 10, 5. Status: 10, 10, 0.
	if res.OutboxRows != 25 || res.StatusRows != 20 || res.Statements != 6 {
		t.Fatalf("result %+v: want 25 outbox rows, 20 status rows, 6 statements", res)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != 3 {
		t.Fatalf("%d outbox rows left, want 3", n)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox_delivery`); n != 20 {
		t.Fatalf("%d status rows left, want the 20 FAILED ones", n)
	}
}

// TestBatchStatementsUseTheIndex checks the plans: with an index on the
// timestamp column, a batch reads the index, never the whole table.
func TestBatchStatementsUseTheIndex(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t) // migrate creates the outbox with its index
	insertOutbox(t, ctx, pool, 20000, 0)
	insertStatus(t, ctx, pool, "FAILED", 20000, 0)
	insertStatus(t, ctx, pool, "DELIVERED", 20000, 0)
	exec(t, ctx, pool, `ANALYZE outbox, outbox_delivery`)

	c := New(pool, options(quiet(t, time.Hour, time.Hour)))
	outboxSQL, outboxArgs, err := c.outboxStatement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(-time.Hour)
	for name, st := range map[string]struct {
		sql  string
		args []any
	}{
		"outbox": {outboxSQL, outboxArgs(cutoff, 10000)},
		"status": {batchDelete(c.status, statusWhere(c.status, false, false)), []any{cutoff, 10000}},
	} {
		var plan strings.Builder
		rows, _ := pool.Query(ctx, "EXPLAIN "+st.sql, st.args...)
		var line string
		if _, err := pgx.ForEachRow(rows, []any{&line}, func() error { plan.WriteString(line + "\n"); return nil }); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", name, plan.String())
		if !strings.Contains(plan.String(), "Index") || strings.Contains(plan.String(), "Seq Scan") {
			t.Errorf("%s: the batch does not read the timestamp index:\n%s", name, plan.String())
		}
		if !strings.Contains(plan.String(), "Tid Scan") {
			t.Errorf("%s: the delete does not go by ctid:\n%s", name, plan.String())
		}
	}
}

func TestLogsAMissingIndexOnce(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	exec(t, ctx, pool, `DROP INDEX outbox_created_at_idx`) // a table of the user's own
	for _, index := range []bool{false, true} {
		if index {
			exec(t, ctx, pool, `CREATE INDEX ON outbox (created_at)`)
		}
		var log bytes.Buffer
		cfg := quiet(t, time.Hour, 0)
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c := New(pool, options(cfg))
		for i := 0; i < 2; i++ {
			if _, err := c.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		want := 1
		if index {
			want = 0
		}
		if n := strings.Count(log.String(), "has no index"); n != want {
			t.Fatalf("index %v: %d lines about the missing index, want %d:\n%s", index, n, want, log.String())
		}
		if !index && !strings.Contains(log.String(), `CREATE INDEX CONCURRENTLY ON \"public\".\"outbox\" (\"created_at\")`) {
			t.Fatalf("the line does not say what to run:\n%s", log.String())
		}
	}
}

func TestZeroRetentionDisables(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 5, 400*24*time.Hour)
	insertStatus(t, ctx, pool, "DELIVERED", 5, 400*24*time.Hour)
	for _, tc := range []struct {
		name           string
		outbox, status time.Duration
		// wantOutbox and wantStatus are the rows left afterwards.
		wantOutbox, wantStatus int64
	}{
		{"both zero", 0, 0, 5, 5},
		{"outbox zero", 0, time.Hour, 5, 0},
		{"status zero", time.Hour, 0, 0, 0},
	} {
		res, err := New(pool, options(quiet(t, tc.outbox, tc.status))).RunOnce(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.name == "both zero" && res.Statements != 0 {
			t.Fatalf("%s: %d statements, want none", tc.name, res.Statements)
		}
		if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != tc.wantOutbox {
			t.Fatalf("%s: %d outbox rows left, want %d", tc.name, n, tc.wantOutbox)
		}
		if n := count(t, ctx, pool, `SELECT count(*) FROM outbox_delivery`); n != tc.wantStatus {
			t.Fatalf("%s: %d status rows left, want %d", tc.name, n, tc.wantStatus)
		}
	}
}

func TestMissingTimestampColumnDisablesOutboxRetention(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	for _, column := range []string{"occurred_at", ""} {
		insertOutbox(t, ctx, pool, 5, 400*24*time.Hour)
		insertStatus(t, ctx, pool, "DEAD", 5, 400*24*time.Hour)
		var log bytes.Buffer
		cfg := DefaultConfig()
		cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		opts := options(cfg)
		opts.TimestampColumn = column
		c := New(pool, opts)
		for i := 0; i < 3; i++ {
			res, err := c.RunOnce(ctx)
			if err != nil {
				t.Fatalf("column %q: cleanup %d: %v", column, i, err)
			}
			if res.OutboxRows != 0 {
				t.Fatalf("column %q: deleted %d outbox rows", column, res.OutboxRows)
			}
		}
		// Status retention goes on.
		if n := count(t, ctx, pool, `SELECT count(*) FROM outbox_delivery`); n != 0 {
			t.Fatalf("column %q: %d old DEAD rows left", column, n)
		}
		if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != 5 {
			t.Fatalf("column %q: %d outbox rows left, want 5", column, n)
		}
		t.Logf("column %q: %s", column, log.String())
		if got := strings.Count(log.String(), "outbox retention disabled"); got != 1 {
			t.Fatalf("column %q: logged %d times, want once:\n%s", column, got, log.String())
		}
		if !strings.Contains(log.String(), "--timestamp-column") || (column != "" && !strings.Contains(log.String(), column)) {
			t.Fatalf("column %q: the log line does not say which column and which flag:\n%s", column, log.String())
		}
		exec(t, ctx, pool, `TRUNCATE outbox`)
	}
}

func TestUnsupportedTimestampTypeDisablesOutboxRetention(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TABLE events (id bigserial PRIMARY KEY, at text)`)
	exec(t, ctx, pool, `INSERT INTO events (at) VALUES ('2000-01-01')`)
	var log bytes.Buffer
	cfg := quiet(t, time.Hour, 0)
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	c := New(pool, Options{OutboxSchema: "public", OutboxTable: "events", TimestampColumn: "at",
		StatusSchema: "public", StatusTable: "outbox_delivery", Config: cfg})
	if res, err := c.RunOnce(ctx); err != nil || res.Statements != 0 {
		t.Fatalf("cleanup: %+v, %v", res, err)
	}
	if !strings.Contains(log.String(), "has type text") {
		t.Fatalf("the log does not name the type:\n%s", log.String())
	}
}

func TestMissingTableIsAnError(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	opts := options(quiet(t, time.Hour, 0))
	opts.OutboxTable = "no_such_table"
	_, err := New(pool, opts).RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), `"public"."no_such_table"`) {
		t.Fatalf("err = %v, want one naming the table", err)
	}
}

func TestStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 100, 2*time.Hour)
	cfg := quiet(t, time.Hour, time.Hour)
	cfg.BatchRows = 10
	c := New(pool, options(cfg))
	done, cancel := context.WithCancel(ctx)
	cancel()
	res, err := c.RunOnce(done)
	if !errors.Is(err, context.Canceled) || res.Statements != 0 {
		t.Fatalf("cleanup after the end: %+v, %v; want context.Canceled and no statement", res, err)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != 100 {
		t.Fatalf("%d outbox rows left, want 100", n)
	}
}

func TestCancelStopsABlockedStatement(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 10, 2*time.Hour)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	exec(t, ctx, tx, `LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE`)

	runCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	res, err := New(pool, options(quiet(t, time.Hour, time.Hour))).RunOnce(runCtx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Fatalf("RunOnce returned %v after its context ended", took)
	}
	if res.Statements != 1 || res.StatusRows != 0 {
		t.Fatalf("result %+v: want the one cancelled statement, and no status cleanup after it", res)
	}
}

func TestRunLogsEachCleanupThatDeletes(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 30, 2*time.Hour)
	insertStatus(t, ctx, pool, "DELIVERED", 3, 2*time.Hour)
	var log syncbuf.Buffer
	cfg := DefaultConfig()
	cfg.Outbox, cfg.Status, cfg.Interval = time.Hour, time.Hour, 20*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	runCtx, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		New(pool, options(cfg)).Run(runCtx)
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s; log:\n%s", what, log.String())
			}
		}
	}
	waitFor("first cleanup", func() bool { return strings.Count(log.String(), "old rows deleted") == 1 })
	if !strings.Contains(log.String(), "outbox_rows=30 status_rows=3") {
		t.Fatalf("log line does not count the rows:\n%s", log.String())
	}
	// Idle cleanups log nothing; the next one that deletes logs again.
	time.Sleep(100 * time.Millisecond)
	if n := strings.Count(log.String(), "old rows deleted"); n != 1 {
		t.Fatalf("%d lines for one cleanup that deleted:\n%s", n, log.String())
	}
	insertOutbox(t, ctx, pool, 2, 2*time.Hour)
	waitFor("second cleanup", func() bool { return strings.Count(log.String(), "old rows deleted") == 2 })

	// An error is logged, and Run goes on.
	exec(t, ctx, pool, `ALTER TABLE outbox_delivery RENAME TO outbox_delivery_away`)
	waitFor("error logged", func() bool { return strings.Contains(log.String(), "retention cleanup failed") })
	exec(t, ctx, pool, `ALTER TABLE outbox_delivery_away RENAME TO outbox_delivery`)
	insertOutbox(t, ctx, pool, 1, 2*time.Hour)
	waitFor("cleanup after the error", func() bool { return strings.Count(log.String(), "old rows deleted") == 3 })

	stop()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	t.Log(log.String())
}

// TestOldOutboxRowsDeletedInBatches deletes 25,500 old outbox rows in
// batches of 1,000, on the default outbox table as `migrate` creates it
// (no index on created_at) and with the recommended index: 26 statements
// (one that ignored the batch size would delete them all in the first and
// stop at the second), the new rows and the status table untouched; then,
// in the steady state, the 500 rows that aged past the retention among
// 25,000 new ones, and no other. How long the statements take is
// BenchmarkMillionOldOutboxRows's claim.
func TestOldOutboxRowsDeletedInBatches(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	const rows, batch = 25500, 1000
	insertStatus(t, ctx, pool, "DELIVERED", 100, 400*24*time.Hour) // kept: status retention is off
	for _, index := range []bool{false, true} {
		name := "no index on created_at"
		if index {
			name = "index on created_at"
		}
		t.Run(name, func(t *testing.T) {
			oldOutboxRows(t, ctx, pool, index, rows)
			cfg := quiet(t, DefaultConfig().Outbox, 0)
			cfg.BatchRows = batch
			res, err := New(pool, options(cfg)).RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.OutboxRows != rows || res.StatusRows != 0 {
				t.Fatalf("deleted %d outbox and %d status rows, want %d and 0", res.OutboxRows, res.StatusRows, rows)
			}
			if want := rows/batch + 1; res.Statements != want {
				t.Fatalf("%d statements, want %d: at most %d rows each", res.Statements, want, batch)
			}
			if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != 1000 {
				t.Fatalf("%d outbox rows left, want the 1,000 new ones", n)
			}
			if n := count(t, ctx, pool, `SELECT count(*) FROM outbox WHERE created_at < now() - interval '1 day'`); n != 0 {
				t.Fatalf("%d old outbox rows left", n)
			}

			// The steady state: a large table of new rows, and the few
			// that aged past the retention since the last cleanup.
			insertOutbox(t, ctx, pool, rows-500, 0)
			insertOutbox(t, ctx, pool, 500, 30*24*time.Hour)
			exec(t, ctx, pool, `ANALYZE outbox`)
			if res, err = New(pool, options(cfg)).RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if res.OutboxRows != 500 || res.Statements != 1 {
				t.Fatalf("steady state: %+v, want 500 rows deleted by 1 statement", res)
			}
			if n := count(t, ctx, pool, `SELECT count(*) FROM outbox`); n != rows-500+1000 {
				t.Fatalf("steady state: %d outbox rows left, want %d", n, rows-500+1000)
			}
		})
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox_delivery`); n != 100 {
		t.Fatalf("%d status rows left, want 100", n)
	}
}

// oldOutboxRows empties the outbox table, gives it the index on
// created_at or not, and fills it with rows created 30 days ago and 1,000
// new ones.
func oldOutboxRows(t testing.TB, ctx context.Context, pool *pgxpool.Pool, index bool, rows int) {
	t.Helper()
	exec(t, ctx, pool, `TRUNCATE outbox`)
	exec(t, ctx, pool, `DROP INDEX IF EXISTS outbox_created_at_idx`)
	if index {
		exec(t, ctx, pool, `CREATE INDEX outbox_created_at_idx ON outbox (created_at)`)
	}
	insertOutbox(t, ctx, pool, rows, 30*24*time.Hour)
	insertOutbox(t, ctx, pool, 1000, 0)
	exec(t, ctx, pool, `VACUUM ANALYZE outbox`)
}

// BenchmarkMillionOldOutboxRows times the cleanup of 1,000,000 old outbox
// rows with the default configuration (batches of 10,000), without and
// with the index on created_at: ns/op is the whole cleanup, longest-ms
// its slowest statement (the claim: well under a second on a quiet
// machine), and steady-longest-ms the slowest statement of the next
// cleanup, of 5,000 old rows among 1,000,000 new ones (a read of the
// table at worst, never row by row). Run it alone:
//
//	go test -run '^$' -bench MillionOldOutboxRows -benchtime 1x ./retention/
func BenchmarkMillionOldOutboxRows(b *testing.B) {
	ctx, pool := startDB(b)
	const rows = 1000000
	for _, index := range []bool{false, true} {
		name := "no_index"
		if index {
			name = "index"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Status = 0 // count the outbox's statements only
			cfg.Logger = slog.New(slog.NewTextHandler(testWriter{b}, nil))
			var longest, steadyLongest time.Duration
			statements := 0
			b.StopTimer()
			for range b.N {
				oldOutboxRows(b, ctx, pool, index, rows)
				b.StartTimer()
				res, err := New(pool, options(cfg)).RunOnce(ctx)
				b.StopTimer()
				if err != nil || res.OutboxRows != rows {
					b.Fatalf("cleanup: %+v, %v; want %d rows deleted", res, err, rows)
				}
				longest, statements = max(longest, res.Longest), res.Statements
				insertOutbox(b, ctx, pool, rows, 0)
				insertOutbox(b, ctx, pool, 5000, 30*24*time.Hour)
				exec(b, ctx, pool, `VACUUM ANALYZE outbox`)
				if res, err = New(pool, options(cfg)).RunOnce(ctx); err != nil || res.OutboxRows != 5000 {
					b.Fatalf("steady state: %+v, %v; want 5,000 rows deleted", res, err)
				}
				steadyLongest = max(steadyLongest, res.Longest)
			}
			b.ReportMetric(float64(longest.Microseconds())/1000, "longest-ms")
			b.ReportMetric(float64(statements), "statements")
			b.ReportMetric(float64(steadyLongest.Microseconds())/1000, "steady-longest-ms")
		})
	}
}

// TestPartitionedOutbox: in a partitioned outbox a ctid names a row in
// each partition; a batch deletes old rows only, never the new rows of
// another partition that share their ctids.
func TestPartitionedOutbox(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TABLE p_outbox (id bigserial, created_at timestamptz NOT NULL) PARTITION BY RANGE (created_at)`)
	exec(t, ctx, pool, `CREATE TABLE p_outbox_2020 PARTITION OF p_outbox FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')`)
	exec(t, ctx, pool, `CREATE TABLE p_outbox_default PARTITION OF p_outbox DEFAULT`)
	// The same ctids, (0,1) to (0,5), in both partitions.
	exec(t, ctx, pool, `INSERT INTO p_outbox (created_at) SELECT now() FROM generate_series(1, 5)`)
	exec(t, ctx, pool, `INSERT INTO p_outbox (created_at) SELECT '2020-06-01'::timestamptz + i * interval '1 day' FROM generate_series(1, 5) AS i`)
	exec(t, ctx, pool, `INSERT INTO p_outbox (created_at) SELECT now() - interval '2 hours' FROM generate_series(1, 3)`) // old, default partition

	cfg := quiet(t, time.Hour, 0)
	cfg.BatchRows = 2
	res, err := New(pool, Options{OutboxSchema: "public", OutboxTable: "p_outbox", TimestampColumn: "created_at",
		StatusSchema: "public", StatusTable: "outbox_delivery", Config: cfg}).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM p_outbox WHERE created_at > now() - interval '1 hour'`); n != 5 {
		t.Fatalf("%d of 5 new rows left (result %+v)", n, res)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM p_outbox`); n != 5 || res.OutboxRows != 8 {
		t.Fatalf("%d rows left, %d deleted; want the 5 new ones left and 8 deleted", n, res.OutboxRows)
	}
}

// TestRetentionKeepsHeldRows: old WAITING and PAUSED rows are never
// deleted, nor an old DEAD row that held rows (FAILED, WAITING or PAUSED,
// reload ones too) of its topic and key follow, or of its topic when
// ordering by topic (or its topic is among TopicOrdered); an old DEAD row
// with nothing held behind it (another key, another topic, a NULL key,
// only earlier rows), or one an operator skipped, is.
func TestRetentionKeepsHeldRows(t *testing.T) {
	t.Parallel()
	byKey := []string{"waiting", "paused", "dead before waiting", "waiting behind dead", "dead before paused", "paused behind dead", "dead reload",
		"waiting behind a reload", "dead before failed", "failed behind dead", "waiting behind skipped", "waiting of another key"}
	byTopic := []string{"waiting", "paused", "dead before waiting", "waiting behind dead", "dead before paused", "paused behind dead",
		"dead after waiting", "dead without a key", "dead reload", "waiting behind a reload", "dead before failed", "failed behind dead",
		"waiting behind skipped", "dead, nothing of its key after", "waiting of another key"}
	for _, tc := range []struct {
		name         string
		byTopic      bool
		topicOrdered []string
		want         []string
	}{
		{"by key", false, nil, append(slices.Clone(byKey), "waiting of t, another key")},
		{"by topic", true, nil, append(slices.Clone(byTopic), "dead of t", "waiting of t, another key")},
		{"o by topic, t by key", false, []string{"o"}, append(slices.Clone(byTopic), "waiting of t, another key")},
		{"t by topic, o by key", false, []string{"t", "x"}, append(slices.Clone(byKey), "dead of t", "waiting of t, another key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, pool := startDB(t)
			insertHeldRows(t, ctx, pool)
			cfg := quiet(t, 0, time.Hour)
			cfg.ByTopic, cfg.TopicOrdered = tc.byTopic, tc.topicOrdered
			if _, err := New(pool, options(cfg)).RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			rows, _ := pool.Query(ctx, `SELECT event_id FROM outbox_delivery ORDER BY id`)
			left, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || !slices.Equal(left, tc.want) {
				t.Fatalf("rows left %v, %v; want %v", left, err, tc.want)
			}
		})
	}
}

// insertHeldRows inserts the status rows of TestRetentionKeepsHeldRows,
// all two days old.
func insertHeldRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	old := time.Now().Add(-48 * time.Hour)
	for _, r := range []struct {
		name, topic, key, status string
		reload, skipped          bool
	}{
		{"waiting", "o", "w", "WAITING", false, false},
		{"paused", "o", "p", "PAUSED", false, false},
		{"dead before waiting", "o", "k", "DEAD", false, false},
		{"waiting behind dead", "o", "k", "WAITING", false, false},
		{"dead before paused", "o", "q", "DEAD", false, false},
		{"paused behind dead", "o", "q", "PAUSED", false, false},
		{"dead after waiting", "o", "w", "DEAD", false, false},
		{"dead, other topic's waiting", "other", "k", "DEAD", false, false},
		{"dead without a key", "o", "", "DEAD", false, false},
		{"dead reload", "o", "r", "DEAD", true, false},
		{"waiting behind a reload", "o", "r", "WAITING", false, false},
		{"delivered", "o", "k", "DELIVERED", false, false},
		{"dead before failed", "o", "f", "DEAD", false, false},
		{"failed behind dead", "o", "f", "FAILED", false, false},
		{"skipped dead", "o", "s", "DEAD", false, true},
		{"waiting behind skipped", "o", "s", "WAITING", false, false},
		{"dead, nothing of its key after", "o", "z", "DEAD", false, false},
		{"waiting of another key", "o", "y", "WAITING", false, false},
		{"dead of t", "t", "a", "DEAD", false, false},
		{"waiting of t, another key", "t", "b", "WAITING", false, false},
	} {
		var key any
		if r.key != "" {
			key = []byte(r.key)
		}
		var skipped any
		if r.skipped {
			skipped = old
		}
		exec(t, ctx, pool, `INSERT INTO outbox_delivery (event_id, topic, record_key, last_error, status, reload, updated_at, skipped_at) VALUES ($1, $2, $3, 'x', $4, $5, $6, $7)`,
			r.name, r.topic, key, r.status, r.reload, old, skipped)
	}
}

// TestOutboxRetentionKeepsRowsStillToSend: an old outbox row whose event
// the poller is still to send (an adopted row: FAILED with reload; a
// WAITING or PAUSED one) is kept, whatever its age; one whose status row
// is DELIVERED or DEAD, names another table, or that has none, goes.
func TestOutboxRetentionKeepsRowsStillToSend(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 7, 48*time.Hour)
	for _, r := range []struct {
		id         int
		source, st string
		reload     bool
	}{
		{1, "public.outbox", "FAILED", true}, // adopted
		{2, "public.outbox", "WAITING", false},
		{3, "public.outbox", "PAUSED", false},
		{4, "public.outbox", "DELIVERED", true},
		{5, "public.outbox", "DEAD", true},
		{6, "public.other", "FAILED", true},
	} {
		exec(t, ctx, pool, `INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)
			SELECT id::text, $2, '', $3, $4, 'x' FROM outbox WHERE payload->>'seq' = $1`,
			strconv.Itoa(r.id), r.source, r.st, r.reload)
	}
	res, err := New(pool, options(quiet(t, time.Hour, 0))).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT (payload->>'seq')::int FROM outbox ORDER BY 1`)
	left, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if want := []int32{1, 2, 3}; err != nil || !slices.Equal(left, want) || res.OutboxRows != 4 {
		t.Fatalf("outbox rows left %v (%v), %d deleted; want %v, 4 deleted", left, err, res.OutboxRows, want)
	}
}

// TestOutboxRetentionCostWithRowsStillToSend measures a cleanup of
// 100,000 old outbox rows beside 100,000 status rows, half of them
// adopted rows still to send: each batch probes the status table's index
// once a row, and reads no other table.
func TestOutboxRetentionCostWithRowsStillToSend(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 rows")
	}
	ctx, pool := startDB(t)
	insertOutbox(t, ctx, pool, 100000, 48*time.Hour)
	exec(t, ctx, pool, `INSERT INTO outbox_delivery (event_id, source_table, topic, status, reload, last_error)
		SELECT id::text, 'public.outbox', '', CASE WHEN (payload->>'seq')::int % 2 = 0 THEN 'FAILED' ELSE 'DELIVERED' END, true, 'x'
		FROM outbox`)
	exec(t, ctx, pool, `ANALYZE outbox, outbox_delivery`)
	c := New(pool, options(quiet(t, time.Hour, 0)))
	sql, args, err := c.outboxStatement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, _ := pool.Query(ctx, "EXPLAIN "+sql, args(time.Now().Add(-time.Hour), 10000)...)
	var line string
	if _, err := pgx.ForEachRow(rows, []any{&line}, func() error { plan.WriteString(line + "\n"); return nil }); err != nil {
		t.Fatal(err)
	}
	res, err := c.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %d of 100,000 rows in %d statements, %v (longest %v)\n%s", res.OutboxRows, res.Statements, res.Elapsed, res.Longest, plan.String())
	if res.OutboxRows != 50000 {
		t.Errorf("deleted %d rows, want 50,000 (the other half are still to send)", res.OutboxRows)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM outbox WHERE (payload->>'seq')::int % 2 = 0`); n != 50000 {
		t.Errorf("%d rows still to send left, want 50,000", n)
	}
}

// TestOutboxRetentionRefusesMixedUnits: a bigint timestamp column of
// milliseconds with one row of microseconds is not judged microseconds by
// its newest value (which would delete every row): its oldest and newest
// disagree, so outbox retention is disabled, saying so, and deletes
// nothing.
func TestOutboxRetentionRefusesMixedUnits(t *testing.T) {
	t.Parallel()
	ctx, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TABLE events (id bigserial PRIMARY KEY, at bigint)`)
	exec(t, ctx, pool, `INSERT INTO events (at) VALUES ((extract(epoch FROM now() - interval '3 days') * 1000)::bigint),
		((extract(epoch FROM now()) * 1000)::bigint), ((extract(epoch FROM now()) * 1000000)::bigint)`)
	var log bytes.Buffer
	cfg := quiet(t, time.Hour, 0)
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	c := New(pool, Options{OutboxSchema: "public", OutboxTable: "events", TimestampColumn: "at",
		StatusSchema: "public", StatusTable: "outbox_delivery", Config: cfg})
	if res, err := c.RunOnce(ctx); err != nil || res.OutboxRows != 0 {
		t.Fatalf("cleanup: %+v, %v; want nothing deleted", res, err)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM events`); n != 3 {
		t.Fatalf("%d rows left, want 3", n)
	}
	if !strings.Contains(log.String(), "oldest") || !strings.Contains(log.String(), "timestamp_unit") {
		t.Fatalf("the log does not say the oldest and newest values disagree:\n%s", log.String())
	}
}
