package writeback

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// Rows writes what becomes of parked events to their outbox rows, one row
// at a time (Write) or a set at once (WriteMany), inside the caller's
// transaction: the status table's, so that
// the row and the status table change together, and the later of two
// outcomes is the one the row keeps. It is safe for concurrent use.
//
// The statement for a table t with id column id and status column status
// is, with the columns the table's Columns name and the outcome uses:
//
//	UPDATE t SET status = $2::text::<status type>, error = $3::text::<error type>,
//	    attempts = $4::bigint, next_attempt = $5::timestamptz
//	WHERE id = $1::text::<id type>
//
// Each runs in a savepoint. A row the statement refuses (a trigger, a
// constraint, a missing column or privilege: see rowLevel) is logged at
// error level with its id and the fix, counted, and left as it was: Write
// returns nil, and the caller's transaction goes on. Any other error (a
// lock timeout, a deadlock, a lost connection, ctx ended) is returned, for
// the caller to roll back and try again.
type Rows struct {
	tables  map[string]*rowTable // by schema.name, as Table.Name
	log     *slog.Logger
	refused atomic.Int64
}

// rowTable is one table of Rows, with its column types once looked up.
type rowTable struct {
	Table
	quoted string
	mu     sync.Mutex
	types  map[string]columnType // nil until looked up (again, after a refusal)
}

// NewRows returns a Rows for tables, checked as New checks Config.Tables,
// logging to log (nil discards). It does no I/O.
func NewRows(tables []Table, log *slog.Logger) (*Rows, error) {
	cfg := Config{Tables: append([]Table(nil), tables...)}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Rows{tables: make(map[string]*rowTable, len(tables)), log: log}
	for _, t := range cfg.Tables {
		r.tables[t.Schema+"."+t.Name] = &rowTable{Table: t, quoted: pgx.Identifier{t.Schema, t.Name}.Sanitize()}
	}
	return r, nil
}

// Writes reports whether the table named sourceTable (schema.name, as the
// status table records it) writes back.
func (r *Rows) Writes(sourceTable string) bool { return r != nil && r.tables[sourceTable] != nil }

// Resets reports whether the table named sourceTable writes back and
// lists pending values: a runbook may reset its rows (its reset trigger
// fires), also while the relay is trying their events.
func (r *Rows) Resets(sourceTable string) bool {
	return r.Writes(sourceTable) && len(r.tables[sourceTable].Columns.Pending) > 0
}

// Lock locks the rows of sourceTable whose ids are ids, in tx, as an
// UPDATE of them would (FOR NO KEY UPDATE, in the id's order): it waits
// for a transaction that changed one of them and has not ended, a
// runbook's reset in flight, so that what that transaction did (its
// reload row) is visible to tx's next statements. It runs in a savepoint:
// a table that refuses it (a column gone, a privilege missing: what Write
// logs as refused, for each row) is left unlocked, and Lock returns nil,
// so that the caller's transaction goes on; any other error (a lock
// timeout, a lost connection, ctx ended) is returned. A table that does
// not write back, or no id, is left alone.
func (r *Rows) Lock(ctx context.Context, tx pgdb.Tx, sourceTable string, ids []string) error {
	if !r.Writes(sourceTable) || len(ids) == 0 {
		return nil
	}
	t := r.tables[sourceTable]
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op
	types, err := t.lookup(ctx, sp)
	if err == nil {
		id := pgx.Identifier{t.IDColumn}.Sanitize()
		_, err = sp.Exec(ctx, "SELECT 1 FROM "+t.quoted+" WHERE "+id+" = ANY($1::text[]::"+types[t.IDColumn].full+"[]) ORDER BY "+id+" FOR NO KEY UPDATE", ids)
	}
	if err == nil {
		return sp.Commit(ctx)
	}
	if _, refused := classify(err); ctx.Err() == nil && refused {
		t.forget()
		r.log.Debug("write-back: could not lock rows to wait for a reset in flight; going on without", "table", t.quoted, "err", err)
		return nil
	}
	return fmt.Errorf("lock rows of %s: %w", t.quoted, err)
}

// Refused is the number of rows that refused their outcome since NewRows.
func (r *Rows) Refused() int64 {
	if r == nil {
		return 0
	}
	return r.refused.Load()
}

// Write makes the row with id of sourceTable say o, in tx. A table that
// does not write back, or an empty id, is left alone. See Rows for what it
// does when the row refuses.
func (r *Rows) Write(ctx context.Context, tx pgdb.Tx, sourceTable, id string, o outboxrow.Outcome) error {
	if r == nil || id == "" {
		return nil
	}
	t := r.tables[sourceTable]
	if t == nil {
		return nil
	}
	err := r.write(ctx, tx, t, id, o)
	if err == nil {
		return nil
	}
	cause, refused := classify(err)
	if ctx.Err() != nil || !refused && !rowLevel(err) {
		return err // the transaction's fault, not the row's: the caller tries it again
	}
	if refused {
		t.forget() // look the columns up again next time
	}
	r.refused.Add(1)
	r.log.Error("write-back refused row: it keeps its old status; the status table has the event's outcome",
		"table", t.quoted, "id", id, "cause", cause, "err", err, "fix", t.fix(err, refused))
	return nil
}

func (r *Rows) write(ctx context.Context, tx pgdb.Tx, t *rowTable, id string, o outboxrow.Outcome) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op
	types, err := t.lookup(ctx, sp)
	if err != nil {
		return err
	}
	sql, args := t.statement(types, id, o)
	if _, err := sp.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("update %s: %w", t.quoted, err)
	}
	return sp.Commit(ctx)
}

// lookup returns t's column types, looking them up in db the first time.
func (t *rowTable) lookup(ctx context.Context, db DB) (map[string]columnType, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.types == nil {
		types, err := lookupTypes(ctx, db, &t.Table, t.quoted)
		if err != nil {
			return nil, err
		}
		t.types = types
	}
	return t.types, nil
}

func (t *rowTable) forget() {
	t.mu.Lock()
	t.types = nil
	t.mu.Unlock()
}

// fix says what to do about a row that refused its outcome.
func (t *rowTable) fix(err error, refused bool) string {
	if refused {
		ts := tableState{Table: t.Table, quoted: t.quoted}
		return ts.hint(err)
	}
	return "a trigger or constraint of the table refuses the row's new status: fix the row, or the rule, and set the row's status by hand"
}

// statement is the UPDATE that makes the row with id say o, and its
// arguments.
func (t *rowTable) statement(types map[string]columnType, id string, o outboxrow.Outcome) (string, []any) {
	c := &t.Columns
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	args := []any{id}
	arg := func(v any, cast string) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)) + "::" + cast
	}
	status := map[outboxrow.State]string{outboxrow.Delivered: c.Delivered, outboxrow.Failed: c.RetryingValue(), outboxrow.Dead: c.DeadValue()}[o.State]
	set := []string{q(c.StatusColumn) + " = " + arg(status, "text") + "::" + types[c.StatusColumn].bare}
	if o.State == outboxrow.Delivered && c.DeliveredAtColumn != "" {
		set = append(set, q(c.DeliveredAtColumn)+" = "+t.now(types[c.DeliveredAtColumn].noZone))
	}
	if o.Attempted && c.LastAttemptColumn != "" {
		set = append(set, q(c.LastAttemptColumn)+" = "+t.now(types[c.LastAttemptColumn].noZone))
	}
	switch {
	case o.State != outboxrow.Delivered && c.ErrorColumn != "" && o.Reason != "":
		set = append(set, q(c.ErrorColumn)+" = "+arg(cleanReason(o.Reason), "text")+"::"+types[c.ErrorColumn].full)
	case o.State == outboxrow.Delivered && clearError(c, types) != "":
		set = append(set, clearError(c, types))
	}
	if c.AttemptsColumn != "" && o.Attempts >= 0 {
		set = append(set, q(c.AttemptsColumn)+" = "+arg(int64(o.Attempts), "bigint"))
	}
	if c.NextAttemptColumn != "" && o.State == outboxrow.Failed && !o.NextAttempt.IsZero() {
		at := t.inZone(arg(o.NextAttempt, "timestamptz"), types[c.NextAttemptColumn].noZone)
		set = append(set, q(c.NextAttemptColumn)+" = "+at)
	}
	update := "UPDATE " + t.quoted + " SET " + strings.Join(set, ", ")
	where := " WHERE " + q(t.IDColumn) + " = $1::text::" + types[t.IDColumn].full
	if o.State == outboxrow.Failed && c.RetryingIsPending() {
		// The retrying value is a pending one: the reset trigger would
		// take this write for a runbook's reset, were it not marked as the
		// relay's own (ownWriteMark).
		return ownWriteMark + update + " FROM cdc_relay_own_write" + strings.Replace(where, " WHERE ", " WHERE "+t.quoted+".", 1), args
	}
	return update + where, args
}

// ownWriteMark begins a statement that marks its transaction as the
// relay's own write-back: it sets migrations.OwnWriteSetting to on, for
// the rest of the transaction, before the statement changes a row (the
// statement reads the CTE in its FROM), so that the reset trigger, which
// reads the setting, leaves the relay's writes of a pending value alone.
const ownWriteMark = "WITH cdc_relay_own_write(cdc_relay_mark) AS (SELECT pg_catalog.set_config('" + migrations.OwnWriteSetting + "', 'on', true)) "
