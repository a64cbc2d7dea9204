package writeback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// firstRetry is the wait after a first failed attempt; it doubles with
// each failure up to Writer.retryMax.
const firstRetry = 100 * time.Millisecond

// failed schedules t's next attempt after err, and logs err at most once
// per cause and table per minute.
func (f *flusher) failed(ctx context.Context, t *tableState, err error) {
	f.lastErr = err
	if ctx.Err() != nil {
		return // Run is stopping: not the database's fault
	}
	f.w.failures.Add(1)
	t.failing++
	cause, refused := classify(err)
	valueRefused := rowLevel(err) && !t.took // every row tried refused it: perhaps the value
	now := time.Now()
	wait := t.backoff
	if refused {
		wait = f.w.refusedRetry
		t.sql = nil // the table may have changed by the next attempt
		t.took = false
	} else {
		t.backoff = min(2*t.backoff, f.w.retryMax)
	}
	t.due = now.Add(wait)
	attrs := []any{"table", t.quoted, "cause", cause, "err", err, "pending", t.live, "failed_attempts", t.failing, "retry_in", wait}
	switch {
	case refused:
		f.failLog.Log(t.quoted+" "+cause, slog.LevelError,
			"write-back refused; the events are in Kafka, but their positions are confirmed only once their rows take their outcome: "+
				"the stream waits once the in-flight limits are reached, until this is fixed",
			append(attrs, "fix", t.hint(err))...)
	case valueRefused:
		f.failLog.Log(t.quoted+" "+cause, slog.LevelError,
			"write-back refused for every row tried; the events are in Kafka, but their positions are confirmed only once their rows take their outcome: "+
				"the stream waits once the in-flight limits are reached, until this is fixed",
			append(attrs, "fix", fmt.Sprintf("the table refuses the delivered value %q (a CHECK or trigger on the status column?): "+
				"`cdc-relay check-config --config FILE` tries it; change write_back.delivered, or the table's rule", t.Columns.Delivered))...)
	default:
		f.failLog.Log(t.quoted+" "+cause, slog.LevelWarn, "write-back failed; retrying", attrs...)
	}
}

// classify names err's cause for the log (its SQLSTATE, or what failed)
// and says whether retrying soon cannot help: SQLSTATE class 42 (a missing
// table, column or privilege) or 22 (a value the column does not accept),
// or a table or column the look-up did not find.
func classify(err error) (cause string, refused bool) {
	var pgErr *pgconn.PgError
	var se *schemaError
	switch {
	case errors.As(err, &pgErr):
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		return pgErr.Code, class == "42" || class == "22"
	case errors.As(err, &se):
		return "missing", true
	case errors.Is(err, errUnchanged):
		return "unchanged", false
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", false
	default:
		return "connection", false
	}
}

// hint says what to do about an error that retries will not fix.
func (t *tableState) hint(err error) string {
	var cols []string // the outcome's columns, the status column first
	for _, col := range t.columns()[1:] {
		cols = append(cols, pgx.Identifier{col}.Sanitize())
	}
	grant := fmt.Sprintf("GRANT SELECT (%s, %s), UPDATE (%s) ON %s TO <the relay's role>",
		pgx.Identifier{t.IDColumn}.Sanitize(), cols[0], strings.Join(cols, ", "), t.quoted)
	var pgErr *pgconn.PgError
	var se *schemaError
	switch {
	case errors.As(err, &se) && se.missing == nil, errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return "create the table, or take write_back off it in the config; if it exists, " + grant
	case errors.As(err, &se), errors.As(err, &pgErr) && pgErr.Code == "42703":
		return "add the column to the table, or correct write_back's column names in the config"
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		return grant
	default:
		return "check write_back in the config against the table: a status value the status column's type " +
			"does not accept, or a delivered-at column that is not a timestamp"
	}
}

// refuse gives up on the outcome held at i, which its row refused for
// what the row holds (a trigger, a constraint) while the table takes the
// same value for other rows: it logs the row's id at error level, at most
// once a minute per table and cause with the others counted, counts it,
// and lets the event's position be confirmed. The event is in Kafka (or
// parked); only its row keeps its old status.
func (f *flusher) refuse(t *tableState, i int, err error) {
	cause, _ := classify(err)
	f.w.refused.Add(1)
	f.refusedLog.Log(t.quoted+" "+cause, slog.LevelError,
		"write-back refused row: the table's trigger or constraint rejects its outcome; the event is delivered as usual, the row keeps its old status",
		"table", t.quoted, "id", t.held[i].id, "cause", cause, "err", err)
	f.forget(t, i)
}

// rowLevel reports whether err may be one row's fault rather than the
// table's, the server's or the connection's: an integrity constraint
// (SQLSTATE class 23: a CHECK, NOT NULL, a foreign key), a trigger's RAISE
// (P0), a view's check option (44), a data exception (22: a trigger's cast
// of the row's own data, or the value itself). Such a statement is
// searched row by row; a row is given up only once the table took the
// value for another. Everything else (a lock or statement timeout, a
// deadlock, a read-only or lost connection, a missing column) is retried
// for the whole batch, never given up row by row.
func rowLevel(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	switch pgErr.Code[:2] {
	case "23", "P0", "44", "22":
		return true
	}
	return false
}
