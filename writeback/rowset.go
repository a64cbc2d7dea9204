package writeback

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// WriteMany makes each row of sourceTable say its outcome, in tx, as Write
// one after another would, in fewer statements: the delivered outcomes
// (each of an id named once in outs) are written with one UPDATE … FROM
// unnest in one savepoint; the others, and a delivered outcome of an id
// named twice, with Write, in the order of outs. When the set's statement
// is refused for a row's sake (a trigger, a constraint: see rowLevel) or
// for the table's (a missing column or privilege), the set is written row
// by row with Write instead, so that exactly the refusing rows keep their
// old status, each logged and counted as Write does. Any other error is
// returned, for the caller to roll back and try again. A table that does
// not write back is left alone.
func (r *Rows) WriteMany(ctx context.Context, tx pgdb.Tx, sourceTable string, outs []outboxrow.RowOutcome) error {
	if r == nil || r.tables[sourceTable] == nil {
		return nil
	}
	t := r.tables[sourceTable]
	named := make(map[string]int, len(outs))
	for _, o := range outs {
		named[o.ID]++
	}
	var set, rest []outboxrow.RowOutcome
	for _, o := range outs {
		if o.ID != "" && o.O.State == outboxrow.Delivered && named[o.ID] == 1 && (o.O.Attempts >= 0 || t.Columns.AttemptsColumn == "") &&
			(o.O.Attempted || t.Columns.LastAttemptColumn == "") {
			set = append(set, o)
		} else {
			rest = append(rest, o)
		}
	}
	if len(set) == 1 {
		set, rest = nil, outs // one row: the row's own statement
	}
	if len(set) > 0 {
		if err := r.writeSet(ctx, tx, t, set); err != nil {
			cause, refused := classify(err)
			if ctx.Err() != nil || !refused && !rowLevel(err) {
				return err // the transaction's fault, not a row's
			}
			r.log.Debug("write-back: the set's statement was refused; writing its rows one by one", "table", t.quoted, "rows", len(set), "cause", cause, "err", err)
			if refused {
				t.forget()
			}
			rest = outs // in their order, each in its savepoint
		}
	}
	for _, o := range rest {
		if err := r.Write(ctx, tx, sourceTable, o.ID, o.O); err != nil {
			return err
		}
	}
	return nil
}

// writeSet writes the delivered outcomes set (ids each named once) to t's
// rows with one statement, in a savepoint of tx.
func (r *Rows) writeSet(ctx context.Context, tx pgdb.Tx, t *rowTable, set []outboxrow.RowOutcome) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op
	types, err := t.lookup(ctx, sp)
	if err != nil {
		return err
	}
	ids := make([]string, len(set))
	attempts := make([]int64, len(set))
	for i, o := range set {
		ids[i], attempts[i] = o.ID, int64(o.O.Attempts)
	}
	if _, err := sp.Exec(ctx, t.deliveredMany(types), ids, t.Columns.Delivered, attempts); err != nil {
		return fmt.Errorf("update %s: %w", t.quoted, err)
	}
	return sp.Commit(ctx)
}

// deliveredMany is the UPDATE that makes the rows whose ids are $1 (text[])
// say delivered ($2), each with its attempts ($3, bigint[], in the order
// of $1), as statement does one row.
func (t *rowTable) deliveredMany(types map[string]columnType) string {
	c := &t.Columns
	q := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	set := t.deliveredSet(types)
	if c.AttemptsColumn != "" {
		set += ", " + q(c.AttemptsColumn) + " = cdc_relay_set.attempts"
	}
	return "UPDATE " + t.quoted + " AS cdc_relay_row SET " + set +
		" FROM unnest($1::text[], $3::bigint[]) AS cdc_relay_set(id, attempts)" +
		" WHERE cdc_relay_row." + q(t.IDColumn) + " = cdc_relay_set.id::" + types[t.IDColumn].full
}
