package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// OrderNone is Config.OrderColumn that checks no order.
const OrderNone = "none"

// columnType is the type of table's column col, as format_type names it;
// "" when the table has no such column.
const columnType = `SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped`

// singleKey is the primary key's one column, when it has one.
const singleKey = `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid = $1::regclass AND i.indisprimary AND i.indnatts = 1`

// resolveOrder finds the order column: Config.OrderColumn, else the
// primary key when it is one integer column (a bigserial, an identity),
// else none ("").
func (t *tableRows) resolveOrder(ctx context.Context) (string, string, error) {
	col := t.cfg.OrderColumn
	if col == OrderNone {
		return "", "", nil
	}
	if col == "" {
		err := t.conn.QueryRow(ctx, singleKey, t.table).Scan(&col)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", "", nil
		}
		if err != nil {
			return "", "", fmt.Errorf("look up the primary key of %s: %w", t.table, err)
		}
	}
	var typ string
	err := t.conn.QueryRow(ctx, columnType, t.table, col).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", fmt.Errorf("--order-column %s: %s has no such column", col, t.table)
	}
	if err != nil {
		return "", "", fmt.Errorf("look up the type of %s.%s: %w", t.table, col, err)
	}
	q := pgx.Identifier{col}.Sanitize()
	switch typ {
	case "smallint", "integer", "bigint":
		return col, q + "::bigint", nil
	case "timestamp with time zone", "timestamp without time zone":
		return col, "(extract(epoch FROM " + q + ") * 1000000)::bigint", nil
	}
	if t.cfg.OrderColumn == "" {
		return "", "", nil // a uuid or text primary key says nothing of commit order
	}
	return "", "", fmt.Errorf("--order-column %s is of type %s: give an integer column (a bigserial, an identity) or a timestamp the application sets in commit order, or --order-column none", col, typ)
}

// orderExpr is the order column's value as a bigint, or NULL, and sets
// t.order.
func (t *tableRows) orderExpr(ctx context.Context) (string, error) {
	col, expr, err := t.resolveOrder(ctx)
	if err != nil {
		return "", err
	}
	t.order = col
	if col == "" {
		return "NULL::bigint", nil
	}
	return expr, nil
}

// where is the range's WHERE clause (empty for the whole table) and its
// arguments: the timestamp column within [Since, Until), the id column
// within [FromID, ToID].
func (t *tableRows) where(ctx context.Context) (string, []any, error) {
	m := t.cfg.Mapping
	var conds []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	if !t.cfg.Since.IsZero() || !t.cfg.Until.IsZero() {
		ts, err := t.timeValue(ctx)
		if err != nil {
			return "", nil, err
		}
		if !t.cfg.Since.IsZero() {
			conds = append(conds, ts+" >= "+arg(t.cfg.Since.UTC().Format(time.RFC3339Nano))+"::timestamptz")
		}
		if !t.cfg.Until.IsZero() {
			conds = append(conds, ts+" < "+arg(t.cfg.Until.UTC().Format(time.RFC3339Nano))+"::timestamptz")
		}
	}
	id := pgx.Identifier{m.IDColumn}.Sanitize()
	if t.cfg.FromID != "" {
		conds = append(conds, id+" >= "+arg(t.cfg.FromID))
	}
	if t.cfg.ToID != "" {
		conds = append(conds, id+" <= "+arg(t.cfg.ToID))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	w := " WHERE " + conds[0]
	for _, c := range conds[1:] {
		w += " AND " + c
	}
	return w, args, nil
}

// timeValue is the timestamp column as a timestamptz, for --since and
// --until: a timestamp without time zone is read in the mapping's zone.
func (t *tableRows) timeValue(ctx context.Context) (string, error) {
	m := t.cfg.Mapping
	if m.TimestampColumn == "" {
		return "", errors.New("--since and --until need the table's timestamp column: set --timestamp-column (timestamp_column in the config file)")
	}
	var typ string
	if err := t.conn.QueryRow(ctx, columnType, t.table, m.TimestampColumn).Scan(&typ); err != nil {
		return "", fmt.Errorf("look up the type of %s.%s: %w", t.table, m.TimestampColumn, err)
	}
	q := pgx.Identifier{m.TimestampColumn}.Sanitize()
	switch typ {
	case "timestamp with time zone":
		return q, nil
	case "timestamp without time zone":
		zone := m.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		return "(" + q + " AT TIME ZONE " + pgdb.QuoteLiteral(zone) + ")", nil
	}
	return "", fmt.Errorf("--since and --until read the timestamp column %s, of type %s: they take a timestamp column only; select the rows by --from-id and --to-id instead", m.TimestampColumn, typ)
}
