package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TxStarter is what [TryWriteBack] needs of a connection: *pgx.Conn or a
// pool.
type TxStarter interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// WriteBackTrial is what [TryWriteBack] found of one table.
type WriteBackTrial struct {
	// Problems are the write-back values the table refused, each naming
	// the table, the status column and the key of the value.
	Problems []Problem
	// Accepted lists the values the table took, as `delivered "SENT"`.
	Accepted []string
	// Untried says why the values were not all tried ("" when they were):
	// the table has no row, the role may not read it, or its row stayed
	// locked.
	Untried string
}

// The trial's bounds: it waits at most trialLockTimeout for a row another
// transaction holds, and gives up any statement after
// trialStatementTimeout.
const (
	trialLockTimeout      = 2 * time.Second
	trialStatementTimeout = 10 * time.Second
)

// trialReason is the reason the trial writes into the error column.
const trialReason = "check-config: a sample reason"

// TryWriteBack tries each of t's write-back values on one row of its
// table, as the relay would write them, so that the table's own CHECK
// constraints (deferred ones too), domains and triggers say whether they
// take them: delivered with delivered_at_column; failed with error_column,
// attempts_column and next_attempt_column; dead (when set) with
// error_column and attempts_column. Each value is tried in a savepoint of
// its own, rolled back at once, in a read-write transaction that is always
// rolled back: nothing it wrote is ever committed. Triggers run, and what
// they do in the database is rolled back with it (what a trigger does
// outside it, such as a sequence's nextval or a dblink call, is not). A
// row another transaction holds is waited for at most 2 s, and any
// statement at most 10 s.
//
// Unlike every other check of this package, it writes: only `cdc-relay
// check-config` calls it, never `run`'s start-up check. Call it for a table
// [CheckTable] found fit (its columns exist, with their types); t without
// write_back is not tried. A table with no row is not tried either
// (Untried says so). The error is for a database that could not be asked.
func TryWriteBack(ctx context.Context, db TxStarter, t outbox.Table) (WriteBackTrial, error) {
	var res WriteBackTrial
	wb := t.WriteBack
	if wb == nil {
		return res, nil
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadWrite})
	if err != nil {
		return res, fmt.Errorf("try the write-back values on %s: %w", t.Name(), err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	m := t.Mapping
	ident := pgx.Identifier{m.Schema, m.Table}.Sanitize()
	for _, set := range []string{
		fmt.Sprintf("SET LOCAL lock_timeout = %d", trialLockTimeout.Milliseconds()),
		fmt.Sprintf("SET LOCAL statement_timeout = %d", trialStatementTimeout.Milliseconds()),
		"SET CONSTRAINTS ALL IMMEDIATE",
	} {
		if _, err := tx.Exec(ctx, set); err != nil {
			return res, fmt.Errorf("try the write-back values on %s: %s: %w", t.Name(), set, err)
		}
	}
	cols, err := tableColumns(ctx, tx, ident)
	if err != nil {
		return res, fmt.Errorf("read the columns of %s: %w", t.Name(), err)
	}
	var row trialRow
	if err := tx.QueryRow(ctx, "SELECT tableoid, ctid FROM "+ident+" LIMIT 1").Scan(&row.table, &row.ctid); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			res.Untried = "the table has no row to try them on"
			return res, nil
		}
		if why := untried(ctx, err); why != "" {
			res.Untried = why
			return res, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			res.Untried = "this role may not read the table"
			return res, nil
		}
		return res, fmt.Errorf("find a row of %s to try the write-back values on: %w", t.Name(), err)
	}
	for _, o := range trialOutcomes(wb, columnsByName(cols)) {
		stop, err := tryOutcome(ctx, tx, ident, t, wb, row, o, &res)
		if err != nil || stop {
			return res, err
		}
	}
	return res, nil
}

// trialRow is the row the values are tried on: its partition's OID (the
// table's, when it is not partitioned) and its physical place there.
type trialRow struct {
	table uint32
	ctid  pgtype.TID
}

// trialOutcome is one outcome the relay writes: the status value, the key
// that sets it, and the other columns it sets, as "column = expression"
// where $4 is the reason.
type trialOutcome struct {
	statusValue
	sets   []string
	reason bool // sets uses $4
}

// trialOutcomes are the outcomes the relay writes for wb, each with the
// columns it sets beside the status and sample values for them: delivered
// with now() and no error; the retrying value with a reason, 1 attempt
// and the next in a minute; the dead value (when it is not the retrying
// one) with a reason and 1 attempt; each with now() as its last attempt. cols gives
// the error column's type, which the reason is cast to as the relay casts
// it (a varchar(n) cuts it to fit).
func trialOutcomes(wb *writeback.Columns, cols map[string]column) []trialOutcome {
	set := func(col, expr string) string { return pgx.Identifier{col}.Sanitize() + " = " + expr }
	delivered := trialOutcome{statusValue: statusValue{"delivered", wb.Delivered}}
	if wb.DeliveredAtColumn != "" {
		delivered.sets = append(delivered.sets, set(wb.DeliveredAtColumn, "now()"))
	}
	if c := cols[wb.ErrorColumn]; wb.ErrorColumn != "" && !wb.KeepError {
		// As write-back clears it: NULL, '' in a NOT NULL column of a
		// text type (a domain over one too), left alone in a NOT NULL enum.
		switch {
		case !c.notNull:
			delivered.sets = append(delivered.sets, set(wb.ErrorColumn, "NULL"))
		case c.base == oidText || c.base == oidVarchar || c.base == oidBpchar:
			delivered.sets = append(delivered.sets, set(wb.ErrorColumn, "''"))
		}
	}
	if wb.LastAttemptColumn != "" {
		delivered.sets = append(delivered.sets, set(wb.LastAttemptColumn, "now()"))
	}
	failed := func(key, value string, next bool) trialOutcome {
		o := trialOutcome{statusValue: statusValue{key, value}}
		if wb.LastAttemptColumn != "" {
			o.sets = append(o.sets, set(wb.LastAttemptColumn, "now()"))
		}
		if wb.ErrorColumn != "" {
			o.sets, o.reason = append(o.sets, set(wb.ErrorColumn, "CAST($4::text AS "+cols[wb.ErrorColumn].typ+")")), true
		}
		if wb.AttemptsColumn != "" {
			o.sets = append(o.sets, set(wb.AttemptsColumn, "1"))
		}
		if next && wb.NextAttemptColumn != "" {
			o.sets = append(o.sets, set(wb.NextAttemptColumn, "now() + interval '1 minute'"))
		}
		return o
	}
	retrying := "failed"
	if wb.Retrying != "" {
		retrying = "retrying"
	}
	out := []trialOutcome{delivered, failed(retrying, wb.RetryingValue(), true)}
	if wb.RetryScheduled() {
		dead := "dead"
		if wb.Dead == "" {
			dead = "failed"
		}
		out = append(out, failed(dead, wb.DeadValue(), false))
	}
	return out
}

// tryOutcome writes o to the row in a savepoint it rolls back, and records
// in res what the table said. stop is set when no further value can be
// tried (the row is locked, gone, or the role may not update the table).
func tryOutcome(ctx context.Context, tx pgx.Tx, ident string, t outbox.Table, wb *writeback.Columns, row trialRow, o trialOutcome, res *WriteBackTrial) (stop bool, err error) {
	sql := "UPDATE " + ident + " SET " + strings.Join(append([]string{pgx.Identifier{wb.StatusColumn}.Sanitize() + " = $1"}, o.sets...), ", ") +
		" WHERE ctid = $2 AND tableoid = $3"
	args := []any{o.value, row.ctid, row.table}
	if o.reason {
		args = append(args, trialReason)
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return true, fmt.Errorf("try the write-back values on %s: %w", t.Name(), err)
	}
	if slices.Contains(wb.Pending, o.value) {
		// The relay's own write of a pending value (its retrying value)
		// is marked so, and the reset trigger leaves it alone.
		if _, err := sp.Exec(ctx, "SELECT pg_catalog.set_config($1, 'on', true)", migrations.OwnWriteSetting); err != nil {
			_ = sp.Rollback(ctx)
			return true, fmt.Errorf("try the write-back values on %s: %w", t.Name(), err)
		}
	}
	tag, uerr := sp.Exec(ctx, sql, args...)
	if err := sp.Rollback(ctx); err != nil {
		return true, fmt.Errorf("try the write-back values on %s: roll back: %w", t.Name(), errors.Join(uerr, err))
	}
	named := fmt.Sprintf("%s %q", o.key, o.value)
	switch {
	case uerr == nil && tag.RowsAffected() == 1:
		res.Accepted = append(res.Accepted, named)
		return false, nil
	case uerr == nil:
		res.Untried = "the row they were tried on was deleted meanwhile"
		return true, nil
	}
	if why := untried(ctx, uerr); why != "" {
		res.Untried = why
		return true, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(uerr, &pgErr) {
		return true, fmt.Errorf("try write_back.%s on %s: %w", named, t.Name(), uerr)
	}
	p := Problem{Table: t.Name(), Column: wb.StatusColumn}
	if pgErr.Code == "42501" {
		p.Msg = fmt.Sprintf("write-back may not update the table: %v: GRANT UPDATE on the write-back columns TO the relay's role (`cdc-relay migrate --config FILE --print-grants ROLE` prints it)", uerr)
		res.Problems = append(res.Problems, p)
		return true, nil
	}
	p.Msg = fmt.Sprintf("the table refuses write_back.%s (tried on one row, rolled back): %v: change write_back.%s, or the table's constraint or trigger", named, uerr, o.key)
	res.Problems = append(res.Problems, p)
	return false, nil
}

// untried says why err means the values could not be tried, rather than
// that the table refused one: a row locked beyond the lock timeout, a
// statement beyond the statement timeout. "" for any other error, and
// once ctx is done (its cancellation is not the statement timeout).
func untried(ctx context.Context, err error) string {
	var pgErr *pgconn.PgError
	if ctx.Err() != nil || !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "55P03":
		return fmt.Sprintf("the row they were tried on stayed locked by another transaction for %s", trialLockTimeout)
	case "57014":
		return fmt.Sprintf("trying them took longer than %s", trialStatementTimeout)
	}
	return ""
}
