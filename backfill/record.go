package backfill

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// recordEvery is how often a running backfill updates its row.
const recordEvery = time.Second

// The backfill's row in Config.RecordTable (%s): its start, its progress
// and its end. The row names the backfill's session, by which a reader
// tells a running backfill from one that died.
const (
	recordStart = `INSERT INTO %s (table_name, run_id, predicate, state, backend_pid, application_name, rows_published, rows_selected, last_key, started_at, updated_at)
VALUES ($1, $2, $3, 'running', pg_backend_pid(), current_setting('application_name'), 0, $4, NULLIF($5, ''), now(), now())
ON CONFLICT (table_name) DO UPDATE SET run_id = excluded.run_id, predicate = excluded.predicate, state = excluded.state,
	backend_pid = excluded.backend_pid, application_name = excluded.application_name, rows_published = 0,
	rows_selected = excluded.rows_selected, last_key = excluded.last_key, started_at = excluded.started_at, updated_at = excluded.updated_at`
	recordProgress = `UPDATE %s SET state = $3, rows_published = $4, last_key = NULLIF($5, ''), updated_at = now() WHERE table_name = $1 AND run_id = $2`
)

// The states of a backfill's row.
const (
	StateRunning = "running"
	StateDone    = "done"
	StateStopped = "stopped"
	StateFailed  = "failed"
)

// rowKeeper keeps the backfill's row up to date, at most every
// recordEvery, on the backfill's connection. A table that is missing (a
// database migrated by an earlier version) or that the role may not write
// is said once in the log, and the backfill goes on without its row.
type rowKeeper struct {
	conn    *pgx.Conn
	table   string // quoted; empty for none
	name    string // the outbox table, schema.table
	runID   string
	last    time.Time
	problem func(msg string, err error)
}

// writeTimeout bounds each write of the row: it is made apart from the
// backfill's context, so that a stop is recorded, and must not hold the
// backfill up when the server is slow.
const writeTimeout = 5 * time.Second

// start writes the row of a backfill that starts.
func (k *rowKeeper) start(ctx context.Context, where string, total int64, after string) {
	k.exec(ctx, replaceTable(recordStart, k.table), k.name, k.runID, where, total, after)
	k.last = time.Now()
}

// progress updates the row with p, if recordEvery has passed since the
// last write.
func (k *rowKeeper) progress(ctx context.Context, p Progress) {
	if time.Since(k.last) < recordEvery {
		return
	}
	k.last = time.Now()
	k.exec(ctx, replaceTable(recordProgress, k.table), k.name, k.runID, StateRunning, p.Rows, p.LastKey)
}

// end writes the backfill's last state, even when ctx has ended: the stop
// is what it records.
func (k *rowKeeper) end(ctx context.Context, state string, p Progress) {
	k.exec(ctx, replaceTable(recordProgress, k.table), k.name, k.runID, state, p.Rows, p.LastKey)
}

// exec runs one write of the row, apart from ctx's end (within
// writeTimeout). A missing table or privilege is said once and stops the
// writes; another failure is said, and the next write tries again.
func (k *rowKeeper) exec(ctx context.Context, sql string, args ...any) {
	if k.table == "" || k.conn.IsClosed() {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_, err := k.conn.Exec(wctx, sql, args...)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		k.problem("the table of backfills does not exist (run `cdc-relay migrate` of this version): `cdc-relay status` will not show this backfill", err)
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		k.problem("the role may not write the table of backfills (see `cdc-relay migrate --print-grants`): `cdc-relay status` will not show this backfill", err)
	default:
		k.problem("could not write the backfill's row: `cdc-relay status` may show it behind", err)
		return
	}
	k.table = ""
}

// replaceTable puts table in sql's one %s.
func replaceTable(sql, table string) string {
	return strings.Replace(sql, "%s", table, 1)
}
