package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// checkStatusValues returns a problem for each write-back value (delivered,
// failed, dead, each of pending) that does not fit t's status column, when
// t writes back and the table has the column (checkColumnTypes reports it
// missing).
func checkStatusValues(ctx context.Context, q pgdb.Querier, t outbox.Table, cols []column) ([]Problem, error) {
	wb := t.WriteBack
	if wb == nil {
		return nil, nil
	}
	c, ok := columnsByName(cols)[wb.StatusColumn]
	if !ok {
		return nil, nil
	}
	var problems []Problem
	for _, v := range statusValues(wb) {
		msg, err := statusValueFits(ctx, q, c, v.value)
		if err != nil {
			return nil, fmt.Errorf("read the values of %s.%s: %w", t.Name(), c.name, err)
		}
		if msg != "" {
			problems = append(problems, Problem{Table: t.Name(), Column: c.name,
				Msg: fmt.Sprintf("write_back.%s %q %s: change write_back.%s, or the column", v.key, v.value, msg, v.key)})
		}
	}
	return problems, nil
}

// statusValueFits says why a write-back value does not fit the status
// column c ("is not a value of enum type x (A, B)", "is longer than
// varchar(n)"), or "".
func statusValueFits(ctx context.Context, q pgdb.Querier, c column, value string) (string, error) {
	if c.enum {
		rows, err := q.Query(ctx, "SELECT enumlabel FROM pg_enum WHERE enumtypid = $1 ORDER BY enumsortorder", c.base)
		if err != nil {
			return "", err
		}
		labels, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", err
		}
		if !slices.Contains(labels, value) {
			return fmt.Sprintf("is not a value of the column's enum type %s (%s)", c.typ, strings.Join(labels, ", ")), nil
		}
		return "", nil
	}
	if c.maxLen > 0 && utf8.RuneCountInString(value) > c.maxLen {
		return fmt.Sprintf("is longer than the column's type %s allows", c.typ), nil
	}
	return "", nil
}

// statusValue is a write-back status value and the key that sets it.
type statusValue struct{ key, value string }

// statusValues are the status values write-back names, in the order of
// their keys: delivered, failed, retrying and dead (each when set), then
// each of pending.
func statusValues(wb *writeback.Columns) []statusValue {
	vs := []statusValue{{"delivered", wb.Delivered}}
	if wb.Failed != "" {
		vs = append(vs, statusValue{"failed", wb.Failed})
	}
	if wb.Retrying != "" {
		vs = append(vs, statusValue{"retrying", wb.Retrying})
	}
	if wb.Dead != "" {
		vs = append(vs, statusValue{"dead", wb.Dead})
	}
	for _, p := range wb.Pending {
		vs = append(vs, statusValue{"pending", p})
	}
	return vs
}
