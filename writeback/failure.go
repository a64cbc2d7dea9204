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
	now := time.Now()
	wait := t.backoff
	if refused {
		wait = f.w.refusedRetry
		t.sql = nil // the table may have changed by the next attempt
	} else {
		t.backoff = min(2*t.backoff, f.w.retryMax)
	}
	t.due = now.Add(wait)
	attrs := []any{"table", t.quoted, "cause", cause, "err", err, "pending", t.live, "failed_attempts", t.failing, "retry_in", wait}
	if refused {
		f.failLog.Log(t.quoted+" "+cause, slog.LevelError,
			"write-back refused; the events are in Kafka, but their rows keep their old status until this is fixed",
			append(attrs, "fix", t.hint(err))...)
	} else {
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
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", false
	default:
		return "connection", false
	}
}

// hint says what to do about an error that retries will not fix.
func (t *tableState) hint(err error) string {
	c := &t.Columns
	var cols []string
	for _, col := range []string{c.StatusColumn, c.DeliveredAtColumn, c.ErrorColumn} {
		if col != "" {
			cols = append(cols, pgx.Identifier{col}.Sanitize())
		}
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

// logDrops logs outcomes dropped since the last such line, at most once
// a minute; a flush that dropped more before the minute is over is
// counted in the summary.
func (f *flusher) logDrops() {
	d := f.w.dropped.Load()
	if d == f.seenDrops {
		return
	}
	f.seenDrops = d
	if f.drops.Log("dropped", slog.LevelWarn, "write-back dropped outcomes: more were waiting than it may hold; "+
		"their rows keep their old status (the events are in Kafka)",
		"dropped", d-f.loggedDrops, "dropped_total", d, "max_pending", f.w.cfg.MaxPending) {
		f.loggedDrops = d
	}
}
